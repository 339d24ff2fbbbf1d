// needs: tiny-model
// The chatterbox CLI end to end on the tiny synthetic model: short syntheses (--max-tokens 10) to .wav
// and .flac, --stream to stdout, --save-voice then reuse, voice conversion, --no-split,
// --ignore-eos and --speed, --flow-noise, global flags before a subcommand. The voice comes from 1.5 s of the reference
// and is made once, and the .flac output is the saved voice's run.

#include "audio/audio_file.h"
#include "core/npy.h"
#include "models/chatterbox/s3gen/flow_cfm.h"
#include "models/chatterbox/streaming.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace chatterbox;
using test::contains;
using test::ToolRun;

namespace {

constexpr int kSampleRate = 24000;
constexpr int kMaxTokens = 10;
constexpr size_t kSamplesPerToken = 960; // 40 ms at 24 kHz
const std::string kText = "Hello there.";

ToolRun chatterbox_cli(std::vector<std::string> args) {
    args.insert(args.begin(), {"-m", test::tiny_model_path(), "--max-tokens", std::to_string(kMaxTokens)});
    return test::run_tool("chatterbox", args);
}

class Cli : public ::testing::Test {
  protected:
    // --voice recording --save-voice: the voice, and a synthesis from the recording to compare with.
    static void SetUpTestSuite() {
        dir_ = new fs::path(test::temp_dir("cli-suite"));
        write_head_of_reference(path("recording.wav"), 1.5);
        from_recording_ = chatterbox_cli(
            {"--voice", path("recording.wav"), "--save-voice", voice_file(), "-o", path("from_recording.wav"), kText});
    }
    static void TearDownTestSuite() { delete dir_; }

    static std::string voice_file() { return (*dir_ / "ref.voice").string(); }
    static std::string path(const std::string &name) { return (*dir_ / name).string(); }

    static void write_head_of_reference(const std::string &out, double seconds) {
        audio::AudioBuffer head = audio::read_audio(test::golden_path("ref_voice.wav"));
        head.samples.resize(std::min<size_t>(head.samples.size(), size_t(seconds * head.sample_rate)));
        audio::write_audio(out, head.samples, head.sample_rate);
    }

    static void expect_plausible_speech(const std::vector<float> &samples, size_t max_tokens = kMaxTokens) {
        EXPECT_GT(samples.size(), 0u);
        EXPECT_LE(samples.size(), max_tokens * kSamplesPerToken);
        EXPECT_TRUE(std::all_of(samples.begin(), samples.end(), [](float x) { return x >= -1.0f && x <= 1.0f; }));
        EXPECT_GT(test::max_magnitude(samples), 0.0);
    }

    static fs::path *dir_;
    static ToolRun from_recording_;
};

fs::path *Cli::dir_ = nullptr;
ToolRun Cli::from_recording_;

} // namespace

TEST_F(Cli, SynthesisToWavWithSummary) {
    ASSERT_EQ(from_recording_.exit_code, 0) << from_recording_.err;
    const audio::AudioBuffer wav = audio::read_audio(path("from_recording.wav"));
    EXPECT_EQ(wav.sample_rate, kSampleRate);
    expect_plausible_speech(wav.samples);
    EXPECT_TRUE(contains(from_recording_.err, "saved the voice to " + voice_file()));
    EXPECT_TRUE(contains(from_recording_.err, "s of audio in"));
    EXPECT_TRUE(contains(from_recording_.err, "real-time factor"));
    EXPECT_TRUE(contains(from_recording_.err, "first audio after"));
}

// Also the .flac output: the same synthesis as the recording's .wav; each 16-bit encoder is within one
// step of the float samples (libsndfile rounds differently for the two), so they differ by at most 2 steps.
TEST_F(Cli, SavedVoiceToFlacGivesTheSameAudioAsItsRecording) {
    ASSERT_EQ(from_recording_.exit_code, 0) << from_recording_.err;
    const ToolRun run = chatterbox_cli({"-q", "--voice", voice_file(), "-o", path("from_voice_file.flac"), kText});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(run.err, ""); // -q
    const audio::AudioBuffer flac = audio::read_audio(path("from_voice_file.flac"));
    EXPECT_EQ(flac.sample_rate, kSampleRate);
    const std::vector<float> wav = audio::read_audio(path("from_recording.wav")).samples;
    ASSERT_EQ(flac.samples.size(), wav.size());
    EXPECT_LE(test::compare(flac.samples, wav).max_abs, 2.0 / 32768);
}

