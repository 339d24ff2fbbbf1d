// needs: tiny-model
// Three chatterbox-server replicas on one voice folder behind Debian's haproxy (health-checked on
// /ready, as a Kubernetes Service spreads load over ready pods), all on loopback: 8 clients × 25
// speech requests while (a) a voice uploaded through one replica is used through the others, (b) one
// replica is killed with SIGKILL and restarted, (c) another is drained with SIGTERM and restarted, and
// voices are uploaded through the balancer throughout. Every request succeeds, after client retries of
// 502/503/refused connections only while a replica goes down; every accepted upload is readable
// through every replica afterwards and every voice file is intact. The report (requests, retries,
// p50/p95 latency before/during/after) is printed. With CHATTERBOX_REPLICA_BENCH=1, a second test
// measures requests/s, audio-seconds/s and each replica's peak memory for 1, 2 and 3 replicas
// (bench/README.md). Skipped ("no haproxy: ") where haproxy is not installed
// (scripts/deploy-tools.sh).

#include "io/file_digest.h"
#include "server/voice_library.h"
#include "support/server_test_support.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using namespace chatterbox;
using nlohmann::json;
using test::ServerProcess;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kClients = 8;
constexpr int kRequestsPerClient = 25;
constexpr int kMaxAttempts = 8;
constexpr double kPcmBytesPerSecond = 24000 * 2; // s16le mono at 24 kHz

std::string haproxy_path() {
    for (const char *path : {"/usr/sbin/haproxy", "/usr/bin/haproxy"})
        if (access(path, X_OK) == 0) return path;
    return "";
}

int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address);
    socklen_t size = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &size);
    ::close(fd);
    return ntohs(address.sin_port);
}

