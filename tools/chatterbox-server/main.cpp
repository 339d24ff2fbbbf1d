// chatterbox-server: OpenAI's text-to-speech API (POST /v1/audio/speech) over one loaded model.
//
//   chatterbox-server [-m MODEL] [--backend auto|cpu|cuda] [-t N] [--t3-model v2|v3] [--batch N] [--flow-batch N]
//                     [--vocoder-batch N] [--batch-threads N] [--voice-prefixes N] [--kv-cache f16|f32|q8_0]
//                     [--host 127.0.0.1] [--port 8080] [--api-key KEY] [--sessions N] [--queue N]
//                     [--voices DIR] [--max-upload-mb N] [--max-input-chars N] [--deadline-seconds S] [--drain-seconds
//                     S]
//                     [--wyoming HOST:PORT [--no-http] [--wyoming-connections N]]
//
// --wyoming also serves the Wyoming protocol (Home Assistant's local voice services;
// src/server/wyoming_server.h) on the same model, sessions, queue, voice library and metrics;
// --no-http serves Wyoming only.
//
// SIGTERM or SIGINT drains: new API requests get 503, those in flight finish (for at most
// --drain-seconds, then they are cancelled; a second signal cancels them at once), then the process
// exits. Exit codes: 0 stopped by a signal, 1 failed (model, address), 2 bad command line.

#include "cli/engine_flags.h"
#include "models/chatterbox/model_download.h"
#include "server/server.h"
#include "server/wyoming_server.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <thread>

namespace {

// SIGINT and SIGTERM are blocked in every thread and taken by sigtimedwait on one of them, so no
// code runs in a signal handler.
sigset_t stop_signals() {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    return signals;
}

// Waits up to `timeout` for SIGINT/SIGTERM; the signal's number, or 0.
int wait_for_stop_signal(std::chrono::milliseconds timeout) {
    const sigset_t signals = stop_signals();
    const timespec wait{time_t(timeout.count() / 1000), long(timeout.count() % 1000) * 1000000L};
    const int signal = sigtimedwait(&signals, nullptr, &wait);
    return signal > 0 ? signal : 0;
}

// -m as given, else the chatterbox CLI's default location (model_download.h).
std::string model_path(const std::string &option) {
    if (!option.empty()) return option;
    const std::string path = chatterbox::default_model_path(chatterbox::ModelEnvironment::from_process());
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec) && !chatterbox::missing_model_files(path).empty())
        chatterbox::fail("no model in ", path, " (missing ",
                         chatterbox::file_list(chatterbox::missing_model_files(path)),
                         "): run `chatterbox download`, or pass -m MODEL (a folder or a .gguf)");
    return path;
}

} // namespace