TEST_F(Cli, StreamWritesPcmToStdout) {
    const ToolRun run = chatterbox_cli({"--voice", voice_file(), "--stream", kText});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_TRUE(contains(run.err, "s16le mono 24000 Hz"));
    ASSERT_EQ(run.out.size() % 2, 0u);
    std::vector<float> samples(run.out.size() / 2);
    for (size_t i = 0; i < samples.size(); ++i) {
        const auto low = static_cast<uint8_t>(run.out[2 * i]), high = static_cast<uint8_t>(run.out[2 * i + 1]);
        samples[i] = static_cast<int16_t>(low | (high << 8)) / 32768.0f;
    }
    expect_plausible_speech(samples);
}

TEST_F(Cli, VoiceConversion) {
    write_head_of_reference(path("source.wav"), 1.0); // one second of speech to convert
    const audio::AudioBuffer source = audio::read_audio(path("source.wav"));

    const ToolRun run =
        test::run_tool("chatterbox", {"vc", "-m", test::tiny_model_path(), "--source", path("source.wav"), "--voice",
                                      voice_file(), "-o", path("converted.wav")});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const audio::AudioBuffer converted = audio::read_audio(path("converted.wav"));
    EXPECT_EQ(converted.sample_rate, kSampleRate);
    // Speech tokens at 25 per second give back about the source's duration.
    EXPECT_NEAR(converted.seconds(), source.seconds(), 0.25 * source.seconds());
}

// Flags the main command and a subcommand share work on either side of its name: "chatterbox -q -m
// M vc ..." converts as "chatterbox vc -q -m M ..." does (the same bytes); a flag only the main
// command has is refused before the name too, and a word "vc" inside the text stays text.
TEST_F(Cli, GlobalFlagsWorkBeforeASubcommand) {
    write_head_of_reference(path("short_source.wav"), 0.5);
    const std::vector<std::string> conversion{"--source", path("short_source.wav"), "--voice", voice_file(), "-o"};
    auto with = [](std::vector<std::string> head, const std::vector<std::string> &tail, const std::string &out) {
        head.insert(head.end(), tail.begin(), tail.end());
        head.push_back(out);
        return head;
    };
    const ToolRun after =
        test::run_tool("chatterbox", with({"vc", "-q", "-m", test::tiny_model_path()}, conversion, path("after.wav")));
    ASSERT_EQ(after.exit_code, 0) << after.err;
    const ToolRun before = test::run_tool(
        "chatterbox", with({"-q", "--model=" + test::tiny_model_path(), "vc"}, conversion, path("before.wav")));
    ASSERT_EQ(before.exit_code, 0) << before.err;
    EXPECT_EQ(audio::read_audio(path("before.wav")).samples, audio::read_audio(path("after.wav")).samples);

    const ToolRun refused = test::run_tool("chatterbox", {"--exaggeration", "0.3", "vc", "--source", "x.wav"});
    EXPECT_EQ(refused.exit_code, 2);
    EXPECT_TRUE(contains(refused.err, "--exaggeration")) << refused.err;

    const ToolRun text = chatterbox_cli({"-q", "-o", path("vc_text.wav"), "say", "vc", "now"});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    expect_plausible_speech(audio::read_audio(path("vc_text.wav")).samples);
}

