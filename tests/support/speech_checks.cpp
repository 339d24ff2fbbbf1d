#include "support/speech_checks.h"

#include <gtest/gtest.h>

#include <cmath>

namespace chatterbox::test {

SynthesisOptions bounded_request(int max_new_tokens, uint64_t seed) {
    SynthesisOptions options;
    options.params.sampling.max_new_tokens = max_new_tokens;
    options.params.sampling.seed = seed;
    return options;
}

void expect_speech(const SynthesisResult &result) {
    ASSERT_GT(result.wave.size(), 0u);
    EXPECT_EQ(result.sample_rate, 24000);
    EXPECT_GT(result.speech_tokens, 0);
    EXPECT_LE(result.speech_tokens, result.t3_steps);
    double energy = 0;
    for (size_t i = 0; i < result.wave.size(); ++i) {
        ASSERT_TRUE(std::isfinite(result.wave[i])) << i;
        energy += double(result.wave[i]) * result.wave[i];
    }
    EXPECT_GT(energy, 0.0);
}

} // namespace chatterbox::test
