#pragma once
// Shared by the libFuzzer entry points of tests/fuzz: the project's readers take file paths, so
// each input is written to a scratch file first; a documented refusal (chatterbox::Error) is the
// expected outcome for most inputs, anything else escaping (std::exception from a library, a
// crash, a sanitizer report) is a finding.

#include "core/error.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace chatterbox::fuzz {

// The scratch file of this process (one extension per fuzzer), in /dev/shm when it exists so that
// no input touches the disk; removed at exit.
inline const std::string &write_scratch(const uint8_t *data, size_t size, const std::string &extension) {
    struct Scratch {
        std::string path;
        ~Scratch() { std::remove(path.c_str()); }
    };
    static const Scratch scratch{(access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") +
                                 std::string("/chatterbox-fuzz-") + std::to_string(getpid()) + extension};
    FILE *file = std::fopen(scratch.path.c_str(), "wb");
    if (!file || (size && std::fwrite(data, 1, size, file) != size) || std::fclose(file) != 0) {
        std::perror(scratch.path.c_str());
        std::abort();
    }
    return scratch.path;
}

// Runs `read`; a chatterbox::Error is a refusal and must say something.
template <class Read> void expect_refusal_or_success(Read &&read) {
    try {
        read();
    } catch (const Error &e) {
        if (std::string_view(e.what()).empty()) std::abort(); // a refusal that says nothing
    }
}

inline std::string_view as_text(const uint8_t *data, size_t size) {
    return {reinterpret_cast<const char *>(data), size};
}

} // namespace chatterbox::fuzz
