// The chatterbox CLI's command-line handling and error paths, without weights: each bad command line
// gives exit code 2 and each failure while acting exit code 1, with a message that names the problem;
// the model download flow against a local folder laid out like the model hub (HF_ENDPOINT=file://...).

#include "models/chatterbox/engine_settings.h"
#include "models/chatterbox/model_download.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using chatterbox::test::contains;
using chatterbox::test::run_tool;
using chatterbox::test::temp_dir;
using chatterbox::test::ToolInput;
using chatterbox::test::ToolRun;

namespace {

constexpr int kFailure = 1;
constexpr int kUsage = 2;

ToolRun chatterbox_cli(const std::vector<std::string> &args, const ToolInput &input = {}) {
    return run_tool("chatterbox", args, input);
}

void expect_exit(const ToolRun &run, int code, const std::string &message) {
    EXPECT_EQ(run.exit_code, code) << run.err;
    EXPECT_TRUE(contains(run.err, message));
}

} // namespace

TEST(CliErrors, HelpDocumentsEveryOption) {
    const ToolRun run = chatterbox_cli({"--help"});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    for (const char *option : {"--file",         "--model",
                               "--voice",        "--save-voice",
                               "--output",       "--stream",
                               "--exaggeration", "--cfg-weight",
                               "--temperature",  "--repetition-penalty",
                               "--min-p",        "--top-p",
                               "--seed",         "--max-tokens",
                               "--threads",      "--backend",
                               "--quiet",        "--download",
                               "--no-split",     "--ignore-eos",
                               "chatterbox vc",  "chatterbox download",
                               "Exit codes",     "s16le"})
        EXPECT_TRUE(contains(run.out, option));
    EXPECT_TRUE(contains(chatterbox_cli({"vc", "--help"}).out, "--source"));
    EXPECT_TRUE(contains(chatterbox_cli({"download", "--help"}).out, "huggingface.co"));
}

// The engine's flags come from its settings table in every program: the CLI takes those of one request,
// the server all, the server benchmark the shared services'; --help shows each with its accepted values.
TEST(CliErrors, EveryProgramOffersTheEngineSettingsItTakes) {
    const std::string cli = chatterbox_cli({"--help"}).out;
    const ToolRun server = run_tool("chatterbox-server", {"--help"});
    EXPECT_EQ(server.exit_code, 0) << server.err;
    const ToolRun bench = run_tool("chatterbox-bench", {"server", "--help"});
    EXPECT_EQ(bench.exit_code, 0) << bench.err;
    // An option's line in --help: "  --batch N..." or "  -t,--threads N...", not a mention in a meaning.
    const auto offers = [](const std::string &help, const std::string &flag) {
        return contains(help, "  " + flag + " ") || contains(help, "," + flag + " ");
    };
    for (const chatterbox::EngineSetting &setting : chatterbox::engine_settings_table()) {
        SCOPED_TRACE(setting.name);
        const std::string flag = std::string("--") + setting.option;
        EXPECT_EQ(offers(cli, flag), !setting.shared_services);
        EXPECT_TRUE(offers(server.out, flag));
        EXPECT_EQ(offers(bench.out, flag), setting.shared_services);
        if (!setting.accepted_text().empty()) {
            EXPECT_TRUE(contains(server.out, setting.accepted_text()));
        }
    }
    const ToolRun refused = run_tool("chatterbox-server", {"--kv-cache", "q4_0"});
    EXPECT_EQ(refused.exit_code, kUsage);
    EXPECT_TRUE(contains(refused.err, "--kv-cache: must be one of f16|f32|q8_0, got q4_0")) << refused.err;
}

TEST(CliErrors, UnknownOption) { expect_exit(chatterbox_cli({"--bogus", "Hello."}), kUsage, "--bogus"); }

TEST(CliErrors, NumbersOutOfRange) {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--exaggeration", "2.5"}, "--exaggeration: must be in [0, 2], got 2.5"},
        {{"--cfg-weight", "-0.1"}, "--cfg-weight: must be in [0, 3]"},
        {{"--temperature", "0"}, "--temperature: must be in (0, 5], got 0"},
        {{"--repetition-penalty", "0.5"}, "--repetition-penalty: must be in [1, 5]"},
        {{"--min-p", "1.5"}, "--min-p: must be in [0, 1]"},
        {{"--top-p", "-0.5"}, "--top-p: must be in [0, 1]"},
        {{"--top-p", "abc"}, "--top-p: \"abc\" is not a number"},
        {{"--max-tokens", "0"}, "--max-tokens: must be in [1, 4096]"},
        {{"--max-tokens", "5000"}, "--max-tokens: must be in [1, 4096]"},
        {{"--threads", "-2"}, "--threads: must be a whole number in [0, 1024], got -2"},
        {{"--seed", "-5"}, "--seed: must be a whole number from 0 to 2^64-1, got -5"},
        {{"--seed", "18446744073709551616"}, "--seed: must be a whole number"},
        {{"--backend", "tpu"}, "--backend"},
    };
    for (const auto &[args, message] : cases) {
        std::vector<std::string> line = args;
        line.push_back("Hello.");
        SCOPED_TRACE(args[0] + " " + args[1]);
        expect_exit(chatterbox_cli(line), kUsage, message);
    }
}