// A long text is written as it is made: every piece goes to the file when it is done and nothing
// of the audio stays in memory. 16 times the text (2.8 min of audio, 16 MB as f32, which the result
// and its copies had held two or three times over: +32..48 MB) adds ~6 MB of peak memory. The heap
// is held to a strict policy here (every block of 1 MiB mapped, free pages over 1 MiB given back,
// one arena) so that the figure is what the program holds, not what glibc keeps of freed pages
// (core/heap_policy.h; bench/README.md "Long text").
TEST_F(Cli, LongTextIsWrittenAsItIsMadeInFlatMemory) {
    test::ToolInput strict_heap;
    strict_heap.env = {"MALLOC_MMAP_THRESHOLD_=1048576", "MALLOC_TRIM_THRESHOLD_=1048576", "MALLOC_ARENA_MAX=1"};
    auto speak = [&](int sentences, const std::string &out) {
        std::ofstream text(path("long.txt"));
        for (int i = 0; i < sentences; ++i) text << "This is a sentence. ";
        text.close();
        // 25 tokens (1 s of speech) for every sentence, the end of speech ignored.
        return test::run_tool("chatterbox",
                              {"-m", test::tiny_model_path(), "-q", "--max-tokens", "25", "--ignore-eos", "-f",
                               path("long.txt"), "-o", out},
                              strict_heap);
    };
    const ToolRun short_run = speak(10, path("ten.wav")), long_run = speak(160, path("many.wav"));
    ASSERT_EQ(short_run.exit_code, 0) << short_run.err;
    ASSERT_EQ(long_run.exit_code, 0) << long_run.err;
    const double pause = 0.25, ten = audio::read_audio(path("ten.wav")).seconds();
    const audio::AudioBuffer many = audio::read_audio(path("many.wav"), {.max_seconds = 3600});
    EXPECT_NEAR(many.seconds(), (ten + pause) * 16 - pause, 0.05 * many.seconds()); // pieces trim differently
    std::printf("peak memory: 10 sentences %ld KiB, 160 sentences %ld KiB (%.0f s of audio)\n", short_run.max_rss_kb,
                long_run.max_rss_kb, many.seconds());
    EXPECT_LT(long_run.max_rss_kb - short_run.max_rss_kb, 12 * 1024) << "memory grew with the text";
}

TEST_F(Cli, InterruptKeepsTheAudioMadeSoFar) {
    std::ofstream text(path("endless.txt"));
    for (int i = 0; i < 500; ++i) text << "This is a sentence. ";
    text.close();
    const std::string out = path("interrupted.wav");
    audio::write_audio(out, std::vector<float>(2400, 0.1f), kSampleRate); // an earlier file, 0.1 s
    const pid_t pid = fork();
    if (pid == 0) {
        std::freopen("/dev/null", "w", stderr);
        execl(test::tool_path("chatterbox").c_str(), "chatterbox", "-m", test::tiny_model_path().c_str(), "-q",
              "--max-tokens", "25", "--ignore-eos", "-f", path("endless.txt").c_str(), "-o", out.c_str(),
              static_cast<char *>(nullptr));
        _exit(127);
    }
    ASSERT_GT(pid, 0);
    auto partial_bytes = [&] {
        for (const auto &entry : fs::directory_iterator(*dir_))
            if (entry.path().filename().string().rfind("interrupted.wav.partial", 0) == 0) return entry.file_size();
        return std::uintmax_t(0);
    };
    // A few pieces written (48 kB a second of 16-bit audio), then Ctrl-C.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (partial_bytes() < 150000 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_NEAR(audio::read_audio(out).seconds(), 0.1, 1e-6) << "replaced before the end";
    kill(pid, SIGINT);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 130);
    const double seconds = audio::read_audio(out, {.max_seconds = 3600}).seconds();
    EXPECT_GT(seconds, 3.0);
    EXPECT_LT(seconds, 400.0) << "the whole text was said";
    EXPECT_EQ(partial_bytes(), 0u) << "a partial file stayed";
}

