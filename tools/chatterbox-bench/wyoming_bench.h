#pragma once
// chatterbox-server's Wyoming side as Home Assistant drives it with an LLM's answer: the server
// in-process (one session) on a loopback port, a client that sends synthesize-start and then the
// text word by word, as an LLM writes it. Measured per repeat: the time from the chunk that
// completes the first sentence (the first word of the second: the sentence splitter calls a
// sentence complete once the next has begun) to the first audio-chunk; for comparison the same
// first sentence as one synthesize event, from sending it to its first audio-chunk; and the whole
// stream (to synthesize-stopped), its audio and the process's CPU time.

#include "core/backend.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace chatterbox::bench {

struct WyomingBenchArguments {
    std::string weights; // a model folder or GGUF
    int repeats = 3;
    int session_threads = 2; // CPU threads of the one session
    int max_new_tokens = 50; // T3 tokens per sentence (fixes the work with ignore_eos)
    bool ignore_eos = true;
    std::vector<std::string> sentences = {"The weather today is sunny and warm.",
                                          "Tomorrow brings light rain in the afternoon.",
                                          "Take an umbrella if you go out."};
};

// {"repeats", "sentence_to_first_audio_ms" {min, median, mean, max}, "synthesize_to_first_audio_ms"
// {...}, "stream_total_ms" {...}, "audio_s" (one stream), "cpu_s" (all repeats), "wall_s"}.
nlohmann::json run_wyoming_bench(const BackendOptions &backend, const WyomingBenchArguments &options);

} // namespace chatterbox::bench
