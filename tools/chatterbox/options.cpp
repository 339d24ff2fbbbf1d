#include "options.h"

#include "cli/engine_flags.h"
#include "text/unicode.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <sstream>
#include <string_view>
#include <unistd.h>

namespace cli {

namespace fs = std::filesystem;
using chatterbox::concat;
using chatterbox::fail;

namespace {

// A closed range [lo, hi], or (lo, hi] when lo itself is not allowed (a temperature of 0 divides by 0).
struct Range {
    double lo, hi;
    bool lo_excluded = false;
    bool integer = false;

    std::string text() const { return concat(lo_excluded ? "(" : "[", lo, ", ", hi, "]"); }
};

// A CLI11 check with a message such as "--top-p: must be in (0, 1], got 1.5".
CLI::Validator in_range(const Range range) {
    return CLI::Validator(
        [range](std::string &value) -> std::string {
            std::istringstream in(value);
            double number = 0;
            if (!(in >> number) || !(in >> std::ws).eof()) return concat("\"", value, "\" is not a number");
            const bool above_lo = range.lo_excluded ? number > range.lo : number >= range.lo;
            if (!above_lo || number > range.hi) return concat("must be in ", range.text(), ", got ", value);
            if (range.integer && number != double(static_cast<long long>(number)))
                return concat("must be a whole number, got ", value);
            return "";
        },
        range.text());
}

// One synthesis parameter of the engine's table (chatterbox_synthesis_param_info): a ranged one as
// an option with its range, meaning and default, an on/off one as a flag that turns its default
// around; a given value goes into params through the C API's setter.
void add_parameter(CLI::App &app, chatterbox_synthesis_params &params, const chatterbox_param_info &info) {
    const std::string name = info.name;
    const auto set = [&params, name](const double &value) {
        if (chatterbox_synthesis_params_set(&params, name.c_str(), value) != CHATTERBOX_OK)
            throw UsageError(chatterbox_last_error());
    };
    if (info.is_flag) {
        const double turned = info.default_value != 0 ? 0 : 1;
        app.add_flag_callback(
            concat("--", info.option), [set, turned] { set(turned); }, info.meaning);
        return;
    }
    app.add_option_function<double>(concat("--", info.option), set, info.meaning)
        ->type_name(info.integer ? "INT" : "FLOAT")
        ->check(in_range({info.min, info.max, info.min_excluded != 0, info.integer != 0}))
        ->default_str(concat(info.default_value));
}

// Every parameter of the table, or only those named in `only`.
void add_parameter_table(CLI::App &app, chatterbox_synthesis_params &params,
                         std::initializer_list<std::string_view> only = {}) {
    for (size_t i = 0; i < chatterbox_synthesis_param_count(); ++i) {
        const chatterbox_param_info &info = *chatterbox_synthesis_param_info(i);
        if (only.size() == 0 || std::find(only.begin(), only.end(), info.name) != only.end())
            add_parameter(app, params, info);
    }
}

// --guard NAME: the speech guards by name, on top of their table flags (--guard-alignment ...).
void add_guard_option(CLI::App &app, chatterbox_synthesis_params &params) {
    const auto set = [&params](const char *name, double value) {
        if (chatterbox_synthesis_params_set(&params, name, value) != CHATTERBOX_OK)
            throw UsageError(chatterbox_last_error());
    };
    app.add_option_function<std::vector<std::string>>(
           "--guard",
           [set](const std::vector<std::string> &names) {
               for (const std::string &name : names) {
                   if (name == "alignment")
                       set("alignment_guard", 1);
                   else // "none": every guard off, the official loop
                       for (const char *flag : {"length_bound", "stop_guards", "alignment_guard"}) set(flag, 0);
               }
           },
           "speech guards: alignment (the alignment stream analyzer, English and multilingual), none (no length "
           "bound, stop rules or analyzer)")
        ->type_name("NAME")
        ->check(CLI::Validator(
            [](std::string &name) {
                return name == "alignment" || name == "none" ? std::string()
                                                             : "expected alignment or none, got " + name;
            },
            "alignment|none"));
}

void add_engine_options(CLI::App &app, EngineArguments &engine) {
    chatterbox::cli_flags::add_engine_flags(app, engine.settings, chatterbox::cli_flags::EngineFlags::one_request);
    app.add_flag("--download", engine.download,
                 "download the official model into the model folder when files are missing, without asking");
    app.add_flag("-q,--quiet", engine.quiet, "no progress bar, summary or model description on stderr");
}

void add_output_options(CLI::App &app, OutputArguments &output) {
    output.path_option = app.add_option("-o,--output", output.path,
                                        "output audio file; the format follows the extension: .wav (16-bit PCM), "
                                        ".flac, .ogg (Vorbis) or .mp3")
                             ->capture_default_str();
    app.add_flag("--stream", output.stream,
                 concat("write raw PCM (", kStreamFormat,
                        ") to stdout as the audio is made, instead of a file; e.g. "
                        "| aplay -f S16_LE -r 24000 -c 1"))
        ->excludes(output.path_option);
}

void add_seed_option(CLI::App &app, chatterbox_synthesis_params &params) {
    // Checked here: the number parser wraps "-5" around to 2^64 - 5 and saturates on overflow.
    const CLI::Validator whole_number(
        [](std::string &value) -> std::string {
            const std::string max = "18446744073709551615";
            const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
            const bool fits = value.size() < max.size() || (value.size() == max.size() && value <= max);
            return digits && fits ? "" : concat("must be a whole number from 0 to 2^64-1, got ", value);
        },
        "0 to 2^64-1");
    app.add_option("--seed", params.seed, "random seed: the same seed, input, voice and model give the same audio")
        ->check(whole_number)
        ->capture_default_str();
}

void add_flow_noise_option(CLI::App &app, std::string &path) {
    app.add_option("--flow-noise", path,
                   "start the flow from this noise instead of noise drawn from the seed: a float32 .npy of shape "
                   "(80, frames) or (1, 80, frames), e.g. the z an official run started from; each text piece "
                   "reads it from the first frame (its voice prompt's frames, then 2 per speech token)")
        ->check(CLI::ExistingFile);
}

bool is_blank(const std::string &text) {
    return std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c); });
}

