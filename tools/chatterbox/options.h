#pragma once
// Command-line options of the three commands (synthesis, vc, download), their ranges and the checks
// that need no model. Exit codes: 0 ok, 1 runtime failure, 2 usage error (UsageError).

#include "chatterbox/chatterbox.h"
#include "core/error.h"
#include "models/chatterbox/engine_settings.h"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace cli {

// A command line that cannot be run as written (exit code 2).
class UsageError : public chatterbox::Error {
  public:
    using chatterbox::Error::Error;
};

// Raw PCM on stdout with --stream: signed 16-bit little-endian, mono, at the engine's 24 kHz.
constexpr const char *kStreamFormat = "s16le mono 24000 Hz";

struct EngineArguments {
    // -m (""; the default model location), --backend, -t, --t3-model: the engine's table
    // (engine_settings.h), less the shared services a single request has no use for.
    chatterbox::EngineSettings settings;
    bool download = false; // fetch a missing default model without asking
    bool quiet = false;
};

struct OutputArguments {
    std::string path = "out.wav";
    bool stream = false;
    CLI::Option *path_option = nullptr; // to tell an explicit -o from the default
};

struct SynthesisArguments {
    EngineArguments engine;
    OutputArguments output;
    std::vector<std::string> words; // the text as arguments, joined with spaces
    std::string text_file;          // -f FILE, "-" for stdin
    std::string voice;              // a recording or a saved voice; "" : built-in
    std::string save_voice;
    std::string language;   // -l: the multilingual model's language code; params.language points here when set
    std::string flow_noise; // --flow-noise FILE.npy
    chatterbox_synthesis_params params = chatterbox_synthesis_default_params();
};

struct ConversionArguments {
    EngineArguments engine;
    OutputArguments output;
    std::string source;
    std::string voice;
    std::string flow_noise; // --flow-noise FILE.npy
    chatterbox_synthesis_params params = chatterbox_synthesis_default_params();
};

struct DownloadArguments {
    std::string model;               // "" : the default model location of the variant
    std::string variant = "english"; // which official repository: english, turbo, nano
    std::string t3_model;            // multilingual: v2 ("", the default) or v3
    bool quiet = false;
};

void add_synthesis_options(CLI::App &app, SynthesisArguments &options);
void add_conversion_options(CLI::App &app, ConversionArguments &options);
void add_download_options(CLI::App &app, DownloadArguments &options);

// The text to speak: the arguments, -f FILE, or stdin (with "-f -", or when stdin is not a terminal).
// Returns "" when there is nothing to speak because only --save-voice was asked for. Throws UsageError
// for conflicting or missing text, text that is only blanks or longer than kMaxTextBytes (read no
// further than that), Error when a file cannot be read.
constexpr size_t kMaxTextBytes = size_t(8) << 20; // 8 MiB: a long novel; synthesis takes hours before then
std::string gather_text(const SynthesisArguments &options);

// Checks that need no model: the output's format and folder (or stdout for --stream). Throws
// UsageError or Error (a folder that does not exist or cannot be written).
void check_output(const OutputArguments &output);
// A file the command reads: Error when it does not exist or is not a regular file.
void check_input_file(const std::string &path, const std::string &what);
// A file the command writes: Error when its folder does not exist or cannot be written.
void check_writable(const std::string &path, const std::string &what);

} // namespace cli
