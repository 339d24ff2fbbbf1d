// chatterbox: text-to-speech and voice conversion with Chatterbox from the command line.
//
//   chatterbox [options] "text"                  speak text (or -f FILE, or stdin) into out.wav
//   chatterbox vc --source in.wav --voice v.wav  say the speech of in.wav in another voice
//   chatterbox download                          fetch the official model into the default folder

#include "commands.h"
#include "options.h"

#include <cstdio>
#include <cstring>

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

} // namespace

int main(int argc, char **argv) {
    const char *command = argc > 1 ? argv[1] : "";
    if (std::strcmp(command, "vc") == 0) {
        CLI::App app{"Voice conversion: the speech of --source said in another voice.\n"
                     "  chatterbox vc --source in.wav [--voice target.wav|target.voice] [-o out.wav]",
                     "chatterbox vc"};
        app.footer(kFooter);
        cli::ConversionOptions options;
        cli::add_conversion_options(app, options);
        return run_command(app, options, cli::run_conversion, argc - 1, argv + 1);
    }
    if (std::strcmp(command, "download") == 0) {
        CLI::App app{"Download the official Chatterbox model (about 3.2 GB) from huggingface.co/ResembleAI/chatterbox "
                     "into the model folder, resuming partial files.\n"
                     "  chatterbox download [-m DIR]",
                     "chatterbox download"};
        app.footer(kFooter);
        cli::DownloadOptions options;
        cli::add_download_options(app, options);
        return run_command(app, options, cli::run_download, argc - 1, argv + 1);
    }
    CLI::App app{"Chatterbox text-to-speech: text in, 24 kHz speech out, in the model's voice or one cloned from a "
                 "few seconds of a recording.\n"
                 "  chatterbox [options] \"text\"               speak the text into out.wav (or -o FILE)\n"
                 "  chatterbox [options] -f FILE|-            the text from a file or stdin (also: piped stdin)\n"
                 "  chatterbox --voice ref.wav --save-voice me.voice    save a cloned voice for fast reuse\n"
                 "  chatterbox vc --source in.wav --voice target.wav     voice conversion (chatterbox vc --help)\n"
                 "  chatterbox download                       fetch the official model (chatterbox download --help)",
                 "chatterbox"};
    app.footer(kFooter);
    cli::SynthesisOptions options;
    cli::add_synthesis_options(app, options);
    return run_command(app, options, cli::run_synthesis, argc, argv);
}