std::string lower_extension(const std::string &path) {
    std::string ext = fs::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    return ext;
}

} // namespace

void add_synthesis_options(CLI::App &app, SynthesisArguments &options) {
    chatterbox_synthesis_params &p = options.params;
    app.add_option("text", options.words, "the text to speak (several arguments are joined with spaces)");
    app.add_option("-f,--file", options.text_file, "read the text from FILE (\"-\": stdin)");
    app.add_option("--voice", options.voice,
                   "the voice: a recording (wav/flac/ogg/mp3, a few seconds of clean speech) or a voice file "
                   "saved with --save-voice (default: the model's built-in voice)");
    app.add_option("--save-voice", options.save_voice,
                   "save the voice to FILE for fast reuse with --voice; without text, only the voice is saved");
    std::string languages;
    for (size_t i = 0; i < chatterbox_language_count(); ++i)
        languages += concat(i ? ", " : "", chatterbox_language_code(i), " (", chatterbox_language_name(i), ")");
    app.add_option("-l,--language", options.language,
                   "the language of the text, for the multilingual model (required there; the other models take "
                   "none): " +
                       languages);
    add_output_options(app, options.output);
    add_engine_options(app, options.engine);
    add_parameter_table(app, p);
    add_guard_option(app, p);
    add_seed_option(app, p);
    add_flow_noise_option(app, options.flow_noise);
}

void add_conversion_options(CLI::App &app, ConversionArguments &options) {
    app.add_option("--source", options.source, "the speech to convert (any audio file)")->required();
    app.add_option("--voice", options.voice,
                   "the target voice: a recording or a voice file saved with --save-voice (default: the built-in "
                   "voice)");
    add_output_options(app, options.output);
    add_engine_options(app, options.engine);
    add_parameter_table(app, options.params, {"cfm_steps"}); // the flow is the conversion's own stage
    add_seed_option(app, options.params);
    add_flow_noise_option(app, options.flow_noise);
}

