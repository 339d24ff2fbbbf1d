// The torch_rng golden set through `chatterbox-golden torch-rng` (tokens identical, draws bit for
// bit), and T3's sampler on the main case's repetition-penalised logits with seed 1234 against the
// tokens torch drew from the same rows (scripts/make_torch_rng_set.py t3-sampling).

#include "core/npy.h"
#include "core/torch_generator.h"
#include "models/chatterbox/t3/sampler.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

using namespace chatterbox;
using namespace chatterbox::test;

TEST(TorchRngGolden, ToolReproducesEveryArray) {
    const std::string golden = data_path("torch_rng"), out = temp_dir("torch_rng_tool");
    const ToolRun run = run_tool("chatterbox-golden", {"torch-rng", "--golden", golden, "--out", out});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    std::ifstream in(golden + "/index.json");
    const nlohmann::json index = nlohmann::json::parse(in);
    std::vector<std::string> names;
    for (const auto &c : index["multinomial"]) names.push_back(c["name"].get<std::string>() + "_tokens");
    for (const auto &d : index["draws"]) names.push_back(d["name"]);
    ASSERT_EQ(names.size(), 11u);
    for (const std::string &name : names) {
        const NpyArray got = read_npy(out + "/" + name + ".npy"), want = read_npy(golden + "/" + name + ".npy");
        if (want.descr[1] == 'i') { // tokens: the values (torch's int64, or a recording's int32)
            EXPECT_EQ(got.i64(), want.i64()) << name;
            continue;
        }
        EXPECT_EQ(got.descr, want.descr) << name;
        EXPECT_EQ(got.numel(), want.numel()) << name;
        EXPECT_TRUE(got.data == want.data) << name << ": not bit-identical";
    }
    EXPECT_NE(run_tool("chatterbox-golden", {"torch-rng", "--golden", out, "--out", out}).exit_code, 0)
        << "a folder without index.json";
}

// tts.py generate()'s processors after the repetition penalty (temperature 0.8, min-p 0.05, top-p 1)
// on the 20 recorded rows, one multinomial per step from one generator: the tokens torch drew, and
// each the argmax of p / q for the test's own exponential row.
TEST(TorchRngGolden, T3SamplesWhatTorchSamples) {
    const NpyArray rows = read_npy(golden_path("t3_tf_logits_penalized.npy"));
    const std::vector<int64_t> torch_tokens = read_npy(data_path("torch_rng/t3_sampled_tokens_seed1234.npy")).i64();
    const size_t steps = size_t(rows.shape[0]), vocab = size_t(rows.shape[1]);
    ASSERT_EQ(torch_tokens.size(), steps);
    const std::vector<float> logits = rows.f32();
    t3::SamplerRecipe after_penalty = t3::SamplerRecipe::tts();
    after_penalty.stages = {t3::LogitsStage::temperature, t3::LogitsStage::min_p, t3::LogitsStage::top_p};
    const t3::SamplingParams params; // English defaults
    TorchGenerator engine(1234), reference(1234);
    std::vector<float> q(vocab);
    for (size_t s = 0; s < steps; ++s) {
        std::vector<float> row(logits.begin() + std::ptrdiff_t(s * vocab),
                               logits.begin() + std::ptrdiff_t((s + 1) * vocab));
        std::vector<float> processed = row;
        t3::process_logits(processed, after_penalty, {}, params);
        const std::vector<float> p = t3::softmax(processed);
        reference.exponential(q.data(), vocab);
        size_t expected = 0;
        for (size_t i = 1; i < vocab; ++i)
            if (p[i] / q[i] > p[expected] / q[expected]) expected = i;
        const int token = t3::choose_token(row, after_penalty, {}, params, engine);
        EXPECT_EQ(token, int(expected)) << "step " << s;
        EXPECT_EQ(token, torch_tokens[s]) << "step " << s;
    }
}
