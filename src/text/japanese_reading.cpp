#include "text/japanese_reading.h"

#include "core/error.h"
#include "text/mtl_normalize.h"
#include "text/unicode.h"

extern "C" {
#include <libkakasi.h>
}

#include <dlfcn.h>
#include <iconv.h>
#include <utf8proc.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <vector>

namespace chatterbox::text {

namespace {

bool is_kanji(char32_t c) { return c >= 0x4E00 && c <= 0x9FFF; } // tokenizer.py is_kanji
// Hiragana, and the combining voiced / semi-voiced marks NFKD splits off them (べ = へ + U+3099).
bool is_hiragana(char32_t c) { return (c >= 0x3041 && c <= 0x3096) || c == 0x3099 || c == 0x309A; }

// NFC: the pipeline decomposed the text before this step; EUC-JP only has the composed kana.
std::string nfc(const std::string &text) {
    utf8proc_uint8_t *composed = utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t *>(text.c_str()));
    if (!composed) fail("NFC composition of Japanese text failed");
    std::string out(reinterpret_cast<const char *>(composed));
    std::free(composed);
    return out;
}

// iconv between UTF-8 and EUC-JP (KAKASI's encoding); nullopt when a character has no encoding.
std::optional<std::string> convert(const char *to, const char *from, const std::string &in) {
    iconv_t cd = iconv_open(to, from);
    if (cd == iconv_t(-1)) fail("iconv cannot convert ", from, " to ", to, " (needed for Japanese text)");
    std::string out(in.size() * 4 + 16, '\0');
    char *in_ptr = const_cast<char *>(in.data());
    size_t in_left = in.size();
    char *out_ptr = out.data();
    size_t out_left = out.size();
    const size_t rc = iconv(cd, &in_ptr, &in_left, &out_ptr, &out_left);
    iconv_close(cd);
    if (rc == size_t(-1)) return std::nullopt;
    out.resize(out.size() - out_left);
    return out;
}

// KAKASI keeps its options and dictionary in globals: one reader at a time.
std::mutex &kakasi_mutex() {
    static std::mutex m;
    return m;
}

// KAKASI (GPL-2+) is not linked but opened the first time Japanese text is read, so that the engine
// library and the programs of its C API carry no GPL library (CMakeLists.txt); only its header's
// declarations are compiled in. Debian's libkakasi2 installs it under this name (its soname).
constexpr const char *kKakasiLibrary = "libkakasi.so.2";

struct Kakasi {
    decltype(&kakasi_getopt_argv) getopt_argv;
    decltype(&kakasi_do) read;
    decltype(&kakasi_free) free;
};

template <class Function> Function kakasi_function(void *library, const char *name) {
    void *function = dlsym(library, name);
    if (!function) fail("Japanese text: ", kKakasiLibrary, " has no ", name);
    return reinterpret_cast<Function>(function);
}

// Opened once, kept for the process; the caller holds kakasi_mutex().
const Kakasi &kakasi() {
    static const Kakasi functions = [] {
        void *library = dlopen(kKakasiLibrary, RTLD_NOW | RTLD_LOCAL);
        if (!library)
            fail("Japanese text needs KAKASI, which could not be loaded (", dlerror(),
                 "): install the Debian packages libkakasi2 and kakasi-dic");
        return Kakasi{kakasi_function<decltype(&kakasi_getopt_argv)>(library, "kakasi_getopt_argv"),
                      kakasi_function<decltype(&kakasi_do)>(library, "kakasi_do"),
                      kakasi_function<decltype(&kakasi_free)>(library, "kakasi_free")};
    }();
    return functions;
}

// The hiragana reading of a kanji phrase, or nullopt when it cannot be encoded for KAKASI.
std::optional<std::string> kakasi_reading(const std::string &phrase) {
    const std::optional<std::string> euc = convert("EUC-JP", "UTF-8", nfc(phrase));
    if (!euc) return std::nullopt;
    std::lock_guard<std::mutex> lock(kakasi_mutex());
    const Kakasi &library = kakasi();
    static const bool ready = [&library] {
        // -JH: kanji to hiragana, the rest untouched; EUC-JP in and out.
        char program[] = "kakasi", kanji[] = "-JH", input[] = "-ieuc", output[] = "-oeuc";
        char *argv[] = {program, kanji, input, output, nullptr};
        return library.getopt_argv(4, argv) == 0;
    }();
    if (!ready) fail("KAKASI could not be set up (its dictionary kanwadict, Debian package kakasi-dic, is missing?)");
    std::string buffer = *euc;
    char *read = library.read(buffer.data());
    if (!read) fail("KAKASI failed to read \"", phrase, "\"");
    const std::string reading_euc(read);
    library.free(read);
    return convert("UTF-8", "EUC-JP", reading_euc);
}

} // namespace

std::string japanese_hiragana(std::string_view text) {
    std::vector<CodePoint> cps;
    for (size_t offset = 0; offset < text.size();) {
        cps.push_back(decode_utf8_at(text, offset, "Japanese text"));
        offset += cps.back().size;
    }
    std::string out;
    size_t offset = 0;
    for (size_t i = 0; i < cps.size();) {
        if (!is_kanji(cps[i].value)) {
            out.append(text.substr(offset, cps[i].size));
            offset += cps[i++].size;
            continue;
        }
        // A segment: kanji run, then the hiragana after it, up to a small っ. KAKASI (2.3.6) drops the
        // reading of a phrase that goes on past っ (登った -> た, 行って -> て) but reads it up to there
        // (登っ -> のぼっ); the hiragana after it are kept as they are, as KAKASI would.
        const size_t start = offset;
        while (i < cps.size() && is_kanji(cps[i].value)) offset += cps[i++].size;
        while (i < cps.size() && is_hiragana(cps[i].value)) {
            const bool sokuon = cps[i].value == 0x3063; // っ
            offset += cps[i++].size;
            if (sokuon) break;
        }
        const std::string phrase(text.substr(start, offset - start));
        const std::optional<std::string> reading = kakasi_reading(phrase);
        if (!reading) {
            out += phrase;
            continue;
        }
        if (reading->rfind("\u306F", 0) == 0 || reading->rfind("\u3078", 0) == 0) out.push_back(' '); // は, へ
        out += *reading;
    }
    return nfkd(out);
}

} // namespace chatterbox::text