std::string read_bytes(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// haproxy in the foreground on a loopback port, spreading over the replicas that answer /ready
// (checked every 200 ms: one failure takes a replica out, one success brings it back), as a
// Kubernetes Service does over ready pods. A connection refused is retried on another replica
// (redispatch); a request a replica dropped (502) or refused while draining (503) reaches the client.
class Haproxy {
  public:
    Haproxy(const std::vector<int> &replica_ports, const std::string &dir) : port_(free_port()) {
        const std::string config = dir + "/haproxy.cfg";
        std::ofstream out(config);
        out << "global\n  maxconn 512\n"
            << "defaults\n  mode http\n  timeout connect 2s\n  timeout client 120s\n  timeout server 120s\n"
            << "  retries 3\n  option redispatch\n"
            << "listen chatterbox\n  bind 127.0.0.1:" << port_ << "\n  balance leastconn\n"
            << "  option httpchk GET /ready\n  http-check expect status 200\n"
            << "  default-server inter 200ms fall 1 rise 1\n";
        for (size_t i = 0; i < replica_ports.size(); ++i)
            out << "  server replica" << i << " 127.0.0.1:" << replica_ports[i] << " check\n";
        out.close();
        // haproxy -db stays in the foreground and logs its checks' findings to stderr.
        pid_ = test::spawn_logging_stderr({haproxy_path(), "-db", "-f", config}, dir + "/haproxy.log");
    }
    ~Haproxy() {
        if (pid_ <= 0) return;
        kill(pid_, SIGTERM);
        waitpid(pid_, nullptr, 0);
    }
    Haproxy(const Haproxy &) = delete;
    Haproxy &operator=(const Haproxy &) = delete;

    int port() const { return port_; }
    // Until /ready answers through it `times` in a row (every replica checked up), or 30 s.
    bool wait_ready(int times) const {
        const auto give_up = Clock::now() + std::chrono::seconds(30);
        for (int in_a_row = 0; in_a_row < times && Clock::now() < give_up;) {
            httplib::Client client("127.0.0.1", port_);
            auto result = client.Get("/ready");
            in_a_row = result && result->status == 200 ? in_a_row + 1 : 0;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return Clock::now() < give_up;
    }

  private:
    int port_;
    pid_t pid_ = -1;
};

// Replicas of chatterbox-server on fixed loopback ports and one voice folder.
class Replicas {
  public:
    Replicas(int count, const std::string &voices, std::vector<std::string> args = {})
        : voices_(voices), args_(std::move(args)) {
        args_.insert(args_.end(), {"--drain-seconds", "10", "--queue", "16"});
        for (int i = 0; i < count; ++i) ports_.push_back(free_port());
        for (int i = 0; i < count; ++i) start(i);
    }
    void kill(int i) { processes_[i].reset(); } // SIGKILL (ServerProcess's destructor)
    void start(int i) {
        processes_.resize(ports_.size());
        processes_[i].reset(); // one still running is killed first
        processes_[i] = std::make_unique<ServerProcess>(
            args_, test::ServerProcessSetup{"replica" + std::to_string(i), ports_[i], voices_});
    }
    ServerProcess &operator[](int i) { return *processes_[i]; }
    const std::vector<int> &ports() const { return ports_; }

  private:
    std::string voices_;
    std::vector<std::string> args_;
    std::vector<int> ports_;
    std::vector<std::unique_ptr<ServerProcess>> processes_;
};

httplib::Result upload_voice(httplib::Client &client, const std::string &name, const std::string &recording) {
    return client.Post("/v1/audio/voices", httplib::UploadFormDataItems{{"name", name, "", ""},
                                                                        {"overwrite", "true", "", ""},
                                                                        {"file", recording, "me.wav", "audio/wav"}});
}

json speech_body(const std::string &voice, uint64_t seed, int max_new_tokens) {
    return {{"input", "Replicas share the voices."},
            {"voice", voice},
            {"seed", seed},
            {"max_new_tokens", max_new_tokens},
            {"response_format", "pcm"}};
}

bool retryable(int status) { return status == 502 || status == 503 || status < 0; } // < 0: no answer

// One request's story: its latency with retries, what the failed attempts got and in which phase.
struct Outcome {
    int phase = 0; // when it was sent: 0 before, 1 during the kill and the drain, 2 after
    double ms = 0;
    int status = 0;
    double audio_seconds = 0;
    std::vector<std::pair<int, int>> retried; // (status, phase) of each failed attempt
};

// Sends with retries: a 502/503 or a refused connection is tried again after a short wait.
Outcome send_with_retries(int port, const std::function<httplib::Result(httplib::Client &)> &send,
                          const std::atomic<int> &phase) {
    Outcome outcome;
    outcome.phase = phase.load();
    const auto started = Clock::now();
    for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
        httplib::Client client("127.0.0.1", port);
        client.set_read_timeout(120, 0);
        auto result = send(client);
        outcome.status = result ? result->status : -1;
        if (outcome.status == 200 || outcome.status == 201) {
            outcome.audio_seconds = double(result->body.size()) / kPcmBytesPerSecond;
            break;
        }
        if (!retryable(outcome.status)) break;
        outcome.retried.emplace_back(outcome.status, phase.load());
        std::this_thread::sleep_for(std::chrono::milliseconds(100 * (attempt + 1)));
    }
    outcome.ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    return outcome;
}

double percentile(std::vector<double> values, double p) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    return values[std::min(values.size() - 1, size_t(p * double(values.size() - 1) + 0.5))];
}

// Peak resident memory (VmHWM) of a replica, in MiB.
double peak_mib(const ServerProcess &replica) {
    const std::string memory = replica.memory(); // "VmRSS: N kB, VmHWM: N kB"
    const size_t at = memory.find("VmHWM: ");
    return at == std::string::npos ? 0 : std::stod(memory.substr(at + 7)) / 1024;
}

class ServerReplicas : public ::testing::Test {
  protected:
    void SetUp() override {
        if (haproxy_path().empty()) GTEST_SKIP() << "no haproxy: install it with scripts/deploy-tools.sh";
        dir_ = test::temp_dir("replicas");
        voices_ = dir_ + "/voices";
        recording_ = read_bytes(test::golden_path("ref_voice.wav"));
    }
    std::string dir_, voices_, recording_;
};

} // namespace

