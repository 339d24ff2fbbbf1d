// needs: synthetic-weights tiny-model
// chatterbox-bench runs end to end at tiny sizes (the real measurements stay out of the suite):
// s3gen writes every figure to its JSON, counts the estimator's FLOPs as the closed form of
// bench/README.md says, and the same weights given twice produce identical outputs; pipeline
// reports every stage of a short request (without the streaming run, to keep the suite short), and
// T3's steps against the bandwidth bound, for exactly --max-tokens steps in one pass; flow-batch
// (tiny model) gives the batched requests the sequential mel and reports both times, and so does
// vocoder-batch for the waves of equal and varied lengths; batch (tiny model) reports the decode
// rates and a late joiner's prefill beside the others' steps.

#include "support/test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

using namespace chatterbox::test;

namespace {

// bench/README.md: per frame and CFG row, the estimator multiplies by 66,080,768 weights
// (56 transformer blocks of 1,048,576, 14 resnet blocks and 3 causal convs as im2col products,
// the 1x1 projection); attention costs 4·512·T per frame and row in each of the 56 blocks; the
// time MLP and the 14 time projections are 5,046,272 weights, once per step.
double estimator_flops(double frames) {
    const double rows = 2;
    return 2.0 * rows * frames * 66080768.0 + rows * 56 * 4 * 512 * frames * frames + 2.0 * 5046272.0;
}

} // namespace

TEST(BenchSmoke, S3GenReportsEveryStageAndIsDeterministic) {
    const std::string json_path = temp_dir("bench_smoke") + "/s3gen.json";
    const std::string model = synthetic_model_dir();
    const ToolRun run =
        run_tool("chatterbox-bench", {"s3gen", "--weights", model, "--weights", model, "--prompt-tokens", "2",
                                      "--tokens", "3", "--repeats", "1", "--json", json_path});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    std::ifstream in(json_path);
    ASSERT_TRUE(in) << "no JSON written";
    const nlohmann::json results = nlohmann::json::parse(in);
    EXPECT_GT(results["best_matmul_gflop_per_s"].get<double>(), 0.0);
    ASSERT_EQ(results["s3gen"].size(), 2u);
    for (const nlohmann::json &row : results["s3gen"]) {
        EXPECT_EQ(row["mel_frames"].get<int>(), 10);
        EXPECT_DOUBLE_EQ(row["audio_seconds"].get<double>(), 0.12);
        for (const char *stage : {"encoder_ms", "cfm_step_ms", "cfm_ms", "hift_ms"})
            EXPECT_GT(row[stage]["min"].get<double>(), 0.0) << stage;
        EXPECT_NEAR(row["estimator_gflop"].get<double>() * 1e9, estimator_flops(10), 1.0);
    }
    EXPECT_EQ(results["s3gen"][1]["mel_max_diff"].get<double>(), 0.0);
    EXPECT_EQ(results["s3gen"][1]["wave_max_diff"].get<double>(), 0.0);
}

TEST(BenchSmoke, FlowBatchComparesBatchedWithSequential) {
    const std::string json_path = temp_dir("bench_smoke_flow_batch") + "/flow_batch.json";
    const ToolRun run =
        run_tool("chatterbox-bench", {"flow-batch", "--weights", tiny_model_path(), "--prompt-tokens", "4",
                                      "--requests", "1", "2", "--tokens", "5", "--json", json_path});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    std::ifstream in(json_path);
    ASSERT_TRUE(in) << "no JSON written";
    const nlohmann::json rows = nlohmann::json::parse(in)["flow_batch"];
    ASSERT_EQ(rows.size(), 2u);
    for (const nlohmann::json &row : rows) {
        EXPECT_GT(row["sequential_s"].get<double>(), 0.0);
        EXPECT_GT(row["batched_s"].get<double>(), 0.0);
        EXPECT_GT(row["mel_s"].get<double>(), 0.0);
        EXPECT_LE(row["max_difference"].get<double>(), 1e-5);
    }
    EXPECT_DOUBLE_EQ(rows[0]["mean_occupancy"].get<double>(), 1.0);
    EXPECT_GE(rows[1]["mean_occupancy"].get<double>(), 1.0); // how much the two overlap is the machine's timing
}