TEST(CliErrors, TextMissingOrEmpty) {
    const fs::path dir = temp_dir("cli");
    expect_exit(chatterbox_cli({"   "}), kUsage, "the text is empty");
    expect_exit(chatterbox_cli({}), kUsage, "the text is empty"); // stdin is /dev/null: empty
    std::ofstream(dir / "blank.txt") << "\n \t\n";
    expect_exit(chatterbox_cli({"-f", (dir / "blank.txt").string()}), kUsage, "the text is empty");
    expect_exit(chatterbox_cli({"\xe2\x80\x8b\x07\xe2\x80\x8e"}), kUsage, "nothing to say"); // ZWSP, BEL, LRM
    expect_exit(chatterbox_cli({"-f", (dir / "absent.txt").string()}), kFailure, "cannot read the text file");
    expect_exit(chatterbox_cli({"-f", (dir / "blank.txt").string(), "Hello."}), kUsage, "not both");
}

TEST(CliErrors, TextOverTheLimit) {
    const fs::path dir = temp_dir("cli");
    const fs::path big = dir / "big.txt";
    std::ofstream(big).close();
    fs::resize_file(big, (size_t(8) << 20) + 1); // one byte over 8 MiB (sparse: nothing is written)
    expect_exit(chatterbox_cli({"-f", big.string()}), kUsage,
                "the text from " + big.string() + " is longer than the limit of 8388608 bytes (8 MiB)");
    ToolInput input;
    input.stdin_path = big.string();
    expect_exit(chatterbox_cli({"-f", "-"}, input), kUsage, "the text from stdin is longer than the limit");
}

TEST(CliErrors, OutputChecks) {
    const fs::path dir = temp_dir("cli");
    expect_exit(chatterbox_cli({"-o", (dir / "out.aiff").string(), "Hello."}), kUsage,
                "unknown audio format \".aiff\"");
    expect_exit(chatterbox_cli({"-o", (dir / "out").string(), "Hello."}), kUsage, "unknown audio format");
    expect_exit(chatterbox_cli({"-o", (dir / "no" / "such" / "out.wav").string(), "Hello."}), kFailure,
                "cannot write the output");
    fs::create_directories(dir / "folder.wav");
    expect_exit(chatterbox_cli({"-o", (dir / "folder.wav").string(), "Hello."}), kFailure, "it is a folder");
    expect_exit(chatterbox_cli({"--stream", "-o", (dir / "out.wav").string(), "Hello."}), kUsage, "excludes");
}

TEST(CliErrors, MissingInputs) {
    const fs::path dir = temp_dir("cli");
    const std::string out = (dir / "out.wav").string();
    expect_exit(chatterbox_cli({"--voice", (dir / "absent.wav").string(), "-o", out, "Hello."}), kFailure,
                "voice file not found: " + (dir / "absent.wav").string());
    expect_exit(chatterbox_cli({"-m", (dir / "absent-model").string(), "-o", out, "Hello."}), kFailure,
                "model not found: " + (dir / "absent-model").string());
    expect_exit(chatterbox_cli({"vc", "-o", out}), kUsage, "--source is required");
    expect_exit(chatterbox_cli({"vc", "--source", (dir / "absent.wav").string(), "-o", out}), kFailure,
                "source audio not found");
}

TEST(CliErrors, DefaultModelMissingSaysWhatToDo) {
    const fs::path dir = temp_dir("cli");
    ToolInput input;
    input.env = {"CHATTERBOX_MODEL=" + (dir / "model").string()};
    const ToolRun run = chatterbox_cli({"-o", (dir / "out.wav").string(), "Hello."}, input);
    expect_exit(run, kFailure, "the default model folder " + (dir / "model").string() + " is missing");
    EXPECT_TRUE(contains(run.err, "chatterbox download"));
    EXPECT_TRUE(contains(run.err, "chatterbox -m MODEL"));
    EXPECT_TRUE(contains(run.err, "copy them into " + (dir / "model").string()));

    input.env = {"XDG_CACHE_HOME=" + (dir / "cache").string(), "CHATTERBOX_MODEL="};
    EXPECT_TRUE(contains(chatterbox_cli({"-o", (dir / "out.wav").string(), "Hello."}, input).err,
                         (dir / "cache" / "chatterbox" / "models" / "chatterbox").string()));
}

TEST(CliErrors, DownloadFromALocalHub) {
    const fs::path dir = temp_dir("cli");
    const fs::path files = dir / "hub" / chatterbox::kOfficialRepo / "resolve" / chatterbox::kOfficialRevision;
    fs::create_directories(files);
    for (const std::string &file : chatterbox::official_model_files())
        std::ofstream(files / file) << "bytes of " << file;
    ToolInput input;
    input.env = {"HF_ENDPOINT=file://" + (dir / "hub").string(), "CHATTERBOX_MODEL=" + (dir / "model").string()};
    const ToolRun run = chatterbox_cli({"download"}, input);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_TRUE(contains(run.err, "the model is complete in " + (dir / "model").string()));
    EXPECT_TRUE(chatterbox::missing_model_files((dir / "model").string()).empty());
}

TEST(CliErrors, DownloadWithoutNetwork) {
    const fs::path dir = temp_dir("cli");
    ToolInput input;
    input.env = {"HF_ENDPOINT=http://127.0.0.1:9"}; // nothing listens there: refused at once
    const ToolRun run = chatterbox_cli({"download", "-m", (dir / "model").string()}, input);
    expect_exit(run, kFailure, "Without network access");
    EXPECT_TRUE(contains(run.err, "copy them into " + (dir / "model").string()));
    EXPECT_TRUE(contains(run.err, "chatterbox -m MODEL"));
    // --download on a synthesis goes the same way.
    input.env.push_back("CHATTERBOX_MODEL=" + (dir / "model").string());
    expect_exit(chatterbox_cli({"--download", "-o", (dir / "out.wav").string(), "Hello."}, input), kFailure,
                "Without network access");
}
