// needs: tiny-model
// chatterbox-server's operations on the tiny model: /metrics parses with promtool (Prometheus's own
// parser) and its counters, gauges and histograms move as requests are served; a synthesis past its
// deadline is answered 504 (whole) or ends with an SSE error event; a client that hangs up during a
// whole (not streamed) synthesis cancels it long before it would have ended; SIGTERM drains the real
// chatterbox-server (the request in flight completes, new ones get 503, /ready 503, exit 0) and a
// drain that runs out of time cancels what is left; clients connecting faster than the accept loop
// takes them are all served; with --batch, concurrent requests share the T3 batch and a client that
// hangs up leaves it at once, also with --kv-cache q8_0 (the sessions take the batch's cache type).

#include "support/server_test_support.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <csignal>
#include <future>

using namespace chatterbox;
using nlohmann::json;
using test::post;
using test::post_streaming;
using test::RunningServer;
using test::speech;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// A request that runs for tens of seconds on the tiny model: T3 is made to go on to max_new_tokens.
json long_request(int max_new_tokens = 400) {
    json body =
        speech("This request is long on purpose, so that it is still running when the test acts.", 5, max_new_tokens);
    body["ignore_eos"] = true;
    body["response_format"] = "pcm";
    return body;
}

std::string metrics_of(httplib::Client &client) {
    auto result = client.Get("/metrics");
    if (!result || result->status != 200) {
        ADD_FAILURE() << "GET /metrics failed";
        return "";
    }
    EXPECT_EQ(result->get_header_value("Content-Type"), server::kMetricsContentType);
    return result->body;
}

double sample(const std::string &exposition, const std::string &series) {
    const std::optional<double> value = test::metric_sample(exposition, series);
    if (!value) ADD_FAILURE() << "no sample " << series << " in\n" << exposition;
    return value.value_or(NAN);
}

const std::string kSpeechOk = R"(chatterbox_http_requests_total{method="POST",route="/v1/audio/speech",status="200"})";

