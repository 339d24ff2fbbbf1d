#pragma once
// Shared by the libFuzzer entry points of tests/fuzz: the project's readers take file paths, so
// each input is written to a scratch file first; a documented refusal (chatterbox::Error) is the
// expected outcome for most inputs, anything else escaping (std::exception from a library, a
// crash, a sanitizer report) is a finding.

#include "core/error.h"
#include "core/tensor.h"

#include <ggml.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

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

// ggml's gguf reader logs every refusal to stderr; at thousands of inputs a second that costs more
// than the parsing (the fuzzers judge by outcome, not by log).
inline void silence_ggml_log() {
    ggml_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
}

// Reads the first and last byte of every view a reader accepted: each must lie inside its mapping.
inline void touch_views(const std::vector<TensorView> &views) {
    volatile uint8_t sink = 0;
    for (const TensorView &t : views)
        if (t.nbytes)
            sink = sink + static_cast<const uint8_t *>(t.data)[0] + static_cast<const uint8_t *>(t.data)[t.nbytes - 1];
}

inline std::string_view as_text(const uint8_t *data, size_t size) {
    return {reinterpret_cast<const char *>(data), size};
}

} // namespace chatterbox::fuzz