TEST(BenchSmoke, VocoderBatchComparesBatchedWithSequential) {
    const std::string json_path = temp_dir("bench_smoke_vocoder_batch") + "/vocoder_batch.json";
    const ToolRun run = run_tool("chatterbox-bench", {"vocoder-batch", "--weights", tiny_model_path(), "--requests",
                                                      "1", "2", "--frames", "30", "--json", json_path});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    std::ifstream in(json_path);
    ASSERT_TRUE(in) << "no JSON written";
    const nlohmann::json rows = nlohmann::json::parse(in)["vocoder_batch"];
    ASSERT_EQ(rows.size(), 3u); // 1 request; 2 of equal lengths; 2 of varied lengths
    EXPECT_EQ(rows[1]["lengths"], "equal");
    EXPECT_EQ(rows[2]["lengths"], "varied");
    for (const nlohmann::json &row : rows) {
        EXPECT_GT(row["sequential_s"].get<double>(), 0.0);
        EXPECT_GT(row["batched_s"].get<double>(), 0.0);
        EXPECT_NEAR(row["audio_s"].get<double>(),
                    row["requests"].get<int>() == 1 ? 0.6 : 1.2 + (row["lengths"] == "varied" ? 0.06 : 0.0), 1e-9);
        EXPECT_LE(row["max_difference"].get<double>(), 1e-5);
        // The tiny model's opener can end before the two queue behind it: one run or two.
        EXPECT_GE(row["mean_occupancy"].get<double>(), 1.0);
        EXPECT_LE(row["mean_occupancy"].get<double>(), row["requests"].get<double>());
    }
}

// 96 tokens: with 12, on a machine busy with other tests, the first request could finish before the
// second's prefill did, and the bench (rightly) refuses a level whose requests never overlapped.
TEST(BenchSmoke, T3BatchReportsRatesAndTheLateJoiner) {
    const std::string json_path = temp_dir("bench_smoke_batch") + "/batch.json";
    const ToolRun run = run_tool("chatterbox-bench", {"batch", "--weights", tiny_model_path(), "--requests", "1", "2",
                                                      "--tokens", "96", "--late-joiner", "--json", json_path});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    std::ifstream in(json_path);
    ASSERT_TRUE(in) << "no JSON written";
    const nlohmann::json rows = nlohmann::json::parse(in)["batch"];
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_DOUBLE_EQ(rows[0]["ratio_to_single"].get<double>(), 1.0);
    for (const nlohmann::json &row : rows) {
        EXPECT_GT(row["tokens_per_s"].get<double>(), 0.0);
        EXPECT_GE(row["mean_occupancy"].get<double>(), 1.0);
        const nlohmann::json &join = row.at("join");
        for (const char *key : {"prefill_ms", "median_step_ms", "longest_step_ms"})
            EXPECT_GT(join[key].get<double>(), 0.0) << key;
        EXPECT_DOUBLE_EQ(join["longest_in_steps"].get<double>(),
                         join["longest_step_ms"].get<double>() / join["median_step_ms"].get<double>());
    }
    EXPECT_TRUE(contains(run.out, "a late joiner: prefill")) << run.out;
}

TEST(BenchSmoke, BadSizesAreClearErrors) {
    const ToolRun run = run_tool("chatterbox-bench", {"s3gen", "--weights", synthetic_model_dir(), "--tokens", "0"});
    EXPECT_EQ(run.exit_code, 1);
    EXPECT_TRUE(contains(run.err, "at least 1 prompt token, 1 generated token")) << run.err;
}