// Polls until `ready` holds (true) or `timeout` passes (false).
bool eventually(const std::function<bool()> &ready, std::chrono::seconds timeout) {
    const auto give_up = Clock::now() + timeout;
    while (Clock::now() < give_up) {
        if (ready()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return ready();
}

using ServerOps = test::ServerTest;

TEST_F(ServerOps, MetricsParseWithPromtoolAndCountWhatWasServed) {
    server::ServerOptions options = test::small_server();
    options.sessions = 2;
    RunningServer server(*engine_, options);
    httplib::Client client = server.client();
    // One connection, so one worker thread: each request is counted (after its answer is written)
    // before the next is read.
    client.set_keep_alive(true);

    const std::string before = metrics_of(client);
    const std::optional<std::string> complaint = test::promtool_check(before);
    if (!complaint)
        GTEST_SKIP() << "promtool is not installed (Debian package prometheus, scripts/debian-packages.txt)";
    EXPECT_EQ(*complaint, "") << before;
    EXPECT_EQ(sample(before, "chatterbox_sessions"), 2);
    EXPECT_EQ(sample(before, "chatterbox_sessions_busy"), 0);
    EXPECT_EQ(sample(before, "chatterbox_queue_depth"), 0);
    EXPECT_EQ(sample(before, "chatterbox_draining"), 0);
    EXPECT_EQ(sample(before, "chatterbox_audio_seconds_total"), 0);
    EXPECT_EQ(test::metric_sample(before, kSpeechOk), std::nullopt);

    // What the engine makes of the request offline: the audio and speech tokens the counters gain.
    json body = speech("Counting what was served.", 11, 40);
    body["response_format"] = "pcm";
    SynthesisOptions offline;
    offline.params.sampling.seed = 11;
    offline.params.sampling.max_new_tokens = 40;
    const SynthesisResult expected =
        PipelineSession(*engine_, PipelineSessionOptions{1})
            .synthesize(body["input"].get<std::string>(), engine_->builtin_voice(0.5f), offline);
    ASSERT_GT(expected.speech_tokens, 0);
    auto ok = post(client, body);
    ASSERT_TRUE(ok);
    ASSERT_EQ(ok->status, 200) << ok->body;
    ASSERT_EQ(ok->body.size(), expected.wave.size() * 2);
    body["temperature"] = "hot";
    EXPECT_EQ(post(client, body)->status, 400);
    EXPECT_EQ(client.Get("/v1/voices-of-nobody")->status, 404);

    const std::string after = metrics_of(client);
    EXPECT_EQ(*test::promtool_check(after), "") << after;
    EXPECT_EQ(sample(after, kSpeechOk), 1);
    EXPECT_EQ(sample(after, R"(chatterbox_http_requests_total{method="POST",route="/v1/audio/speech",status="400"})"),
              1);
    EXPECT_EQ(sample(after, R"(chatterbox_http_requests_total{method="GET",route="other",status="404"})"), 1);
    EXPECT_EQ(sample(after, R"(chatterbox_http_requests_total{method="GET",route="/metrics",status="200"})"), 1);
    EXPECT_EQ(sample(after, R"(chatterbox_syntheses_total{outcome="completed"})"), 1);
    EXPECT_EQ(sample(after, R"(chatterbox_syntheses_total{outcome="failed"})"), 0);
    EXPECT_DOUBLE_EQ(sample(after, "chatterbox_audio_seconds_total"), double(expected.wave.size()) / 24000);
    EXPECT_EQ(sample(after, "chatterbox_speech_tokens_total"), expected.speech_tokens);
    EXPECT_EQ(sample(after, "chatterbox_time_to_first_audio_seconds_count"), 1);
    EXPECT_GT(sample(after, "chatterbox_time_to_first_audio_seconds_sum"), 0);
    EXPECT_EQ(sample(after, R"(chatterbox_real_time_factor_bucket{le="+Inf"})"), 1);
    EXPECT_EQ(sample(after, R"(chatterbox_http_request_duration_seconds_count{route="/v1/audio/speech"})"), 2);
    // The whole answer took at least the synthesis' time.
    EXPECT_GE(sample(after, R"(chatterbox_http_request_duration_seconds_sum{route="/v1/audio/speech"})"),
              sample(after, "chatterbox_time_to_first_audio_seconds_sum"));

    // While a stream runs, its session is busy and the request in flight.
    test::HeldStream stream(server.port(), long_request(120));
    ASSERT_TRUE(stream.wait_first_audio(std::chrono::seconds(120)));
    const std::string during = metrics_of(client);
    EXPECT_EQ(sample(during, "chatterbox_sessions_busy"), 1);
    EXPECT_EQ(sample(during, "chatterbox_requests_in_flight"), 1);
    stream.hang_up();
    EXPECT_TRUE(eventually([&] { return sample(metrics_of(client), "chatterbox_sessions_busy") == 0; },
                           std::chrono::seconds(30)));
    const std::string dropped = metrics_of(client);
    EXPECT_EQ(sample(dropped, R"(chatterbox_syntheses_total{outcome="client_gone"})"), 1);
    EXPECT_EQ(sample(dropped, "chatterbox_requests_in_flight"), 0);
}

TEST_F(ServerOps, ASynthesisPastItsDeadlineIsAnswered504OrAnSseError) {
    server::ServerOptions options = test::small_server();
    options.deadline_seconds = 1;
    RunningServer server(*engine_, options);
    httplib::Client client = server.client();

    const auto start = Clock::now();
    auto whole = post(client, long_request());
    ASSERT_TRUE(whole);
    EXPECT_EQ(whole->status, 504);
    const json error = json::parse(whole->body, nullptr, false);
    EXPECT_EQ(error["error"]["code"], "deadline_exceeded") << whole->body;
    EXPECT_EQ(error["error"]["type"], "server_error");
    EXPECT_TRUE(test::contains(error["error"]["message"], "deadline of 1 s"));
    // The request runs for tens of seconds; the deadline cut it within a poll and a graph node.
    EXPECT_LT(seconds_since(start), 10);

    json sse = long_request();
    sse["stream_format"] = "sse";
    auto streamed = post(client, sse);
    ASSERT_TRUE(streamed);
    EXPECT_EQ(streamed->status, 200); // sent before the deadline passed
    const std::vector<json> events = test::sse_events(streamed->body);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back()["type"], "error");
    EXPECT_EQ(events.back()["error"]["code"], "deadline_exceeded");

    const std::string metrics = metrics_of(client);
    EXPECT_EQ(sample(metrics, R"(chatterbox_syntheses_total{outcome="deadline"})"), 2);
    EXPECT_EQ(sample(metrics, R"(chatterbox_http_requests_total{method="POST",route="/v1/audio/speech",status="504"})"),
              1);
    EXPECT_EQ(sample(metrics, "chatterbox_sessions_busy"), 0);
}

TEST_F(ServerOps, AClientThatHangsUpDuringAWholeSynthesisCancelsIt) {
    RunningServer server(*engine_, test::small_server());
    {
        httplib::Client impatient = server.client();
        impatient.set_read_timeout(1, 0); // gives up and closes the connection after a second
        EXPECT_FALSE(post(impatient, long_request()));
    }
    const auto hung_up = Clock::now();
    httplib::Client client = server.client();
    EXPECT_TRUE(eventually(
        [&] { return sample(metrics_of(client), R"(chatterbox_syntheses_total{outcome="client_gone"})") == 1; },
        std::chrono::seconds(20)));
    // Noticed by the watch, not at the answer's write tens of seconds later.
    EXPECT_LT(seconds_since(hung_up), 10);
    EXPECT_TRUE(eventually([&] { return sample(metrics_of(client), "chatterbox_sessions_busy") == 0; },
                           std::chrono::seconds(10)));
    auto next = post(client, speech("Next, please.", 2, 10));
    ASSERT_TRUE(next);
    EXPECT_EQ(next->status, 200);
}

// Many clients connecting at once, faster than the accept loop takes them (a loaded machine): each
// connection waits in the listen queue and is served. With a short queue (httplib's 5) the kernel
// drops the connections beyond it and their clients fail to read an answer.
TEST_F(ServerOps, ClientsConnectingBeforeTheAcceptLoopRunsAreAllServed) {
    Runtime runtime(*engine_, RuntimeOptions{});
    server::Server server(runtime, test::small_server());
    const int port = server.bind();
    constexpr int kClients = 32;
    std::vector<std::future<int>> statuses;
    for (int i = 0; i < kClients; ++i)
        statuses.push_back(std::async(std::launch::async, [port] {
            httplib::Client client("127.0.0.1", port);
            client.set_connection_timeout(20, 0);
            client.set_read_timeout(20, 0);
            // A body, sent as a second write after the headers as speech requests are; refused at
            // once, so no synthesis runs.
            const auto result = client.Post("/v1/audio/speech", "{\"model\": ", "application/json");
            return result ? result->status : -int(result.error());
        }));
    std::this_thread::sleep_for(std::chrono::milliseconds(1500)); // every client has connected
    std::thread serving([&] { server.run(); });
    int served = 0;
    for (auto &status : statuses) {
        const int got = status.get();
        EXPECT_EQ(got, 400) << "a client got " << (got < 0 ? httplib::to_string(httplib::Error(-got)) : "HTTP status");
        served += got == 400;
    }
    server.stop();
    serving.join();
    EXPECT_EQ(served, kClients);
}

TEST(ServerProcessOps, SigtermDrainsTheRequestInFlightRefusesNewOnesAndExitsZero) {
    test::ServerProcess process({"--sessions", "1", "--drain-seconds", "300"});
    ASSERT_GT(process.port(), 0);

    std::promise<void> first_audio;
    std::string body;
    int status = 0;
    std::thread in_flight([&] {
        httplib::Client client = process.client();
        json sse = long_request(100);
        sse["stream_format"] = "sse";
        bool first = true;
        auto result = post_streaming(client, sse, [&](const char *data, size_t n) {
            body.append(data, n);
            if (first) first_audio.set_value();
            first = false;
            return true;
        });
        status = result ? result->status : -1;
    });
    ASSERT_EQ(first_audio.get_future().wait_for(std::chrono::seconds(120)), std::future_status::ready);
    process.send_signal(SIGTERM);

    httplib::Client client = process.client();
    EXPECT_TRUE(eventually(
        [&] {
            auto ready = client.Get("/ready");
            return ready && ready->status == 503 && json::parse(ready->body)["status"] == "draining";
        },
        std::chrono::seconds(10)))
        << process.log();
    auto refused = post(client, speech("Too late.", 1, 10));
    if (refused) { // else the drain is over and the port closed: refused as well
        EXPECT_EQ(refused->status, 503);
        EXPECT_EQ(refused->get_header_value("Retry-After"), "1");
        EXPECT_EQ(json::parse(refused->body)["error"]["code"], "server_draining");
    }
    in_flight.join();
    EXPECT_EQ(status, 200);
    const std::vector<json> events = test::sse_events(body);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back()["type"], "speech.audio.done") << "the request in flight did not complete";
    EXPECT_EQ(process.wait_exit(std::chrono::seconds(60)), 0) << process.log();
    EXPECT_TRUE(test::contains(process.log(), "stopped (0 request(s) cancelled)"));
}