int main(int argc, char **argv) {
    CLI::App app{"Chatterbox text-to-speech server: OpenAI's POST /v1/audio/speech (wav, pcm, flac; streamed as "
                 "audio or SSE), a voice library (/v1/audio/voices), voice conversion (/v1/audio/voice-conversion), "
                 "GET /v1/models, /health, /ready, /metrics.",
                 "chatterbox-server"};
    app.footer("Model: without -m, $CHATTERBOX_MODEL (a folder or .gguf), else $XDG_CACHE_HOME/chatterbox/models/"
               "chatterbox, else ~/.cache/chatterbox/models/chatterbox (chatterbox download fetches it).");
    chatterbox::server::ServerOptions options;
    if (const char *key = std::getenv("CHATTERBOX_API_KEY")) options.api_key = key;
    // The engine's table (engine_settings.h): -m, --backend, -t (each session's threads), --t3-model, the
    // batches, --batch-threads, --voice-prefixes (kept for 16 voices here: a server meets the same voices
    // again), --kv-cache.
    chatterbox::EngineSettings engine_settings;
    engine_settings.voice_prefixes = 16;
    chatterbox::cli_flags::add_engine_flags(app, engine_settings);
    app.add_option("--host", options.host, "address to listen on (loopback by default)")->capture_default_str();
    app.add_option("--port", options.port, "port to listen on, 0 = any free one")
        ->capture_default_str()
        ->check(CLI::Range(0, 65535));
    app.add_option("--api-key", options.api_key,
                   "require Authorization: Bearer KEY on /v1/ (default: $CHATTERBOX_API_KEY)");
    app.add_option("--sessions", options.sessions, "requests synthesised at the same time (default with --batch N: N)")
        ->capture_default_str()
        ->check(CLI::Range(1, 256));
    app.add_option("--queue", options.queue, "requests waiting for a session before 503")
        ->capture_default_str()
        ->check(CLI::Range(0, 4096));
    app.add_option("--voices", options.voices_dir,
                   "voice library folder (default: $XDG_DATA_HOME/chatterbox/voices, else "
                   "~/.local/share/chatterbox/voices; created on the first upload)");
    size_t max_upload_mb = options.max_upload_bytes >> 20;
    app.add_option("--max-upload-mb", max_upload_mb, "largest multipart upload (voices, voice conversion), in MiB")
        ->capture_default_str()
        ->check(CLI::Range(1, 4096));
    app.add_option("--max-input-chars", options.limits.max_input_chars,
                   "longest text of one request (Unicode characters; OpenAI's own limit by default): longer is "
                   "answered 413, and a streamed Wyoming sentence longer is refused")
        ->capture_default_str()
        ->check(CLI::Range(size_t(1), size_t(1) << 24));
    app.add_option("--deadline-seconds", options.deadline_seconds,
                   "a synthesis running longer is cancelled and answered 504, 0 = no deadline")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1e7));
    double drain_seconds = 30;
    app.add_option("--drain-seconds", drain_seconds,
                   "on SIGTERM/SIGINT, how long requests in flight may run on before they are cancelled")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1e7));
    // --- Wyoming
    std::string wyoming_address;
    bool no_http = false;
    chatterbox::server::WyomingOptions wyoming_options;
    app.add_option("--wyoming", wyoming_address,
                   "also serve the Wyoming protocol (Home Assistant) on HOST:PORT, e.g. 0.0.0.0:10200; port 0 = any "
                   "free one");
    app.add_flag("--no-http", no_http, "serve no HTTP: Wyoming only (needs --wyoming)");
    app.add_option("--wyoming-connections", wyoming_options.max_connections,
                   "Wyoming connections open at the same time; more are refused")
        ->capture_default_str()
        ->check(CLI::Range(1, 4096));
    // ---
    try {
        app.parse(argc, argv);
        if (no_http && wyoming_address.empty()) throw CLI::ValidationError("--no-http", "needs --wyoming HOST:PORT");
        if (!wyoming_address.empty()) {
            try {
                chatterbox::server::parse_wyoming_address(wyoming_address, wyoming_options);
            } catch (const chatterbox::InvalidArgument &e) {
                throw CLI::ValidationError("--wyoming", e.what());
            }
        }
    } catch (const CLI::ParseError &e) {
        return app.exit(e) == 0 ? 0 : 2; // --help is a ParseError with code 0; 2: bad command line, as chatterbox
    }
    options.max_upload_bytes = max_upload_mb << 20;

    // Before any thread starts, so that every thread inherits the mask.
    const sigset_t signals = stop_signals();
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    try {
        engine_settings.model = model_path(engine_settings.model);
        const chatterbox::PipelineModelOptions engine_options =
            engine_settings.engine_options(); // checked before loading
        const chatterbox::RuntimeOptions runtime_options = engine_settings.runtime_options();
        options.threads = engine_settings.threads;
        // Requests share the batch only if as many run at once.
        const int widest_batch =
            std::max({engine_settings.batch, engine_settings.flow_batch, engine_settings.vocoder_batch});
        if (widest_batch > 0 && app.count("--sessions") == 0) options.sessions = widest_batch;
        const chatterbox::PipelineModel engine(engine_options);
        chatterbox::Runtime runtime(engine, runtime_options);
        chatterbox::server::Server server(runtime, options);
        std::optional<chatterbox::server::WyomingServer> wyoming;
        if (!wyoming_address.empty()) wyoming.emplace(server, wyoming_options);
        const int port = no_http ? -1 : server.bind();
        const int wyoming_port = wyoming ? wyoming->bind() : -1;
        std::atomic<bool> served{false};
        std::thread drainer([&] {
            while (!served && !wait_for_stop_signal(std::chrono::milliseconds(200))) {
            }
            if (served) return;
            std::fprintf(stderr, "chatterbox-server: draining: new requests get 503; %d in flight may run %g s more\n",
                         server.watch().in_flight(), drain_seconds);
            const int cancelled =
                server.drain(drain_seconds, [] { return wait_for_stop_signal(std::chrono::milliseconds(100)) != 0; });
            if (wyoming) wyoming->stop(); // the drain has let its syntheses finish
            std::fprintf(stderr, "chatterbox-server: stopped (%d request(s) cancelled)\n", cancelled);
        });
        const auto size = [](int n) { return n == 0 ? std::string("off") : std::to_string(n); };
        const std::string batching =
            widest_batch == 0 ? "off"
                              : "T3 " + size(engine_settings.batch) + ", flow " + size(engine_settings.flow_batch) +
                                    ", vocoder " + size(engine_settings.vocoder_batch) +
                                    (engine_settings.batch_threads > 0
                                         ? " on " + std::to_string(engine_settings.batch_threads) + " thread(s)"
                                         : std::string(" on all cores"));
        std::fprintf(stderr, "chatterbox-server: %s; %d session(s), queue %d, batches %s, KV cache %s\n",
                     engine.description().c_str(), options.sessions, options.queue, batching.c_str(),
                     engine_settings.kv_cache.c_str());
        if (!no_http)
            std::fprintf(stderr, "chatterbox-server: listening on http://%s:%d%s\n", options.host.c_str(), port,
                         options.api_key.empty() ? "" : " (API key required)");
        if (wyoming)
            std::fprintf(stderr,
                         "chatterbox-server: Wyoming on tcp://%s:%d (no API key: keep it on a trusted network)\n",
                         wyoming_options.host.c_str(), wyoming_port);
        std::fprintf(stderr, "chatterbox-server: voice library %s (%zu voices)\n", server.voices().dir().c_str(),
                     server.voices().list().size());
        if (no_http) {
            wyoming->run(); // until the drainer's stop()
        } else {
            std::thread wyoming_thread;
            if (wyoming)
                wyoming_thread = std::thread([&] {
                    try {
                        wyoming->run();
                    } catch (const std::exception &e) {
                        std::fprintf(stderr, "chatterbox-server: Wyoming stopped: %s\n", e.what());
                        server.stop();
                    }
                });
            server.run();
            if (wyoming) wyoming->stop();
            if (wyoming_thread.joinable()) wyoming_thread.join();
        }
        served = true;
        drainer.join();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "chatterbox-server: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