// The machine's peaks on 1 and 2 threads, each with the instructions it was measured with; the bf16
// rate exactly where the CPU has AVX-512 BF16.
TEST(BenchSmoke, PeakReportsEveryRate) {
    const std::string json_path = temp_dir("bench_smoke_peak") + "/peak.json";
    const ToolRun run = run_tool("chatterbox-bench", {"peak", "--threads", "2", "--json", json_path});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    std::ifstream in(json_path);
    ASSERT_TRUE(in) << "no JSON written";
    const nlohmann::json peak = nlohmann::json::parse(in)["peak"];
    EXPECT_EQ(peak["threads"].get<int>(), 2);
    for (const char *rate : {"f32_fma_gflop_per_s", "read_gb_per_s"}) {
        EXPECT_GT(peak[rate]["one_thread"].get<double>(), 0.0) << rate;
        EXPECT_GT(peak[rate]["all_threads"].get<double>(), 0.0) << rate;
        EXPECT_FALSE(peak[rate]["isa"].get<std::string>().empty()) << rate;
    }
    EXPECT_EQ(peak["bf16_dot_gflop_per_s"].is_null(), !__builtin_cpu_supports("avx512bf16"));
    if (!peak["bf16_dot_gflop_per_s"].is_null()) {
        EXPECT_GT(peak["bf16_dot_gflop_per_s"]["all_threads"].get<double>(), 0.0);
    }
    EXPECT_EQ(peak["int8_dot_gop_per_s"].is_null(), !__builtin_cpu_supports("avx2"));
}

TEST(BenchSmoke, PipelineReportsEveryStage) {
    const std::string json_path = temp_dir("bench_smoke_pipeline") + "/pipeline.json";
    const ToolRun run = run_tool(
        "chatterbox-bench", {"pipeline", "--weights", synthetic_model_dir(), "--voice", golden_path("ref_voice.wav"),
                             "--voice-seconds", "2", "--text", "Hello there. Two sentences.", "--max-tokens", "8",
                             "--ignore-eos", "--no-split", "--no-stream", "--json", json_path});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    std::ifstream in(json_path);
    ASSERT_TRUE(in) << "no JSON written";
    const nlohmann::json results = nlohmann::json::parse(in);
    const double f32_peak = results["peak"]["f32_fma_gflop_per_s"]["all_threads"].get<double>();
    EXPECT_GT(results["peak"]["read_gb_per_s"]["all_threads"].get<double>(), 0.0);
    EXPECT_GT(f32_peak, 0.0);
    const nlohmann::json row = results["pipeline"].at(0);
    // Every stage multiplies matrices; a rate above the machine's peak (twice it, for a peak measured
    // while something else ran) would be FLOPs counted wrong.
    for (const char *stage : {"voice", "t3", "s3gen", "hift"}) {
        EXPECT_GT(row["stage_gflop"][stage].get<double>(), 0.0) << stage;
        const double share = row["stage_of_f32_peak"][stage].get<double>();
        EXPECT_NEAR(share, row["stage_gflop_per_s"][stage].get<double>() / f32_peak, 1e-9) << stage;
        EXPECT_GT(share, 0.0) << stage;
        EXPECT_LT(share, 2.0) << stage;
    }
    for (const char *key :
         {"load_ms", "voice_ms", "t3_ms", "s3gen_ms", "hift_ms", "total_ms", "audio_seconds", "rtf", "peak_rss_mib",
          "t3_prefill_ms", "t3_decode_ms_per_step", "t3_bound_ms", "t3_ratio_to_bound"})
        EXPECT_GT(row[key].get<double>(), 0.0) << key;
    // One T3 pass of exactly 8 steps (7 decode steps after the prefill), EOS or not.
    EXPECT_EQ(row["pieces"].get<int>(), 1);
    EXPECT_EQ(row["t3_steps"].get<int>(), 8);
    EXPECT_EQ(row["eos_step"].size(), 1u);
    EXPECT_LE(row["speech_tokens"].get<int>(), 8);
    EXPECT_GT(row["t3_step_bytes"].get<double>(), 2e9) << "less than the f32 backbone and head";
    EXPECT_FALSE(row.contains("stream_first_audio_ms")) << "--no-stream still streamed";
}
