#include "support/server_test_support.h"

#include "audio/audio_encoding.h"
#include "models/chatterbox/pipeline_session.h"
#include "support/test_support.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

extern char **environ;

namespace chatterbox::test {
namespace {

using nlohmann::json;

server::ServerOptions with_free_port(server::ServerOptions options) {
    options.port = 0;
    return options;
}

std::string read_text(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace

pid_t spawn_logging_stderr(std::vector<std::string> argv, const std::string &log_path) {
    std::vector<char *> c_argv;
    for (std::string &arg : argv) c_argv.push_back(arg.data());
    c_argv.push_back(nullptr);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&files, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&files, 2, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    const int spawned = posix_spawn(&pid, c_argv[0], &files, nullptr, c_argv.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    return spawned == 0 ? pid : -1;
}

RunningServer::RunningServer(const PipelineModel &engine, server::ServerOptions options)
    : runtime_(engine, RuntimeOptions{}), server_(runtime_, with_free_port(options)) {
    port_ = server_.bind();
    thread_ = std::thread([this] { server_.run(); });
}

RunningServer::~RunningServer() {
    server_.stop();
    thread_.join();
}

httplib::Client RunningServer::client() const {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(60, 0);
    return client;
}

server::ServerOptions small_server() {
    server::ServerOptions options;
    options.threads = 1;
    options.voices_dir = temp_dir("server_voices"); // not the user's library
    return options;
}

std::unique_ptr<PipelineModel> tiny_engine() {
    PipelineModelOptions options;
    options.model_path = tiny_model_path();
    options.backend.threads = 1;
    return std::make_unique<PipelineModel>(options);
}

httplib::Client loopback_client(int port) {
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(120, 0);
    return client;
}

ServerProcess::ServerProcess(const std::vector<std::string> &args, const ServerProcessSetup &setup) {
    log_path_ = (std::filesystem::path(temp_dir(setup.name)) / "stderr.txt").string();
    std::vector<std::string> argv = {tool_path("chatterbox-server"),
                                     "-m",
                                     tiny_model_path(),
                                     "--host",
                                     "127.0.0.1",
                                     "--port",
                                     std::to_string(setup.port),
                                     "-t",
                                     "1",
                                     "--voices",
                                     setup.voices_dir.empty() ? temp_dir(setup.name + "_voices") : setup.voices_dir};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = spawn_logging_stderr(argv, log_path_);
    if (pid_ <= 0) {
        ADD_FAILURE() << "cannot start " << argv[0];
        return;
    }
    // "listening on http://127.0.0.1:PORT" once it serves; loading the tiny model takes a second.
    const std::regex listening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < give_up) {
        std::smatch match;
        const std::string text = log();
        if (std::regex_search(text, match, listening)) {
            port_ = std::stoi(match[1]);
            return;
        }
        if (wait_exit(std::chrono::seconds(0))) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "chatterbox-server did not start listening:\n" << log();
}

ServerProcess::~ServerProcess() {
    if (pid_ > 0 && !exited_) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
}

httplib::Client ServerProcess::client() const { return loopback_client(port_); }

void ServerProcess::send_signal(int signal) const {
    if (pid_ > 0 && !exited_) kill(pid_, signal);
}

std::optional<int> ServerProcess::wait_exit(std::chrono::seconds timeout) {
    if (pid_ <= 0 || exited_) return std::nullopt;
    const auto give_up = std::chrono::steady_clock::now() + timeout;
    do {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            exited_ = true;
            if (WIFEXITED(status)) return WEXITSTATUS(status);
            ADD_FAILURE() << "chatterbox-server ended by signal " << WTERMSIG(status) << ":\n" << log();
            return std::nullopt;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < give_up);
    return std::nullopt;
}

std::string ServerProcess::log() const { return read_text(log_path_); }

std::string ServerProcess::memory() const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    std::string line, out;
    while (std::getline(status, line))
        if (line.rfind("VmRSS:", 0) == 0 || line.rfind("VmHWM:", 0) == 0)
            out += (out.empty() ? "" : ", ") + std::regex_replace(line, std::regex("\\s+"), " ");
    return out;
}

HeldStream::HeldStream(int port, json body) : first_audio_arrived_(first_audio_.get_future()) {
    body["stream_format"] = "audio";
    std::shared_future<void> hang_up_now = hang_up_.get_future().share();
    thread_ = std::thread([this, port, body, hang_up_now] {
        httplib::Client client = loopback_client(port);
        bool first = true;
        post_streaming(client, body, [&](const char *, size_t) {
            if (first) first_audio_.set_value();
            first = false;
            hang_up_now.wait();
            return false;
        });
    });
}

HeldStream::~HeldStream() { hang_up(); }

bool HeldStream::wait_first_audio(std::chrono::seconds timeout) {
    return first_audio_arrived_.wait_for(timeout) == std::future_status::ready;
}

void HeldStream::hang_up() {
    if (!thread_.joinable()) return;
    hang_up_.set_value();
    thread_.join();
}

json speech(const std::string &input, uint64_t seed, int max_new_tokens) {
    return {{"model", "chatterbox"},
            {"input", input},
            {"voice", "alloy"},
            {"seed", seed},
            {"max_new_tokens", max_new_tokens}};
}

httplib::Result post(httplib::Client &client, const json &body, const httplib::Headers &headers) {
    return client.Post("/v1/audio/speech", headers, body.dump(), "application/json");
}

httplib::Result post_streaming(httplib::Client &client, const json &body,
                               std::function<bool(const char *, size_t)> receive) {
    httplib::Request request;
    request.method = "POST";
    request.path = "/v1/audio/speech";
    request.body = body.dump();
    request.set_header("Content-Type", "application/json");
    request.content_receiver = [receive](const char *data, size_t n, uint64_t, uint64_t) { return receive(data, n); };
    return client.send(request);
}

std::vector<int16_t> pcm_samples(const std::string &bytes) {
    std::vector<int16_t> out(bytes.size() / 2);
    std::memcpy(out.data(), bytes.data(), out.size() * 2);
    return out;
}

std::vector<int16_t> pcm_of(const std::vector<float> &wave) {
    std::string bytes;
    audio::append_pcm16(bytes, wave.data(), wave.size());
    return pcm_samples(bytes);
}

std::string unbase64(const std::string &text) {
    std::string out(text.size() / 4 * 3, '\0');
    const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char *>(out.data()),
                                  reinterpret_cast<const unsigned char *>(text.data()), int(text.size()));
    EXPECT_GE(n, 0) << "bad base64";
    const size_t padding = text.size() - text.find_last_not_of('=') - 1;
    out.resize(size_t(std::max(n, 0)) - padding);
    return out;
}

std::vector<json> sse_events(const std::string &body) {
    std::vector<json> events;
    for (size_t at = 0; at < body.size();) {
        const size_t end = body.find("\n\n", at);
        if (end == std::string::npos) {
            ADD_FAILURE() << "an unterminated event: " << body.substr(at, 200);
            break;
        }
        const std::string event = body.substr(at, end - at);
        if (event.rfind("data: ", 0) != 0)
            ADD_FAILURE() << "not a data event: " << event.substr(0, 200);
        else
            events.push_back(json::parse(event.substr(6), nullptr, false));
        at = end + 2;
    }
    return events;
}

std::optional<double> metric_sample(const std::string &exposition, const std::string &series) {
    std::istringstream lines(exposition);
    std::string line;
    while (std::getline(lines, line))
        if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 && line[series.size()] == ' ')
            return std::strtod(line.c_str() + series.size() + 1, nullptr);
    return std::nullopt;
}

std::optional<std::string> promtool_check(const std::string &exposition) {
    if (std::system("command -v promtool > /dev/null 2>&1") != 0) return std::nullopt;
    const std::filesystem::path dir = temp_dir("promtool");
    std::ofstream(dir / "metrics.txt", std::ios::binary) << exposition;
    const std::string command =
        "promtool check metrics < '" + (dir / "metrics.txt").string() + "' > '" + (dir / "out.txt").string() + "' 2>&1";
    const int status = std::system(command.c_str());
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return std::string();
    const std::string complaint = read_text((dir / "out.txt").string());
    return complaint.empty() ? "promtool failed without a message" : complaint;
}

SseAnswer parse_sse(const std::string &body) {
    SseAnswer answer;
    for (const json &event : sse_events(body)) {
        answer.types.push_back(event.value("type", ""));
        if (answer.types.back() == "speech.audio.delta") answer.audio += unbase64(event["audio"]);
    }
    return answer;
}

void ServerTest::SetUpTestSuite() { engine_ = tiny_engine(); }

void ServerTest::TearDownTestSuite() { engine_.reset(); }

std::vector<float> ServerTest::session_wave(const json &body) {
    PipelineSession session(*engine_, PipelineSessionOptions{1});
    SynthesisOptions options;
    options.params.sampling.seed = body["seed"];
    options.params.sampling.max_new_tokens = body["max_new_tokens"];
    options.params.speed = body.value("speed", 1.0f);
    options.stream = true;
    return session.synthesize(body["input"].get<std::string>(), engine_->builtin_voice(0.5f), options).wave;
}

} // namespace chatterbox::test
