// needs: tiny-model tiny-multilingual-model
// chatterbox-server's Wyoming side (src/server/wyoming_server.h) on the tiny model, over loopback,
// with a client written here from the protocol's description (a JSON header line with type,
// data_length and payload_length, then the data's JSON, then the payload), not with the server's own
// parser: describe -> info lists the built-in voice and the library's; synthesize gives, chunk for
// chunk concatenated, the HTTP API's PCM for the same request; streamed text is spoken sentence by
// sentence (the first audio arrives before the last text is sent); malformed and oversized events
// get an error event and a closed connection while the server goes on serving; a client that drops
// mid-stream cancels its synthesis; connections beyond the limit are refused; SIGTERM drains;
// chatterbox-bench wyoming runs; on the multilingual model info lists its 23 languages and
// voice.language picks the language spoken.

#include "server/voice_library.h"
#include "server/wyoming_server.h"
#include "support/server_test_support.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <regex>

using namespace chatterbox;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

struct WyomingEvent {
    std::string type;
    json data = json::object();
    std::string payload;
};

// A Wyoming client on 127.0.0.1:port. Every read waits at most 120 s (ADD_FAILURE past that).
class Client {
  public:
    explicit Client(int port) {
        socket_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(uint16_t(port));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(socket_, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0)
            ADD_FAILURE() << "cannot connect to port " << port;
        const timeval timeout{120, 0};
        setsockopt(socket_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    }
    ~Client() { hang_up(); }
    Client(const Client &) = delete;
    Client &operator=(const Client &) = delete;

    void hang_up() {
        if (socket_ >= 0) ::close(socket_);
        socket_ = -1;
    }

    void send_raw(const std::string &bytes) {
        size_t sent = 0;
        while (sent < bytes.size()) {
            const ssize_t n = ::send(socket_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
            if (n <= 0) return; // the server closed: what it said is still there to read
            sent += size_t(n);
        }
    }

    // The header line carries type and the lengths; the data follows as its own JSON.
    void send(const std::string &type, const json &data = json::object(), const std::string &payload = "") {
        json header = {{"type", type}};
        const std::string data_text = data.empty() ? "" : data.dump();
        if (!data_text.empty()) header["data_length"] = data_text.size();
        if (!payload.empty()) header["payload_length"] = payload.size();
        send_raw(header.dump() + "\n" + data_text + payload);
    }

    // The next event; nullopt when the server closed the connection.
    std::optional<WyomingEvent> read() {
        size_t newline;
        while ((newline = buffer_.find('\n')) == std::string::npos)
            if (!fill()) return std::nullopt;
        const json header = json::parse(buffer_.substr(0, newline));
        buffer_.erase(0, newline + 1);
        WyomingEvent event{header.at("type").get<std::string>()};
        if (header.contains("data") && header["data"].is_object()) event.data = header["data"];
        const size_t data_length = header.value("data_length", size_t(0));
        const size_t payload_length = header.value("payload_length", size_t(0));
        while (buffer_.size() < data_length + payload_length)
            if (!fill()) {
                ADD_FAILURE() << "the connection closed inside a " << event.type << " event";
                return std::nullopt;
            }
        if (data_length > 0) event.data.update(json::parse(buffer_.substr(0, data_length)));
        event.payload = buffer_.substr(data_length, payload_length);
        buffer_.erase(0, data_length + payload_length);
        return event;
    }

    // Events up to and including the first of type `last` (or an error, or the connection's end).
    std::vector<WyomingEvent> read_until(const std::string &last) {
        std::vector<WyomingEvent> events;
        while (std::optional<WyomingEvent> event = read()) {
            events.push_back(*event);
            if (event->type == last || event->type == "error") break;
        }
        return events;
    }

  private:
    bool fill() {
        char chunk[16 << 10];
        const ssize_t n = recv(socket_, chunk, sizeof chunk, 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) ADD_FAILURE() << "no answer within 120 s";
        if (n <= 0) return false;
        buffer_.append(chunk, size_t(n));
        return true;
    }

    int socket_ = -1;
    std::string buffer_;
};

// A Wyoming side on a free loopback port beside a RunningServer, serving on its own thread.
class RunningWyoming {
  public:
    explicit RunningWyoming(test::RunningServer &http, server::WyomingOptions options = {})
        : wyoming_(http.server(), with_free_port(options)) {
        port_ = wyoming_.bind();
        thread_ = std::thread([this] { wyoming_.run(); });
    }
    ~RunningWyoming() {
        wyoming_.stop();
        thread_.join();
    }
    int port() const { return port_; }

  private:
    static server::WyomingOptions with_free_port(server::WyomingOptions options) {
        options.port = 0;
        return options;
    }
    server::WyomingServer wyoming_;
    int port_ = 0;
    std::thread thread_;
};

// The Chatterbox parameters of test::speech (seed, token budget), as a Wyoming event carries them.
json parameters(uint64_t seed, int max_new_tokens) { return {{"seed", seed}, {"max_new_tokens", max_new_tokens}}; }

// The audio of an answer's audio-chunks, checking the audio events' format on the way.
std::string audio_of(const std::vector<WyomingEvent> &events) {
    std::string pcm;
    for (const WyomingEvent &event : events) {
        if (event.type != "audio-chunk" && event.type != "audio-start") continue;
        EXPECT_EQ(event.data.value("rate", 0), 24000) << event.type;
        EXPECT_EQ(event.data.value("width", 0), 2) << event.type;
        EXPECT_EQ(event.data.value("channels", 0), 1) << event.type;
        if (event.type == "audio-chunk") {
            EXPECT_LE(event.payload.size(), 2400u * 2) << "an audio-chunk holds at most 0.1 s";
            pcm += event.payload;
        }
    }
    return pcm;
}

std::vector<std::string> types_of(const std::vector<WyomingEvent> &events) {
    std::vector<std::string> types;
    for (const WyomingEvent &event : events)
        if (types.empty() || types.back() != event.type) types.push_back(event.type); // runs of chunks as one
    return types;
}

std::string http_pcm(test::RunningServer &http, const std::string &text, uint64_t seed, int max_new_tokens) {
    httplib::Client client = http.client();
    json body = test::speech(text, seed, max_new_tokens);
    body["response_format"] = "pcm";
    const httplib::Result result = test::post(client, body);
    if (!result || result->status != 200) {
        ADD_FAILURE() << "HTTP speech request failed";
        return "";
    }
    return result->body;
}

class WyomingTest : public test::ServerTest {};

TEST_F(WyomingTest, DescribeListsTheBuiltinVoiceAndTheLibrarys) {
    server::ServerOptions options = test::small_server();
    server::VoiceLibrary(options.voices_dir).store("kitchen", engine_->builtin_voice(0.5f), 3.0, false);
    test::RunningServer http(*engine_, options);
    RunningWyoming wyoming(http);

    Client client(wyoming.port());
    client.send("describe");
    const std::optional<WyomingEvent> info = client.read();
    ASSERT_TRUE(info);
    ASSERT_EQ(info->type, "info");
    ASSERT_EQ(info->data["tts"].size(), 1u);
    const json &program = info->data["tts"][0];
    EXPECT_EQ(program["name"], "chatterbox");
    EXPECT_EQ(program["installed"], true);
    EXPECT_EQ(program["supports_synthesize_streaming"], true);
    EXPECT_TRUE(program["attribution"].contains("name") && program["attribution"].contains("url"));
    std::vector<std::string> names;
    for (const json &voice : program["voices"]) {
        names.push_back(voice["name"]);
        EXPECT_EQ(voice["installed"], true);
        EXPECT_EQ(voice["languages"], json::array({"en"}));
        EXPECT_TRUE(voice.contains("attribution") && voice.contains("version") && voice.contains("description"));
    }
    EXPECT_EQ(names, (std::vector<std::string>{"default", "kitchen"}));

    // The same connection answers on: ping, and a second describe.
    client.send("ping", {{"text", "are you there"}});
    const std::optional<WyomingEvent> pong = client.read();
    ASSERT_TRUE(pong);
    EXPECT_EQ(pong->type, "pong");
    EXPECT_EQ(pong->data["text"], "are you there");
}

TEST_F(WyomingTest, SynthesizeStreamsTheHttpApisAudio) {
    test::RunningServer http(*engine_, test::small_server());
    RunningWyoming wyoming(http);
    const std::string text = "Hello from the kitchen speaker.";
    const std::string expected = http_pcm(http, text, 7, 60);
    ASSERT_FALSE(expected.empty());

    Client client(wyoming.port());
    client.send("synthesize", {{"text", text}, {"voice", {{"name", "default"}}}, {"chatterbox", parameters(7, 60)}});
    const std::vector<WyomingEvent> events = client.read_until("audio-stop");
    EXPECT_EQ(types_of(events), (std::vector<std::string>{"audio-start", "audio-chunk", "audio-stop"}));
    EXPECT_GT(events.size(), 3u) << "the audio comes in several chunks";
    EXPECT_TRUE(audio_of(events) == expected)
        << "Wyoming " << audio_of(events).size() << " bytes, HTTP " << expected.size() << " bytes";

    // A second request on the same connection, with a library-less voice name and no voice at all.
    client.send("synthesize", {{"text", text}, {"chatterbox", parameters(7, 60)}});
    EXPECT_TRUE(audio_of(client.read_until("audio-stop")) == expected);
}

TEST_F(WyomingTest, StreamedTextIsSpokenSentenceBySentence) {
    test::RunningServer http(*engine_, test::small_server());
    RunningWyoming wyoming(http);
    const std::vector<std::string> sentences = {"The first sentence is here.", "The second one follows it.",
                                                "And the third ends it."};

    Client client(wyoming.port());
    client.send("synthesize-start", {{"voice", {{"name", "default"}}}, {"chatterbox", parameters(11, 40)}});
    // Chunks cut where an LLM's tokens fall: inside the second sentence, after a space.
    client.send("synthesize-chunk", {{"text", "The first sentence "}});
    client.send("synthesize-chunk", {{"text", "is here. The second "}});
    // The first sentence is complete once the second has begun: its audio comes before more text.
    std::vector<WyomingEvent> events = client.read_until("audio-chunk");
    ASSERT_EQ(types_of(events), (std::vector<std::string>{"audio-start", "audio-chunk"}));
    client.send("synthesize-chunk", {{"text", "one follows it. And the third ends it."}});
    // Home Assistant sends the whole text once more for servers that do not stream: ignored.
    client.send("synthesize", {{"text", sentences[0] + " " + sentences[1] + " " + sentences[2]}});
    client.send("synthesize-stop");
    for (const WyomingEvent &event : client.read_until("synthesize-stopped")) events.push_back(event);
    EXPECT_EQ(types_of(events),
              (std::vector<std::string>{"audio-start", "audio-chunk", "audio-stop", "synthesize-stopped"}));

    // Each sentence as its own HTTP request, joined by the sentence pause (0.25 s of silence).
    const std::string pause(size_t(0.25 * 24000) * 2, '\0');
    std::string expected;
    for (size_t i = 0; i < sentences.size(); ++i) expected += (i ? pause : "") + http_pcm(http, sentences[i], 11, 40);
    const std::string streamed = audio_of(events);
    EXPECT_TRUE(streamed == expected) << "streamed " << streamed.size() << " bytes, expected " << expected.size();

    // The connection takes the next request.
    client.send("describe");
    const std::optional<WyomingEvent> info = client.read();
    ASSERT_TRUE(info);
    EXPECT_EQ(info->type, "info");
}

// The next event is an error event with `code` and a text.
void expect_error_event(Client &client, const std::string &code) {
    const std::optional<WyomingEvent> error = client.read();
    ASSERT_TRUE(error) << "no answer";
    EXPECT_EQ(error->type, "error");
    EXPECT_EQ(error->data.value("code", ""), code) << error->data.dump();
    EXPECT_FALSE(error->data.value("text", "").empty());
}

// What the server answers to `bytes` on a fresh connection: one error event, then the connection's end.
void expect_refused(int port, const std::string &bytes, const std::string &code) {
    SCOPED_TRACE(code);
    Client client(port);
    client.send_raw(bytes);
    expect_error_event(client, code);
    EXPECT_FALSE(client.read()) << "the connection stays open after a refusal";
}

std::string header_line(const json &header) { return header.dump() + "\n"; }

TEST_F(WyomingTest, MalformedAndOversizedEventsAreRefused) {
    const server::ServerOptions options = test::small_server();
    test::RunningServer http(*engine_, options);
    RunningWyoming wyoming(http);
    const server::wyoming::EventLimits limits = server::wyoming_event_limits(options.limits);
    const int port = wyoming.port();

    expect_refused(port, "this is not JSON\n", "bad_header");
    expect_refused(port, "[1, 2]\n", "bad_header");
    // Deep nesting within the line limit: refused, no stack overflow.
    expect_refused(port, std::string(30000, '[') + std::string(30000, ']') + "\n", "bad_header");
    expect_refused(port, std::string(60000, '[') + "\n", "bad_header");
    expect_refused(port, header_line({{"data", {{"text", "no type"}}}}), "bad_header");
    expect_refused(port, header_line({{"type", "describe"}, {"data_length", -3}}), "bad_header");
    expect_refused(port, header_line({{"type", "describe"}, {"data_length", "12"}}), "bad_header");
    expect_refused(port, header_line({{"type", "synthesize"}, {"data", "text"}}), "bad_header");
    // The line is refused once it is too long, before its newline comes.
    expect_refused(port, std::string(limits.max_header_bytes + 1, ' '), "header_too_long");
    expect_refused(port, header_line({{"type", "synthesize"}, {"data_length", limits.max_data_bytes + 1}}),
                   "data_too_large");
    expect_refused(port, header_line({{"type", "audio-chunk"}, {"payload_length", limits.max_payload_bytes + 1}}),
                   "payload_too_large");
    expect_refused(port, header_line({{"type", "synthesize"}, {"data_length", 9}}) + "{not json", "bad_data");
    expect_refused(port, header_line({{"type", "synthesize"}, {"data_length", 2}}) + "[]", "bad_data");
    // Well framed, but refused requests.
    expect_refused(port, header_line({{"type", "synthesize"}, {"data", {{"text", 42}}}}), "invalid_request");
    expect_refused(port, header_line({{"type", "synthesize"}, {"data", {{"text", "\u200b\x07\u200d"}}}}),
                   "invalid_request"); // format and control characters only: nothing to say
    expect_refused(port,
                   header_line({{"type", "synthesize"}, {"data", {{"text", "Hi."}, {"voice", {{"name", "nobody"}}}}}}),
                   "invalid_request");
    expect_refused(port,
                   header_line({{"type", "synthesize"}, {"data", {{"text", "Hi."}, {"chatterbox", {{"top_p", 7}}}}}}),
                   "invalid_request");
    expect_refused(port,
                   header_line({{"type", "synthesize"},
                                {"data", {{"text", std::string(options.limits.max_input_chars + 1, 'a')}}}}),
                   "text_too_long");
    expect_refused(port, header_line({{"type", "synthesize-chunk"}, {"data", {{"text", "Hi."}}}}), "out_of_order");
    // Streamed text that never ends a sentence is bounded by the same limit.
    {
        Client client(port);
        client.send("synthesize-start");
        const std::string words(1000, 'w');
        for (size_t sent = 0; sent <= options.limits.max_input_chars; sent += words.size())
            client.send("synthesize-chunk", {{"text", words}});
        const std::vector<WyomingEvent> events = client.read_until("error");
        ASSERT_FALSE(events.empty());
        EXPECT_EQ(events.back().type, "error");
        EXPECT_EQ(events.back().data.value("code", ""), "text_too_long");
    }

    // An unknown type is answered and the connection goes on.
    Client client(port);
    client.send("transcribe", {{"language", "en"}});
    expect_error_event(client, "unknown_event");
    client.send("synthesize", {{"text", "Still here."}, {"chatterbox", parameters(3, 20)}});
    const std::vector<WyomingEvent> events = client.read_until("audio-stop");
    EXPECT_EQ(types_of(events), (std::vector<std::string>{"audio-start", "audio-chunk", "audio-stop"}));
}

TEST_F(WyomingTest, AClientThatDropsMidStreamCancelsItsSynthesis) {
    test::RunningServer http(*engine_, test::small_server());
    RunningWyoming wyoming(http);
    // Hundreds of tokens with ignore_eos: tens of seconds on the tiny model, if it ran to the end.
    json long_parameters = parameters(5, 400);
    long_parameters["ignore_eos"] = true;
    {
        Client client(wyoming.port());
        client.send("synthesize", {{"text", "This one is long on purpose."}, {"chatterbox", long_parameters}});
        const std::vector<WyomingEvent> events = client.read_until("audio-chunk");
        ASSERT_EQ(types_of(events), (std::vector<std::string>{"audio-start", "audio-chunk"}));
    } // hangs up
    const auto dropped = Clock::now();
    // The one session is free again long before the long synthesis would have ended.
    Client next(wyoming.port());
    next.send("synthesize", {{"text", "Next, please."}, {"chatterbox", parameters(3, 20)}});
    const std::vector<WyomingEvent> events = next.read_until("audio-stop");
    EXPECT_EQ(types_of(events), (std::vector<std::string>{"audio-start", "audio-chunk", "audio-stop"}));
    EXPECT_LT(test::seconds_since(dropped), 10.0);
    const std::string metrics = http.server().metrics().exposition({});
    EXPECT_EQ(test::metric_sample(metrics, R"(chatterbox_syntheses_total{outcome="client_gone"})"), 1.0) << metrics;
    EXPECT_EQ(test::metric_sample(metrics, R"(chatterbox_syntheses_total{outcome="completed"})"), 1.0);
    EXPECT_EQ(test::metric_sample(metrics, R"(chatterbox_wyoming_events_total{type="synthesize"})"), 2.0);
}

TEST_F(WyomingTest, ConnectionsBeyondTheLimitAreRefused) {
    test::RunningServer http(*engine_, test::small_server());
    server::WyomingOptions options;
    options.max_connections = 2;
    RunningWyoming wyoming(http, options);
    Client first(wyoming.port()), second(wyoming.port());
    for (Client *client : {&first, &second}) { // both served: they answer
        client->send("ping");
        const std::optional<WyomingEvent> pong = client->read();
        ASSERT_TRUE(pong);
        EXPECT_EQ(pong->type, "pong");
    }
    expect_refused(wyoming.port(), "", "too_many_connections");
    first.hang_up();
    // Its place is free once the server has seen the hang-up.
    const auto give_up = Clock::now() + std::chrono::seconds(10);
    bool served = false;
    while (!served && Clock::now() < give_up) {
        Client third(wyoming.port());
        third.send("ping");
        const std::optional<WyomingEvent> answer = third.read();
        served = answer && answer->type == "pong";
        if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_TRUE(served);
}

TEST_F(WyomingTest, BusySessionsAndIdleConnectionsAreErrorEvents) {
    server::ServerOptions options = test::small_server();
    options.queue = 0; // the one session, and no waiting for it
    test::RunningServer http(*engine_, options);
    server::WyomingOptions wyoming_options;
    wyoming_options.idle_seconds = 0.5;
    RunningWyoming wyoming(http, wyoming_options);

    json long_parameters = parameters(5, 400);
    long_parameters["ignore_eos"] = true;
    Client holder(wyoming.port());
    holder.send("synthesize", {{"text", "Holding the only session."}, {"chatterbox", long_parameters}});
    const std::optional<WyomingEvent> start = holder.read();
    ASSERT_TRUE(start);
    ASSERT_EQ(start->type, "audio-start");
    expect_refused(wyoming.port(), header_line({{"type", "synthesize"}, {"data", {{"text", "Me too."}}}}),
                   "server_busy");
    holder.hang_up();

    // A connection that sends nothing is told so and closed once idle_seconds pass.
    const auto connected = Clock::now();
    expect_refused(wyoming.port(), "", "idle_timeout");
    EXPECT_GE(test::seconds_since(connected), 0.45);
}

TEST(WyomingMultilingual, VoicesListTheModelsLanguagesAndVoiceLanguagePicksOne) {
    PipelineModelOptions engine_options;
    engine_options.model_path = test::tiny_multilingual_model_path();
    engine_options.backend.threads = 1;
    const PipelineModel engine(engine_options);
    test::RunningServer http(engine, test::small_server());
    RunningWyoming wyoming(http);
    Client client(wyoming.port());

    client.send("describe");
    const std::optional<WyomingEvent> info = client.read();
    ASSERT_TRUE(info);
    const json &languages = info->data["tts"][0]["voices"][0]["languages"];
    EXPECT_EQ(languages.size(), 23u);
    EXPECT_NE(std::find(languages.begin(), languages.end(), "fr"), languages.end());

    // The multilingual model needs a language: voice.language gives it.
    client.send("synthesize", {{"text", "Bonjour à tous."},
                               {"voice", {{"name", "default"}, {"language", "fr"}}},
                               {"chatterbox", parameters(3, 20)}});
    const std::vector<WyomingEvent> events = client.read_until("audio-stop");
    ASSERT_EQ(types_of(events).back(), "audio-stop") << events.back().data.dump();
    EXPECT_FALSE(audio_of(events).empty());

    // One it does not speak is an error event naming the supported ones.
    client.send("synthesize",
                {{"text", "Hello."}, {"voice", {{"language", "tlh"}}}, {"chatterbox", parameters(3, 20)}});
    const std::optional<WyomingEvent> error = client.read();
    ASSERT_TRUE(error);
    EXPECT_EQ(error->type, "error");
    EXPECT_NE(error->data.value("text", "").find("fr"), std::string::npos) << error->data.dump();
}

TEST(WyomingCommandLine, BadAddressesAreExit2) {
    for (const std::vector<std::string> &args : std::vector<std::vector<std::string>>{
             {"--wyoming", "10200"}, {"--wyoming", "localhost:70000"}, {"--no-http"}}) {
        const test::ToolRun run = test::run_tool("chatterbox-server", args);
        EXPECT_EQ(run.exit_code, 2) << args[0] << ": " << run.err;
        EXPECT_NE(run.err.find(args[0]), std::string::npos) << run.err;
    }
}

// The real chatterbox-server with --wyoming: SIGTERM lets the synthesis in flight finish, refuses
// new ones, and exits 0.
TEST(WyomingProcess, SigtermDrainsWyoming) {
    test::ServerProcess process({"--wyoming", "127.0.0.1:0"});
    std::smatch match;
    const std::string log = process.log();
    ASSERT_TRUE(std::regex_search(log, match, std::regex("Wyoming on tcp://127\\.0\\.0\\.1:([0-9]+)"))) << log;
    const int port = std::stoi(match[1]);

    json long_parameters = parameters(5, 120);
    long_parameters["ignore_eos"] = true;
    Client client(port);
    client.send("synthesize", {{"text", "Finish this one first."}, {"chatterbox", long_parameters}});
    const std::optional<WyomingEvent> start = client.read();
    ASSERT_TRUE(start);
    ASSERT_EQ(start->type, "audio-start");
    process.send_signal(SIGTERM);
    const auto give_up = Clock::now() + std::chrono::seconds(10);
    while (process.log().find("draining") == std::string::npos && Clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));

    Client late(port);
    late.send("synthesize", {{"text", "Too late."}});
    expect_error_event(late, "server_draining");

    const std::vector<WyomingEvent> rest = client.read_until("audio-stop");
    ASSERT_FALSE(rest.empty());
    EXPECT_EQ(rest.back().type, "audio-stop") << "the synthesis in flight completes";
    EXPECT_GT(audio_of(rest).size(), size_t(2 * 24000)) << "more than a second: 120 tokens' audio";
    EXPECT_EQ(process.wait_exit(std::chrono::seconds(60)), 0) << process.log();
}

// chatterbox-bench wyoming at the smallest size: every figure bench/README.md quotes is in its JSON.
TEST(WyomingBench, MeasuresTheFirstSentencesLatency) {
    const std::string json_path = test::temp_dir("wyoming_bench") + "/wyoming.json";
    const test::ToolRun run =
        test::run_tool("chatterbox-bench", {"wyoming", "--weights", test::tiny_model_path(), "--repeats", "1",
                                            "--max-tokens", "10", "--session-threads", "1", "--json", json_path});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    std::ifstream in(json_path);
    const json row = json::parse(in)["wyoming"];
    for (const char *name : {"sentence_to_first_audio_ms", "synthesize_to_first_audio_ms", "stream_total_ms"})
        EXPECT_GT(row[name]["median"].get<double>(), 0) << name;
    EXPECT_LT(row["sentence_to_first_audio_ms"]["max"].get<double>(), row["stream_total_ms"]["min"].get<double>());
    EXPECT_GT(row["audio_s"].get<double>(), 0.5) << "three sentences of 10 tokens and two pauses";
    EXPECT_NE(run.out.find("first complete sentence -> first audio-chunk"), std::string::npos) << run.out;
}

TEST(WyomingAddress, ParsesHostAndPort) {
    server::WyomingOptions options;
    server::parse_wyoming_address("0.0.0.0:10200", options);
    EXPECT_EQ(options.host, "0.0.0.0");
    EXPECT_EQ(options.port, 10200);
    server::parse_wyoming_address("tcp://[::1]:0", options);
    EXPECT_EQ(options.host, "::1");
    EXPECT_EQ(options.port, 0);
    for (const char *bad : {"10200", "host:", ":10200", "host:70000", "host:port", "host:-1"})
        EXPECT_THROW(server::parse_wyoming_address(bad, options), InvalidArgument) << bad;
}

} // namespace