TEST(ServerProcessOps, ADrainThatRunsOutOfTimeCancelsWhatIsLeft) {
    test::ServerProcess process({"--sessions", "1", "--drain-seconds", "1"});
    ASSERT_GT(process.port(), 0);
    std::future<httplib::Result> answer = std::async(std::launch::async, [&] {
        httplib::Client client = process.client();
        return post(client, long_request());
    });
    httplib::Client client = process.client();
    ASSERT_TRUE(eventually([&] { return sample(metrics_of(client), "chatterbox_sessions_busy") == 1; },
                           std::chrono::seconds(30)));
    const auto signalled = Clock::now();
    process.send_signal(SIGTERM);
    const httplib::Result result = answer.get();
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 503);
    EXPECT_EQ(json::parse(result->body)["error"]["code"], "server_draining");
    EXPECT_EQ(process.wait_exit(std::chrono::seconds(60)), 0) << process.log();
    EXPECT_LT(seconds_since(signalled), 15); // 1 s of drain, a cancel, the exit
    EXPECT_TRUE(test::contains(process.log(), "stopped (1 request(s) cancelled)"));
}

// The HTTP status of a request of max_new_tokens (-1: no answer) sent while a long streamed one is
// decoding in the T3 batch, so that its steps run beside the long one's however loaded the machine
// is (two requests merely sent at once may not overlap: a short one can finish before the other's
// prefill); the long one is then dropped and has left every batch when this returns.
int status_beside_a_long_request(const test::ServerProcess &process, int max_new_tokens) {
    httplib::Client client = process.client();
    int status = -1;
    {
        test::HeldStream long_one(process.port(), long_request(400));
        if (!eventually([&] { return sample(metrics_of(client), "chatterbox_t3_batch_requests") == 1; },
                        std::chrono::seconds(60))) {
            ADD_FAILURE() << "the long request never reached the T3 batch";
            return -1;
        }
        auto result = post(client, long_request(max_new_tokens));
        if (result) status = result->status;
        long_one.hang_up();
    }
    EXPECT_TRUE(eventually([&] { return sample(metrics_of(client), "chatterbox_sessions_busy") == 0; },
                           std::chrono::seconds(30)))
        << "the long request is still running";
    return status;
}

} // namespace

