// needs: tiny-model
// A load test of the real chatterbox-server on the tiny model, loopback only: 16 concurrent clients
// x 50 short requests each (CHATTERBOX_LOAD_REQUESTS sets the requests per client, e.g. fewer under
// the sanitizer build), 2 sessions and a queue that holds every waiting client. Every request must
// succeed; the only failure allowed is the documented 503 (server busy, Retry-After), which the
// client retries. Bounded in time: against the same requests one at a time, and at most 1100 s
// (~1080 s were measured with 5+ other builds on the 2 cores, load average 10-17). The server's
// memory (VmRSS, VmHWM) is reported; it drains and exits 0 at the end, which under the ASan build
// also means LeakSanitizer found no leak.

#include "support/server_test_support.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

using namespace chatterbox;
using nlohmann::json;

namespace {

constexpr int kClients = 16;
// The load may take at most this many times as long as the same requests one after another (timed
// first, on the same machine and load: the bound is about the server, not the machine's other
// work), and never longer than this; ctest stops a test at 1200 s.
constexpr double kSlowdownLimit = 3;
constexpr double kTimeLimitSeconds = 1100;
constexpr int kBaselineRequests = 4;

int requests_per_client() {
    const char *value = std::getenv("CHATTERBOX_LOAD_REQUESTS");
    return value ? std::max(1, std::atoi(value)) : 50;
}

// Every request of the test: a few tokens of a short input, as pcm.
json short_request(uint64_t seed) {
    json body = test::speech("Hi.", seed, 3);
    body["response_format"] = "pcm";
    body["ignore_eos"] = true; // else a seed may end the speech at once: no audio
    return body;
}

TEST(ServerLoad, SixteenClientsGetEveryAnswerInBoundedTime) {
    test::ServerProcess process({"--sessions", "2", "--queue", "16"});
    ASSERT_GT(process.port(), 0);
    const int per_client = requests_per_client();
    double sequential_seconds = 0; // per request
    {
        httplib::Client client = process.client();
        const auto start = std::chrono::steady_clock::now();
        for (int r = 0; r < kBaselineRequests; ++r) {
            auto result = test::post(client, short_request(uint64_t(r)));
            ASSERT_TRUE(result && result->status == 200);
        }
        sequential_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / kBaselineRequests;
    }
    const double limit = std::min(kTimeLimitSeconds, kSlowdownLimit * sequential_seconds * kClients * per_client);

    std::mutex mutex;
    std::map<int, int> statuses; // every answer, retried 503s included
    std::vector<std::string> failures;
    std::atomic<int> completed{0};
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c) {
        clients.emplace_back([&, c] {
            httplib::Client client = process.client();
            for (int r = 0; r < per_client; ++r) {
                const json body = short_request(uint64_t(c * 1000 + r));
                for (int attempt = 0; attempt < 100; ++attempt) {
                    auto result = test::post(client, body);
                    const int status = result ? result->status : -1;
                    std::lock_guard<std::mutex> lock(mutex);
                    ++statuses[status];
                    if (status == 503 && result->has_header("Retry-After")) {
                        std::this_thread::sleep_for(std::chrono::milliseconds(200));
                        continue;
                    }
                    // (The tiny model's random weights may give no valid speech token: no audio.)
                    if (status != 200 || result->body.size() % 2 != 0)
                        failures.push_back(concat("client ", c, " request ", r, ": status ", status,
                                                  result ? ", " + result->body.substr(0, 200) : ""));
                    else
                        ++completed;
                    break;
                }
            }
        });
    }
    for (std::thread &client : clients) client.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string memory = process.memory();

    std::string summary;
    for (const auto &[status, count] : statuses) summary += concat(" ", status, ": ", count);
    std::printf("load: %d clients x %d requests in %.1f s (%.1f requests/s; one at a time %.2f s each, limit %.0f s); "
                "answers by status:%s; server %s\n",
                kClients, per_client, seconds, kClients * per_client / seconds, sequential_seconds, limit,
                summary.c_str(), memory.c_str());
    ::testing::Test::RecordProperty("seconds", std::to_string(seconds));
    ::testing::Test::RecordProperty("server_memory", memory);

    EXPECT_TRUE(failures.empty()) << failures.size() << " failed, the first: " << failures.front();
    EXPECT_EQ(completed, kClients * per_client);
    EXPECT_LT(seconds, limit);

    // httplib counts a request once its answer is written, a moment after the client has it.
    httplib::Client client = process.client();
    const auto counted = [&](const std::string &series) {
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        std::optional<double> value;
        do {
            auto metrics = client.Get("/metrics");
            value = metrics ? test::metric_sample(metrics->body, series) : std::nullopt;
            if (value == kBaselineRequests + kClients * per_client) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        } while (std::chrono::steady_clock::now() < give_up);
        return value;
    };
    const int served = kBaselineRequests + kClients * per_client;
    EXPECT_EQ(counted(R"(chatterbox_http_requests_total{method="POST",route="/v1/audio/speech",status="200"})"),
              served);
    EXPECT_EQ(counted(R"(chatterbox_syntheses_total{outcome="completed"})"), served);

    process.send_signal(SIGTERM);
    EXPECT_EQ(process.wait_exit(std::chrono::seconds(60)), 0) << process.log();
}

} // namespace