TEST_F(Cli, NoSplitSaysTwoSentencesAsOnePiece) {
    // Split, the two pieces are joined by 0.25 s of exact zeros; a piece itself starts with only
    // 20 ms of them (trim_fade).
    const size_t pause = size_t(0.25 * kSampleRate);
    auto longest_silence = [](const std::vector<float> &samples) {
        size_t longest = 0, run = 0;
        for (float x : samples) {
            run = x == 0.0f ? run + 1 : 0;
            longest = std::max(longest, run);
        }
        return longest;
    };
    const std::string text = "One sentence. And another.";
    ASSERT_EQ(chatterbox_cli({"-q", "--voice", voice_file(), "-o", path("split.wav"), text}).exit_code, 0);
    EXPECT_GE(longest_silence(audio::read_audio(path("split.wav")).samples), pause);
    const ToolRun run = chatterbox_cli({"-q", "--no-split", "--voice", voice_file(), "-o", path("whole.wav"), text});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const std::vector<float> whole = audio::read_audio(path("whole.wav")).samples;
    expect_plausible_speech(whole);
    EXPECT_LT(longest_silence(whole), pause) << "a pause: the text was split";
}

TEST_F(Cli, IgnoreEosRunsPastTheEndOfSpeech) {
    // Nearly uniform sampling that draws end-of-speech before step 15 of 30 for this text and seed
    // in the built-in voice (as e2e.test_pipeline's IgnoringEosMakesMaxNewTokens), so only
    // --ignore-eos makes all 30 tokens. (With torch's multinomial no seed of 0..400 ends within
    // the suite's 10 tokens.)
    const std::vector<std::string> sampling = {"-m",
                                               test::tiny_model_path(),
                                               "--max-tokens",
                                               "30",
                                               "-q",
                                               "--seed",
                                               "279",
                                               "--temperature",
                                               "5",
                                               "--min-p",
                                               "0",
                                               "--cfg-weight",
                                               "0",
                                               "-o"};
    std::vector<std::string> ended = sampling, full = sampling;
    ended.insert(ended.end(), {path("ended.wav"), kText});
    full.insert(full.end(), {path("full.wav"), "--ignore-eos", kText});
    ASSERT_EQ(test::run_tool("chatterbox", ended).exit_code, 0);
    const ToolRun run = test::run_tool("chatterbox", full);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const size_t ended_samples = audio::read_audio(path("ended.wav")).samples.size();
    ASSERT_LE(ended_samples, 15 * kSamplesPerToken) << "seed 279 no longer ends early: choose a seed that does";
    const std::vector<float> samples = audio::read_audio(path("full.wav")).samples;
    expect_plausible_speech(samples, 30);
    EXPECT_GT(samples.size(), ended_samples);
}

// The summary says how each piece ended: the tiny model never ends by itself, so "Yes." stops at
// the length bound from its text (below 100 tokens), and with --guard none at --max-tokens.
TEST_F(Cli, SummaryTellsThePieceEndsAndGuardsAreChosenByName) {
    const auto run = [&](std::vector<std::string> args) { // --max-tokens 100, not the suite's 10
        args.insert(args.begin(), {"-m", test::tiny_model_path(), "--max-tokens", "100"});
        return test::run_tool("chatterbox", args);
    };
    const ToolRun bounded = run({"-o", path("bounded.wav"), "Yes."});
    ASSERT_EQ(bounded.exit_code, 0) << bounded.err;
    EXPECT_TRUE(contains(bounded.err, "1 piece: length_bound (1 cut by the length bound from the text)"))
        << bounded.err;
    const ToolRun plain = run({"--guard", "none", "-o", path("plain.wav"), "Yes."});
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_TRUE(contains(plain.err, "1 piece: max_tokens")) << plain.err;
    EXPECT_GT(audio::read_audio(path("plain.wav")).samples.size(),
              audio::read_audio(path("bounded.wav")).samples.size());

    const ToolRun unknown = chatterbox_cli({"--guard", "loud", "-o", path("x.wav"), "Yes."});
    EXPECT_EQ(unknown.exit_code, 2);
    EXPECT_TRUE(contains(unknown.err, "expected alignment or none")) << unknown.err;
    const ToolRun alignment = chatterbox_cli({"-q", "--guard", "alignment", "-o", path("x.wav"), "Yes."});
    EXPECT_NE(alignment.exit_code, 0); // the tiny T3 has 2 layers: no aligned heads
    EXPECT_TRUE(contains(alignment.err, "alignment_guard")) << alignment.err;
}