// --batch, --flow-batch, --vocoder-batch: concurrent requests share the T3, flow and vocoder batches
// (the metrics count steps that ran both), a client that hangs up mid-batch frees its place at once,
// and the server keeps serving.
TEST(ServerProcessOps, ABatchingServerDecodesConcurrentRequestsTogether) {
    test::ServerProcess process({"--batch", "2", "--flow-batch", "2", "--vocoder-batch", "2"});
    ASSERT_GT(process.port(), 0);
    EXPECT_TRUE(test::contains(process.log(), "2 session(s)")) << process.log(); // --sessions follows the batches
    EXPECT_TRUE(test::contains(process.log(), "batches T3 2, flow 2, vocoder 2 on all cores")) << process.log();
    EXPECT_EQ(status_beside_a_long_request(process, 60), 200);
    httplib::Client client = process.client();
    std::string metrics = metrics_of(client);
    EXPECT_EQ(sample(metrics, "chatterbox_t3_batch_size"), 2);
    EXPECT_EQ(sample(metrics, "chatterbox_t3_batch_requests"), 0);
    const double steps = sample(metrics, "chatterbox_t3_batch_steps_total");
    EXPECT_GE(steps, 59) << "each request decodes its 59 tokens after the prefill in the batch";
    EXPECT_GT(sample(metrics, "chatterbox_t3_batch_request_steps_total"), steps) << "no step decoded both";
    EXPECT_EQ(sample(metrics, "chatterbox_flow_batch_size"), 2);
    EXPECT_EQ(sample(metrics, "chatterbox_flow_batch_requests"), 0);
    const double flow_steps = sample(metrics, "chatterbox_flow_batch_steps_total");
    EXPECT_GT(flow_steps, 0) << "the flow did not run in the batch";
    EXPECT_GE(sample(metrics, "chatterbox_flow_batch_request_steps_total"), flow_steps);
    EXPECT_EQ(sample(metrics, "chatterbox_vocoder_batch_size"), 2);
    EXPECT_EQ(sample(metrics, "chatterbox_vocoder_batch_requests"), 0);
    const double vocoder_runs = sample(metrics, "chatterbox_vocoder_batch_steps_total");
    EXPECT_GT(vocoder_runs, 0) << "the vocoder did not run in the batch";
    EXPECT_GE(sample(metrics, "chatterbox_vocoder_batch_request_steps_total"), vocoder_runs);

    {
        httplib::Client impatient = process.client();
        impatient.set_read_timeout(1, 0);
        EXPECT_FALSE(post(impatient, long_request()));
    }
    EXPECT_TRUE(eventually([&] { return sample(metrics_of(client), "chatterbox_t3_batch_requests") == 0; },
                           std::chrono::seconds(10)))
        << "the request of the client that hung up is still in the batch";
    auto next = post(client, speech("Next, please.", 2, 10));
    ASSERT_TRUE(next);
    EXPECT_EQ(next->status, 200);
}

