// libFuzzer: an audio file (any format libsndfile detects by content: wav, flac, ogg, opus, mp3 ...)
// through read_audio, the project's libsndfile wrapper, with its duration guard.
#include "audio/audio_file.h"
#include "fuzz_support.h"

#include <cmath>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace chatterbox;
    const std::string &path = fuzz::write_scratch(data, size, ".audio");
    audio::ReadOptions options;
    options.max_seconds = 30; // keeps each input quick; the guard is the same at any limit
    fuzz::expect_refusal_or_success([&] {
        const audio::AudioBuffer audio = audio::read_audio(path, options);
        // What it accepts is what it promises: samples, a rate, finite values, within the limit.
        if (audio.samples.empty() || audio.sample_rate <= 0 || audio.seconds() > options.max_seconds) std::abort();
        for (const float sample : audio.samples)
            if (!std::isfinite(sample)) std::abort();
    });
    return 0;
}
