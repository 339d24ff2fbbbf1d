#include "io/file_digest.h"

#include "core/error.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace chatterbox::io {

std::string file_sha256(const std::string &path) {
    struct FileCloser {
        void operator()(std::FILE *file) const { std::fclose(file); }
    };
    struct DigestFree {
        void operator()(EVP_MD_CTX *context) const { EVP_MD_CTX_free(context); }
    };
    std::unique_ptr<std::FILE, FileCloser> in(std::fopen(path.c_str(), "rb"));
    if (!in) fail("cannot read ", path, ": ", std::strerror(errno));
    std::unique_ptr<EVP_MD_CTX, DigestFree> context(EVP_MD_CTX_new());
    if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1)
        fail("cannot compute the SHA-256 of ", path, ": libcrypto refused to start a digest");
    std::vector<unsigned char> block(1 << 20);
    size_t got;
    while ((got = std::fread(block.data(), 1, block.size(), in.get())) > 0)
        if (EVP_DigestUpdate(context.get(), block.data(), got) != 1) fail("cannot compute the SHA-256 of ", path);
    if (std::ferror(in.get())) fail("cannot read ", path, ": ", std::strerror(errno));
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(context.get(), digest, &length) != 1) fail("cannot compute the SHA-256 of ", path);
    static const char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < length; ++i) out += {hex[digest[i] >> 4], hex[digest[i] & 15]};
    return out;
}

} // namespace chatterbox::io
