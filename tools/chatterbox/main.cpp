// chatterbox: text-to-speech and voice conversion with Chatterbox from the command line.
//
//   chatterbox [options] "text"                  speak text (or -f FILE, or stdin) into out.wav
//   chatterbox vc --source in.wav --voice v.wav  say the speech of in.wav in another voice
//   chatterbox download                          fetch the official model into the default folder

#include "commands.h"
#include "options.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr const char *kFooter = R"(
Exit codes: 0 done, 1 failed while running (files, model, audio, network), 2 bad command line.

Model: without -m, $CHATTERBOX_MODEL (a folder or .gguf), else $XDG_CACHE_HOME/chatterbox/models/chatterbox,
else ~/.cache/chatterbox/models/chatterbox. When that folder lacks the official files, chatterbox offers to
download them (about 3.2 GB) from huggingface.co/ResembleAI/chatterbox ($HF_ENDPOINT selects a mirror);
--download does it without asking, `chatterbox download` only downloads. Interrupted downloads resume.

--stream writes signed 16-bit little-endian mono PCM at 24000 Hz to stdout as it is made:
  chatterbox --stream "Hello there." | aplay -f S16_LE -r 24000 -c 1
  chatterbox --stream "Hello there." | ffplay -f s16le -ar 24000 -ch_layout mono -nodisp -)";

// Parses and runs one command; maps errors to exit codes and messages on stderr.
template <class Options>
int run_command(CLI::App &app, Options &options, int (*run)(const Options &), int argc, char **argv) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        return app.exit(e) == 0 ? cli::kExitOk : cli::kExitUsage; // --help is a ParseError with code 0
    }
    try {
        return run(options);
    } catch (const cli::UsageError &e) {
        std::fprintf(stderr, "chatterbox: error: %s\nRun with --help for more information.\n", e.what());
        return cli::kExitUsage;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "chatterbox: error: %s\n", e.what());
        return cli::kExitFailure;
    }
}

// A subcommand (vc, download): its own command line, footer, options and run.
template <class Options>
int run_subcommand(const char *description, const char *name, void (*add_options)(CLI::App &, Options &),
                   int (*run)(const Options &), int argc, char **argv) {
    CLI::App app{description, name};
    app.footer(kFooter);
    Options options;
    add_options(app, options);
    return run_command(app, options, run, argc, argv);
}

// Where a subcommand's name stands: the first argument that is neither an option of the main
// command nor an option's value, when it is "vc" or "download"; 0 when there is none (then the
// arguments are the main command's, its text included). So global flags may come before the name
// as well as after it.
int subcommand_position(int argc, char **argv, const CLI::App &main_command) {
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--") return 0;
        if (arg.size() > 1 && arg[0] == '-') {
            // "--name value" or "-n value" (not "--name=value" or "-nvalue"): skip the value too.
            const CLI::Option *option = main_command.get_option_no_throw(arg.substr(0, arg.find('=')));
            const bool value_follows = arg.rfind("--", 0) == 0 ? arg.find('=') == std::string::npos : arg.size() == 2;
            if (option && option->get_expected_min() > 0 && value_follows) ++i;
            continue;
        }
        return arg == "vc" || arg == "download" ? i : 0;
    }
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    CLI::App app{"Chatterbox text-to-speech: text in, 24 kHz speech out, in the model's voice or one cloned from a "
                 "few seconds of a recording.\n"
                 "  chatterbox [options] \"text\"               speak the text into out.wav (or -o FILE)\n"
                 "  chatterbox [options] -f FILE|-            the text from a file or stdin (also: piped stdin)\n"
                 "  chatterbox --voice ref.wav --save-voice me.voice    save a cloned voice for fast reuse\n"
                 "  chatterbox vc --source in.wav --voice target.wav     voice conversion (chatterbox vc --help)\n"
                 "  chatterbox download                       fetch the official model (chatterbox download --help)",
                 "chatterbox"};
    app.footer(kFooter);
    cli::SynthesisArguments options;
    cli::add_synthesis_options(app, options);
    const int at = subcommand_position(argc, argv, app);
    if (at == 0) return run_command(app, options, cli::run_synthesis, argc, argv);
    // The subcommand parses its name (as its program name), then the flags given before it, then the rest.
    std::vector<char *> args{argv[at]};
    args.insert(args.end(), argv + 1, argv + at);
    args.insert(args.end(), argv + at + 1, argv + argc);
    const int count = int(args.size());
    if (std::strcmp(argv[at], "vc") == 0)
        return run_subcommand("Voice conversion: the speech of --source said in another voice.\n"
                              "  chatterbox vc --source in.wav [--voice target.wav|target.voice] [-o out.wav]",
                              "chatterbox vc", cli::add_conversion_options, cli::run_conversion, count, args.data());
    return run_subcommand("Download the official Chatterbox model (about 3.2 GB) from "
                          "huggingface.co/ResembleAI/chatterbox into the model folder, resuming partial files.\n"
                          "  chatterbox download [-m DIR]",
                          "chatterbox download", cli::add_download_options, cli::run_download, count, args.data());
}
