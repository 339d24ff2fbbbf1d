#pragma once
// The S3Gen flow's inputs as a golden set records them: the voice's reference (prompt tokens,
// prompt mel, x-vector) and the speech tokens handed to the flow.

#include "core/npy.h"
#include "models/chatterbox/s3gen/flow.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace chatterbox::test {

// How far flow_mel may be from the official (f32) one when the flow's products round to bf16
// (issue 44: within 2.5e-2 of f32; the f32 golden tolerance is 1e-3).
constexpr double kFlowMelBf16Bound = 2.5e-2;

struct GoldenFlowInputs {
    s3gen::FlowReference reference;
    std::vector<int32_t> tokens; // s3gen_input_tokens
};

// path(name) gives the file of a golden array (golden_path or turbo_golden_path).
template <class PathOf> GoldenFlowInputs read_golden_flow_inputs(PathOf path) {
    GoldenFlowInputs in;
    in.reference.prompt_tokens = read_token_ids(path("s3gen_prompt_tokens.npy"));
    in.reference.prompt_mel = read_npy(path("s3gen_prompt_feat.npy")).f32();
    in.reference.xvector = read_npy(path("campplus_xvector.npy")).f32();
    in.tokens = read_token_ids(path("s3gen_input_tokens.npy"));
    return in;
}

// Seeded generation without a prompt (short, so quick): the same seed gives the same mel, another
// seed another; every value finite; 2 frames per token.
inline void expect_seeded_mel_is_deterministic(s3gen::FlowSession &session, const std::vector<int32_t> &tokens,
                                               const std::vector<float> &xvector) {
    s3gen::FlowReference voice;
    voice.xvector = xvector;
    std::mt19937_64 rng_a(42), rng_b(42), rng_c(43);
    const s3gen::Mel a = session.generate(tokens, voice, rng_a);
    const s3gen::Mel b = session.generate(tokens, voice, rng_b);
    const s3gen::Mel c = session.generate(tokens, voice, rng_c);
    ASSERT_EQ(a.frames, 2 * int64_t(tokens.size()));
    EXPECT_EQ(a.values, b.values);
    EXPECT_NE(a.values, c.values);
    for (float v : a.values) ASSERT_TRUE(std::isfinite(v));
}

} // namespace chatterbox::test
