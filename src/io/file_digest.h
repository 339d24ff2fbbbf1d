#pragma once
// SHA-256 of a file (OpenSSL's libcrypto), as the model hub publishes it for every LFS file.

#include <string>

namespace chatterbox::io {

// Lower-case hex digest of the whole file; throws Error naming the file when it cannot be read.
std::string file_sha256(const std::string &path);

} // namespace chatterbox::io