// --batch alone batches T3 decode only: on a CPU the flow's and HiFT's batches cost more than they
// save (bench/README.md, "Batching"), so each takes its own flag.
// --max-input-chars: text over the limit is answered 413 before any synthesis, text within it is
// spoken; 0 is a bad command line.
TEST(ServerProcessOps, TheInputLimitIsConfigurable) {
    test::ServerProcess process({"--max-input-chars", "12"});
    ASSERT_GT(process.port(), 0);
    httplib::Client client = process.client();
    auto speak = [&](const std::string &text) {
        const auto response = post(client, speech(text, 1, 5));
        return response ? response->status : -1;
    };
    EXPECT_EQ(speak("Hello there."), 200) << "12 characters";
    EXPECT_EQ(speak("Hello there!!"), 413) << "13 characters";
    const test::ToolRun refused = test::run_tool("chatterbox-server", {"--max-input-chars", "0"});
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
}

TEST(ServerProcessOps, BatchAloneBatchesT3Only) {
    test::ServerProcess process({"--batch", "3"});
    ASSERT_GT(process.port(), 0);
    EXPECT_TRUE(test::contains(process.log(), "3 session(s)")) << process.log();
    EXPECT_TRUE(test::contains(process.log(), "batches T3 3, flow off, vocoder off on all cores")) << process.log();
    httplib::Client client = process.client();
    const std::string metrics = metrics_of(client);
    EXPECT_EQ(sample(metrics, "chatterbox_t3_batch_size"), 3);
    EXPECT_EQ(sample(metrics, "chatterbox_flow_batch_size"), 0);
    EXPECT_EQ(sample(metrics, "chatterbox_vocoder_batch_size"), 0);
}

// --kv-cache q8_0: the batch and the sessions keep T3's keys and values in 8 bits alike, so concurrent
// requests still decode together; a type the server does not offer is a bad command line.
TEST(ServerProcessOps, An8BitKvCacheIsTheBatchsAndTheSessions) {
    const test::ToolRun refused =
        test::run_tool("chatterbox-server", {"-m", test::tiny_model_path(), "--kv-cache", "q4_0"});
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
    EXPECT_TRUE(test::contains(refused.err, "--kv-cache")) << refused.err;
    test::ServerProcess process({"--batch", "2", "--kv-cache", "q8_0"});
    ASSERT_GT(process.port(), 0);
    EXPECT_TRUE(test::contains(process.log(), "KV cache q8_0")) << process.log();
    EXPECT_EQ(status_beside_a_long_request(process, 40), 200);
    httplib::Client client = process.client();
    const std::string metrics = metrics_of(client);
    EXPECT_GT(sample(metrics, "chatterbox_t3_batch_request_steps_total"),
              sample(metrics, "chatterbox_t3_batch_steps_total"))
        << "no step decoded both: the sessions' cache type is not the batch's";
}
