#include "wyoming_bench.h"

#include "core/error.h"
#include "server/server.h"
#include "server/wyoming_connection.h"
#include "server/wyoming_server.h"
#include "timing.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <thread>

namespace chatterbox::bench {
namespace {

using nlohmann::json;
namespace wyoming = server::wyoming;

// A blocking loopback client on the server's own framing (the tests check that framing against an
// independent client).
class Client {
  public:
    explicit Client(int port) : parser_(wyoming::EventLimits{1 << 20, 1 << 20, 1 << 20}) {
        socket_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(uint16_t(port));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (socket_ < 0 || connect(socket_, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0)
            fail("wyoming bench: cannot connect to port ", port, ": ", std::strerror(errno));
    }
    ~Client() { ::close(socket_); }
    Client(const Client &) = delete;
    Client &operator=(const Client &) = delete;

    void send(const std::string &type, const json &data = json::object()) {
        if (!server::send_all(socket_, wyoming::encode_event(type, data))) fail("wyoming bench: the server hung up");
    }

    wyoming::Event read() {
        for (;;) {
            if (std::optional<wyoming::Event> event = parser_.next()) {
                if (event->type == "error") fail("wyoming bench: the server answered ", event->data.dump());
                return std::move(*event);
            }
            char buffer[16 << 10];
            const ssize_t n = recv(socket_, buffer, sizeof buffer, 0);
            if (n <= 0) fail("wyoming bench: the server closed the connection");
            parser_.feed(buffer, size_t(n));
        }
    }

    // Reads until an event of `type`; returns the audio bytes read on the way.
    size_t read_until(const std::string &type) {
        size_t audio_bytes = 0;
        for (wyoming::Event event = read(); event.type != type; event = read()) audio_bytes += event.payload.size();
        return audio_bytes;
    }

  private:
    int socket_ = -1;
    wyoming::EventParser parser_;
};

// Each word with the space after it, as an LLM's tokens arrive.
std::vector<std::string> words_of(const std::string &sentence) {
    std::vector<std::string> words;
    std::istringstream in(sentence);
    for (std::string word; in >> word;) words.push_back(word + " ");
    return words;
}

json spread_json(const std::vector<double> &samples) {
    const Spread s = spread_of(samples);
    return {{"min", s.min},
            {"median", s.median},
            {"mean", s.mean},
            {"max", *std::max_element(samples.begin(), samples.end())}};
}

} // namespace

json run_wyoming_bench(const BackendOptions &backend, const WyomingBenchArguments &options) {
    if (options.repeats < 1) fail("wyoming bench: --repeats is ", options.repeats);
    if (options.sentences.size() < 2) fail("wyoming bench: needs two sentences or more");
    PipelineModelOptions engine_options;
    engine_options.model_path = options.weights;
    engine_options.backend = backend;
    engine_options.backend.threads = options.session_threads;
    const PipelineModel engine(engine_options);
    Runtime runtime(engine, RuntimeOptions{});

    server::ServerOptions server_options;
    server_options.port = 0;
    server_options.threads = options.session_threads;
    server_options.voices_dir = "/nonexistent-chatterbox-bench-voices"; // an empty library, never written
    server::Server server(runtime, server_options);
    server::WyomingOptions wyoming_options;
    wyoming_options.port = 0;
    server::WyomingServer wyoming(server, wyoming_options);
    const int port = wyoming.bind();
    std::thread serving([&] { wyoming.run(); });

    const json parameters = {
        {"seed", 1}, {"max_new_tokens", options.max_new_tokens}, {"ignore_eos", options.ignore_eos}};
    std::vector<double> sentence_ms, synthesize_ms, total_ms;
    size_t audio_bytes = 0;
    const double cpu_start = process_cpu_ms();
    const Clock::time_point start = Clock::now();
    try {
        for (int r = 0; r < options.repeats; ++r) {
            {
                Client client(port);
                const Clock::time_point sent = Clock::now();
                client.send("synthesize", {{"text", options.sentences[0]}, {"chatterbox", parameters}});
                client.read_until("audio-chunk");
                synthesize_ms.push_back(ms_since(sent));
                client.read_until("audio-stop");
            }
            Client client(port);
            const Clock::time_point stream_start = Clock::now();
            client.send("synthesize-start", {{"chatterbox", parameters}});
            for (const std::string &word : words_of(options.sentences[0]))
                client.send("synthesize-chunk", {{"text", word}});
            const std::vector<std::string> second = words_of(options.sentences[1]);
            client.send("synthesize-chunk", {{"text", second[0]}}); // the first sentence is complete now
            const Clock::time_point complete = Clock::now();
            client.read_until("audio-start");
            size_t bytes = client.read_until("audio-chunk");
            sentence_ms.push_back(ms_since(complete));
            for (size_t i = 1; i < second.size(); ++i) client.send("synthesize-chunk", {{"text", second[i]}});
            for (size_t s = 2; s < options.sentences.size(); ++s)
                for (const std::string &word : words_of(options.sentences[s]))
                    client.send("synthesize-chunk", {{"text", word}});
            client.send("synthesize-stop");
            bytes += client.read_until("synthesize-stopped");
            total_ms.push_back(ms_since(stream_start));
            audio_bytes = bytes;
        }
    } catch (...) {
        wyoming.stop();
        serving.join();
        throw;
    }
    const double wall_s = ms_since(start) / 1e3;
    const double cpu_s = (process_cpu_ms() - cpu_start) / 1e3;
    wyoming.stop();
    serving.join();
    return {{"repeats", options.repeats},
            {"sentence_to_first_audio_ms", spread_json(sentence_ms)},
            {"synthesize_to_first_audio_ms", spread_json(synthesize_ms)},
            {"stream_total_ms", spread_json(total_ms)},
            {"audio_s", double(audio_bytes) / 2 / engine.sample_rate()},
            {"cpu_s", cpu_s},
            {"wall_s", wall_s}};
}

} // namespace chatterbox::bench