TEST_F(Cli, SpeedTimeStretchesTheSameSpeech) {
    const ToolRun help = test::run_tool("chatterbox", {"--help"});
    EXPECT_TRUE(contains(help.out, "--speed"));
    ASSERT_EQ(chatterbox_cli({"-q", "--voice", voice_file(), "-o", path("speed1.wav"), kText}).exit_code, 0);
    const ToolRun run =
        chatterbox_cli({"-q", "--speed", "2", "--voice", voice_file(), "-o", path("speed2.wav"), kText});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const size_t normal = audio::read_audio(path("speed1.wav")).samples.size();
    const std::vector<float> fast = audio::read_audio(path("speed2.wav")).samples;
    EXPECT_EQ(fast.size(), size_t(std::lround(normal / 2.0))); // the same seed and speech, twice as fast
    EXPECT_GT(test::max_magnitude(fast), 0.0);
    const ToolRun bad = chatterbox_cli({"-q", "--speed", "5", "-o", path("bad.wav"), kText});
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_TRUE(contains(bad.err, "speed"));
}

// --flow-noise: the noise the seed draws (the first piece's stream, frame after frame), written as
// torch's z of shape (1, 80, T) with frames to spare, gives the seed's own audio; other noise other
// audio; a wrong shape or too few frames is a clear error.
TEST_F(Cli, FlowNoiseFromAFileIsWhereTheFlowStarts) {
    constexpr size_t kBins = 80, kFrames = 1000; // the built-in voice's prompt and 2 frames a token, with room
    std::mt19937_64 rng(mix_seed(5, 1));
    const std::vector<float> drawn = s3gen::standard_normal(kFrames * kBins, rng); // frame-major
    std::vector<float> z(kBins * kFrames);
    for (size_t f = 0; f < kFrames; ++f)
        for (size_t c = 0; c < kBins; ++c) z[c * kFrames + f] = drawn[f * kBins + c];
    write_npy(path("z.npy"), NpyArray::from_f32({1, int64_t(kBins), int64_t(kFrames)}, z));
    write_npy(path("zeros.npy"), NpyArray::from_f32({int64_t(kBins), int64_t(kFrames)}, std::vector<float>(z.size())));
    write_npy(path("short.npy"), NpyArray::from_f32({int64_t(kBins), 3}, std::vector<float>(kBins * 3)));
    write_npy(path("bins.npy"), NpyArray::from_f32({40, 10}, std::vector<float>(400)));

    const auto speak = [&](const std::vector<std::string> &noise, const std::string &out) {
        std::vector<std::string> args{"-q", "--seed", "5", "-o", path(out)};
        args.insert(args.end(), noise.begin(), noise.end());
        args.push_back(kText);
        return chatterbox_cli(args);
    };
    const ToolRun seeded = speak({}, "seeded.wav");
    ASSERT_EQ(seeded.exit_code, 0) << seeded.err;
    const ToolRun given = speak({"--flow-noise", path("z.npy")}, "given.wav");
    ASSERT_EQ(given.exit_code, 0) << given.err;
    const std::vector<float> expected = audio::read_audio(path("seeded.wav")).samples;
    EXPECT_EQ(audio::read_audio(path("given.wav")).samples, expected);
    const ToolRun zeros = speak({"--flow-noise", path("zeros.npy")}, "zeros.wav");
    ASSERT_EQ(zeros.exit_code, 0) << zeros.err;
    EXPECT_NE(audio::read_audio(path("zeros.wav")).samples, expected);

    const ToolRun short_noise = speak({"--flow-noise", path("short.npy")}, "short.wav");
    EXPECT_NE(short_noise.exit_code, 0);
    EXPECT_TRUE(contains(short_noise.err, "the flow noise holds 3 frames; this text piece needs more"));
    EXPECT_FALSE(fs::exists(path("short.wav")));
    const ToolRun bins = speak({"--flow-noise", path("bins.npy")}, "bins.wav");
    EXPECT_NE(bins.exit_code, 0);
    EXPECT_TRUE(contains(bins.err, "the flow noise must have the shape (80, frames) or (1, 80, frames), got [40, 10]"));
}