TEST_F(ServerReplicas, ThreeReplicasBehindHaproxyLoseNothingThroughAKillAndADrain) {
    Replicas replicas(3, voices_);
    Haproxy balancer(replicas.ports(), dir_);
    ASSERT_TRUE(balancer.wait_ready(6)) << read_bytes(dir_ + "/haproxy.log");

    // (a) A voice uploaded through replica 0 is listed and used by the others at once.
    {
        httplib::Client first = replicas[0].client();
        auto stored = upload_voice(first, "shared", recording_);
        ASSERT_TRUE(stored && stored->status == 201) << (stored ? stored->body : "no answer");
        for (int i : {1, 2}) {
            httplib::Client other = replicas[i].client();
            auto listed = other.Get("/v1/audio/voices/shared");
            ASSERT_TRUE(listed && listed->status == 200) << "replica " << i << " does not list it";
            auto said = other.Post("/v1/audio/speech", speech_body("shared", 1, 10).dump(), "application/json");
            ASSERT_TRUE(said && said->status == 200) << "replica " << i << " cannot use it";
        }
    }

    std::atomic<int> phase{0}, completed{0};
    std::mutex mutex;
    std::vector<Outcome> outcomes, uploads;
    std::vector<std::string> accepted_uploads;
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c)
        clients.emplace_back([&, c] {
            for (int r = 0; r < kRequestsPerClient; ++r) {
                // Half the requests speak with the uploaded voice, through whichever replica.
                const json body = speech_body(r % 2 ? "shared" : "alloy", uint64_t(c * 100 + r), 10);
                Outcome outcome = send_with_retries(
                    balancer.port(),
                    [&](httplib::Client &client) {
                        return client.Post("/v1/audio/speech", body.dump(), "application/json");
                    },
                    phase);
                std::lock_guard<std::mutex> lock(mutex);
                outcomes.push_back(std::move(outcome));
                ++completed;
            }
        });
    // Voices uploaded through the balancer all along (overwrite=true: a retried upload is the same).
    std::atomic<bool> clients_done{false};
    std::thread uploader([&] {
        for (int i = 0; !clients_done; ++i) {
            const std::string name = "upload-" + std::to_string(i);
            Outcome outcome = send_with_retries(
                balancer.port(), [&](httplib::Client &client) { return upload_voice(client, name, recording_); },
                phase);
            std::lock_guard<std::mutex> lock(mutex);
            if (outcome.status == 201) accepted_uploads.push_back(name);
            uploads.push_back(std::move(outcome));
        }
    });
    auto wait_completed = [&](int count) {
        const auto give_up = Clock::now() + std::chrono::minutes(5);
        while (completed < count && Clock::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    };

    wait_completed(kClients * kRequestsPerClient / 4);
    phase = 1;
    // (b) Replica 1 killed outright, then started again on the same port and folder.
    replicas.kill(1);
    replicas.start(1);
    // (c) Replica 2 drained: what it runs finishes, it exits 0 within the drain time; started again.
    const auto drain_started = Clock::now();
    replicas[2].send_signal(SIGTERM);
    const std::optional<int> drained = replicas[2].wait_exit(std::chrono::seconds(15));
    const double drain_ms = std::chrono::duration<double, std::milli>(Clock::now() - drain_started).count();
    EXPECT_EQ(drained, 0) << replicas[2].log();
    replicas.start(2);
    EXPECT_TRUE(balancer.wait_ready(6));
    phase = 2;

    for (std::thread &client : clients) client.join();
    clients_done = true;
    uploader.join();

    // The report.
    std::map<int, int> retried_statuses;
    int failed = 0, attempts = 0, retries_outside_the_window = 0;
    std::vector<double> latencies[3];
    double audio_seconds = 0;
    for (const Outcome &outcome : outcomes) {
        attempts += 1 + int(outcome.retried.size());
        for (const auto &[status, when] : outcome.retried) {
            ++retried_statuses[status];
            if (when != 1) ++retries_outside_the_window;
        }
        if (outcome.status != 200) ++failed;
        latencies[outcome.phase].push_back(outcome.ms);
        audio_seconds += outcome.audio_seconds;
    }
    std::printf("replicas: %d requests by %d clients, %d attempts sent, %d succeeded, %d failed; retried:",
                int(outcomes.size()), kClients, attempts, int(outcomes.size()) - failed, failed);
    for (const auto &[status, count] : retried_statuses)
        std::printf(" %d×%s", count, status < 0 ? "no answer" : std::to_string(status).c_str());
    std::printf("\nreplicas: %.1f s of audio; drain of replica 2: %.0f ms\n", audio_seconds, drain_ms);
    const char *names[] = {"before", "during", "after"};
    for (int p = 0; p < 3; ++p)
        std::printf("replicas: %-6s %3d requests, p50 %.0f ms, p95 %.0f ms\n", names[p], int(latencies[p].size()),
                    percentile(latencies[p], 0.5), percentile(latencies[p], 0.95));

    EXPECT_EQ(int(outcomes.size()), kClients * kRequestsPerClient);
    EXPECT_EQ(failed, 0);
    EXPECT_EQ(retries_outside_the_window, 0) << "a request failed while every replica was up";
    for (const auto &[status, count] : retried_statuses) EXPECT_TRUE(retryable(status)) << status;

    // Nothing lost: every accepted upload is readable through every replica, every voice file intact.
    std::printf("replicas: %d voice uploads through the balancer, %d accepted\n", int(uploads.size()),
                int(accepted_uploads.size()));
    EXPECT_FALSE(accepted_uploads.empty());
    for (const std::string &name : accepted_uploads)
        for (int i = 0; i < 3; ++i) {
            httplib::Client client = replicas[i].client();
            auto got = client.Get(("/v1/audio/voices/" + name).c_str());
            EXPECT_TRUE(got && got->status == 200) << name << " through replica " << i;
        }
    const server::VoiceLibrary library(voices_);
    EXPECT_TRUE(library.problems().empty()) << testing::PrintToString(library.problems());
    int intact = 0, files = 0;
    for (const auto &entry : fs::directory_iterator(voices_)) {
        if (entry.path().extension() != ".voice") continue;
        ++files;
        const json meta =
            json::parse(read_bytes(fs::path(entry.path()).replace_extension(".json").string()), nullptr, false);
        const bool loads = library.voice(entry.path().stem().string()) != nullptr;
        const bool checksum =
            meta.is_object() && meta.value("voice_sha256", "") == io::file_sha256(entry.path().string());
        intact += loads && checksum;
        EXPECT_TRUE(loads && checksum) << entry.path() << ": loads " << loads << ", its metadata's SHA-256 matches "
                                       << checksum;
    }
    std::printf("replicas: voice files intact (load, GGUF checksum, SHA-256 of the metadata): %d of %d\n", intact,
                files);
}