void add_download_options(CLI::App &app, DownloadArguments &options) {
    app.add_option(
        "-m,--model", options.model,
        "folder to download into (default: $CHATTERBOX_MODEL, else "
        "$XDG_CACHE_HOME/chatterbox/models/chatterbox or ~/.cache/chatterbox/models/chatterbox; "
        "for multilingual, turbo and nano chatterbox-multilingual, chatterbox-turbo, chatterbox-nano beside it)");
    app.add_option("--variant", options.variant,
                   "the official model to fetch: english (ResembleAI/chatterbox), multilingual (ResembleAI/chatterbox, "
                   "its v2 files, or v3's with --t3-model v3), turbo (ResembleAI/chatterbox-turbo) or nano "
                   "(ResembleAI/chatterbox-nano)")
        ->capture_default_str()
        ->check(CLI::IsMember({"english", "multilingual", "turbo", "nano"}));
    app.add_option("--t3-model", options.t3_model, "multilingual: which T3 to fetch, v2 (default) or v3");
    app.add_flag("-q,--quiet", options.quiet, "no progress on stderr");
}

namespace {

// At most kMaxTextBytes from `in`; one byte more is refused before it is kept.
std::string read_text(std::istream &in, const std::string &source) {
    std::string text;
    char block[1 << 16];
    while (text.size() <= kMaxTextBytes && in.read(block, sizeof block).gcount() > 0)
        text.append(block, size_t(in.gcount()));
    if (text.size() > kMaxTextBytes)
        throw UsageError(concat("the text from ", source, " is longer than the limit of ", kMaxTextBytes,
                                " bytes (8 MiB); split it into several runs"));
    return text;
}

} // namespace

std::string gather_text(const SynthesisArguments &options) {
    if (!options.words.empty() && !options.text_file.empty())
        throw UsageError("give the text either as arguments or with -f, not both");
    std::string text;
    const bool from_stdin = options.text_file == "-" || (options.words.empty() && options.text_file.empty() &&
                                                         options.save_voice.empty() && !isatty(STDIN_FILENO));
    if (!options.words.empty()) {
        for (const std::string &word : options.words) text += (text.empty() ? "" : " ") + word;
    } else if (from_stdin) {
        text = read_text(std::cin, "stdin");
    } else if (!options.text_file.empty()) {
        std::ifstream in(options.text_file, std::ios::binary);
        if (!in) fail("cannot read the text file ", options.text_file, ": ", std::strerror(errno));
        text = read_text(in, options.text_file);
    } else if (!options.save_voice.empty()) {
        return ""; // only the voice is saved
    } else {
        throw UsageError("no text: chatterbox \"Hello there.\", -f FILE, or text on stdin (see --help)");
    }
    if (is_blank(text)) throw UsageError("the text is empty: there is nothing to say");
    if (!chatterbox::text::has_something_to_say(text)) throw UsageError(chatterbox::text::kNothingToSay);
    return text;
}

void check_output(const OutputArguments &output) {
    if (output.stream) {
        if (isatty(STDOUT_FILENO))
            throw UsageError(concat("--stream writes raw audio (", kStreamFormat,
                                    ") to stdout, which is a terminal: pipe it to a player, e.g. "
                                    "| aplay -f S16_LE -r 24000 -c 1, or write a file with -o"));
        return;
    }
    const std::string ext = lower_extension(output.path);
    if (ext != ".wav" && ext != ".flac" && ext != ".ogg" && ext != ".mp3")
        throw UsageError(concat("-o ", output.path, ": unknown audio format \"", ext,
                                "\" (the extension chooses it: .wav, .flac, .ogg or .mp3)"));
    check_writable(output.path, "output");
}

void check_input_file(const std::string &path, const std::string &what) {
    std::error_code ec;
    if (!fs::exists(path, ec)) fail(what, " not found: ", path);
    if (!fs::is_regular_file(path, ec)) fail(what, " is not a file: ", path);
}

void check_writable(const std::string &path, const std::string &what) {
    const fs::path parent = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
    std::error_code ec;
    if (fs::is_directory(path, ec)) fail("cannot write the ", what, " ", path, ": it is a folder");
    if (!fs::is_directory(parent, ec)) fail("cannot write the ", what, " ", path, ": no folder ", parent.string());
    if (access(parent.c_str(), W_OK) != 0)
        fail("cannot write the ", what, " ", path, ": folder ", parent.string(), " is not writable");
}

} // namespace cli