TEST_F(ServerReplicas, ThroughputOfOneTwoAndThreeReplicasOnThisMachine) {
    if (!std::getenv("CHATTERBOX_REPLICA_BENCH")) GTEST_SKIP() << "a measurement: CHATTERBOX_REPLICA_BENCH=1 runs it";
    constexpr int kRequests = 6, kTokens = 60;
    // Each replica with 2 sessions of 1 thread: one replica alone can keep both cores of this machine
    // busy, as a pod with the machine's cores would.
    std::printf("| replicas | requests | wall s | requests/s | audio s/s | peak MiB per replica | load average |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    for (int count = 1; count <= 3; ++count) {
        Replicas replicas(count, voices_ + std::to_string(count), {"--sessions", "2"});
        Haproxy balancer(replicas.ports(), dir_);
        ASSERT_TRUE(balancer.wait_ready(2 * count));
        std::atomic<int> phase{0}, ok{0};
        std::atomic<int64_t> audio_ms{0};
        const auto started = Clock::now();
        std::vector<std::thread> clients;
        for (int c = 0; c < kClients; ++c)
            clients.emplace_back([&, c] {
                for (int r = 0; r < kRequests; ++r) {
                    const json body = speech_body("alloy", uint64_t(c * 100 + r), kTokens);
                    const Outcome outcome = send_with_retries(
                        balancer.port(),
                        [&](httplib::Client &client) {
                            return client.Post("/v1/audio/speech", body.dump(), "application/json");
                        },
                        phase);
                    if (outcome.status == 200) ++ok;
                    audio_ms += int64_t(outcome.audio_seconds * 1000);
                }
            });
        for (std::thread &client : clients) client.join();
        const double wall = std::chrono::duration<double>(Clock::now() - started).count();
        std::string peaks;
        for (int i = 0; i < count; ++i) peaks += (i ? ", " : "") + std::to_string(int(peak_mib(replicas[i]) + 0.5));
        std::ifstream loadavg("/proc/loadavg");
        double load = 0;
        loadavg >> load;
        std::printf("| %d | %d | %.1f | %.2f | %.2f | %s | %.1f |\n", count, ok.load(), wall, ok / wall,
                    double(audio_ms) / 1000 / wall, peaks.c_str(), load);
        std::fflush(stdout);
        EXPECT_EQ(ok, kClients * kRequests);
    }
}
