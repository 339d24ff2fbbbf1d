// needs: tiny-model
// chatterbox-server's voice library and voice conversion on the tiny model: voices created,
// listed, used and deleted; a library voice speaks as a PipelineSession with that voice does (same seed,
// the request's exaggeration); overwrite rules; refused names write nothing anywhere; bad and
// oversized uploads; the library after a restart, with a crash's leftovers and a corrupt file; the
// real chatterbox-server killed with SIGKILL during uploads keeps its library; voice conversion
// gives the source's length and the PipelineSession's audio.

#include "audio/audio_file.h"
#include "server/server.h"
#include "server/voice_library.h"
#include "support/server_test_support.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <set>
#include <thread>

extern char **environ;

using namespace chatterbox;
using nlohmann::json;
using test::pcm_of;
using test::pcm_samples;
using test::RunningServer;
namespace fs = std::filesystem;

namespace {

constexpr int kSampleRate = 24000;
constexpr size_t kSamplesPerToken = kSampleRate / 25; // one speech token: 40 ms

std::string read_bytes(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The first `seconds` of the golden reference recording, as wav bytes.
std::string reference_wav(double seconds, const std::string &dir, int sample_rate = 0) {
    audio::AudioBuffer head = audio::read_audio(test::golden_path("ref_voice.wav"));
    head.samples.resize(std::min(head.samples.size(), size_t(seconds * head.sample_rate)));
    const std::string path = (fs::path(dir) / "reference.wav").string();
    audio::write_audio(path, head.samples, sample_rate ? sample_rate : head.sample_rate);
    return read_bytes(path);
}

// The folder's files but its lock file (.lock, made by the first write and kept: voice_library.h).
std::vector<std::string> files_in(const std::string &dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto &entry : fs::recursive_directory_iterator(dir, ec))
        if (entry.path().filename() != ".lock") out.push_back(fs::relative(entry.path(), dir).string());
    std::sort(out.begin(), out.end());
    return out;
}

httplib::UploadFormData field(const std::string &name, const std::string &value) { return {name, value, "", ""}; }
httplib::UploadFormData upload(const std::string &name, const std::string &bytes,
                               const std::string &filename = "me.wav") {
    return {name, bytes, filename, "audio/wav"};
}

httplib::Result create_voice(httplib::Client &client, const std::string &name, const std::string &recording,
                             httplib::UploadFormDataItems extra = {}) {
    extra.push_back(field("name", name));
    extra.push_back(upload("file", recording));
    return client.Post("/v1/audio/voices", extra);
}

std::set<std::string> listed_names(httplib::Client &client) {
    auto result = client.Get("/v1/audio/voices");
    EXPECT_TRUE(result && result->status == 200);
    if (!result) return {};
    const json list = json::parse(result->body);
    EXPECT_EQ(list["object"], "list");
    std::set<std::string> names;
    for (const json &voice : list["data"]) names.insert(voice["name"].get<std::string>());
    return names;
}

json speech(const std::string &voice, uint64_t seed, double exaggeration = 0.5) {
    return {{"input", "Hello from the library."},
            {"voice", voice},
            {"seed", seed},
            {"max_new_tokens", 20},
            {"response_format", "pcm"},
            {"exaggeration", exaggeration}};
}

httplib::Result say(httplib::Client &client, const json &body) {
    return client.Post("/v1/audio/speech", body.dump(), "application/json");
}

// Expects an OpenAI-shaped error with this status naming `param` ("" : null).
void expect_error(const httplib::Result &result, int status, const std::string &param, const std::string &fragment) {
    ASSERT_TRUE(result) << "no answer (expected " << status << " with '" << fragment << "'): " << result.error();
    EXPECT_EQ(result->status, status) << result->body;
    const json error = json::parse(result->body, nullptr, false);
    ASSERT_TRUE(error.is_object() && error.contains("error")) << result->body;
    EXPECT_EQ(error["error"]["param"], param.empty() ? json(nullptr) : json(param)) << result->body;
    EXPECT_TRUE(test::contains(error["error"]["message"], fragment));
}

class ServerVoices : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        engine_ = test::tiny_engine();
        recording_ = new std::string(reference_wav(1.5, test::temp_dir("voices_recording")));
    }
    static void TearDownTestSuite() {
        engine_.reset();
        delete recording_;
    }

    void SetUp() override {
        root_ = test::temp_dir("voices");
        dir_ = (fs::path(root_) / "library").string();
    }

    server::ServerOptions options() const {
        server::ServerOptions options;
        options.threads = 1;
        options.voices_dir = dir_;
        return options;
    }

    // The voice a PipelineSession builds from the same recording.
    static VoiceConditionals session_voice(const std::string &recording, float exaggeration) {
        const std::string path = (fs::path(test::temp_dir("voices_session")) / "r.wav").string();
        std::ofstream(path, std::ios::binary) << recording;
        PipelineSession session(*engine_, PipelineSessionOptions{1});
        return session.voice_from_file(path, exaggeration);
    }

    static std::vector<int16_t> session_speech(const VoiceConditionals &voice, const json &body) {
        PipelineSession session(*engine_, PipelineSessionOptions{1});
        SynthesisOptions options;
        options.params.sampling.seed = body["seed"];
        options.params.sampling.max_new_tokens = body["max_new_tokens"];
        options.params.exaggeration = body["exaggeration"];
        return pcm_of(session.synthesize(body["input"].get<std::string>(), voice, options).wave);
    }

    static std::unique_ptr<PipelineModel> engine_;
    static std::string *recording_;
    std::string root_, dir_;
};

std::unique_ptr<PipelineModel> ServerVoices::engine_;
std::string *ServerVoices::recording_ = nullptr;

TEST_F(ServerVoices, CreateListGetUseDelete) {
    RunningServer server(*engine_, options());
    httplib::Client client = server.client();
    EXPECT_TRUE(listed_names(client).empty());
    EXPECT_FALSE(fs::exists(dir_)) << "the folder is made by the first upload";

    auto created = create_voice(client, "alice", *recording_);
    ASSERT_TRUE(created);
    ASSERT_EQ(created->status, 201) << created->body;
    const json voice = json::parse(created->body);
    EXPECT_EQ(voice["name"], "alice");
    EXPECT_EQ(voice["object"], "voice");
    EXPECT_NEAR(voice["source_seconds"].get<double>(), 1.5, 1e-6);
    EXPECT_GT(voice["created"].get<int64_t>(), 1700000000);
    EXPECT_EQ(files_in(dir_), (std::vector<std::string>{"alice.json", "alice.voice"}));
    EXPECT_EQ(listed_names(client), std::set<std::string>{"alice"});
    auto got = client.Get("/v1/audio/voices/alice");
    ASSERT_EQ(got->status, 200);
    EXPECT_EQ(json::parse(got->body), voice);

    // Used by name, at two exaggerations: the PipelineSession's audio with a voice built from the same
    // recording at that exaggeration, and the same seed.
    for (float exaggeration : {0.5f, 1.2f}) {
        SCOPED_TRACE(exaggeration);
        const json body = speech("alice", 11, exaggeration);
        auto said = say(client, body);
        ASSERT_EQ(said->status, 200) << said->body;
        const std::vector<int16_t> expected = session_speech(session_voice(*recording_, exaggeration), body);
        ASSERT_FALSE(expected.empty());
        EXPECT_EQ(pcm_samples(said->body), expected);
    }
    // And it changes the speech. Under torch's draw (argmax of p / q) the tiny model's small change of
    // the logits flips a token only near a tie: tried at a low temperature over a long generation,
    // seed after seed until one speaks differently.
    const auto long_speech = [&](uint64_t seed, double exaggeration) {
        json body = speech("alice", seed, exaggeration);
        body["temperature"] = 0.05;
        body["max_new_tokens"] = 100;
        body["length_bound"] = false;
        body["stop_guards"] = false;
        auto said = say(client, body);
        EXPECT_EQ(said->status, 200) << said->body;
        return said->body;
    };
    bool exaggeration_differs = false;
    for (uint64_t seed = 0; seed < 8 && !exaggeration_differs; ++seed)
        exaggeration_differs = long_speech(seed, 0.5) != long_speech(seed, 1.2);
    EXPECT_TRUE(exaggeration_differs) << "the exaggeration was not applied";
    EXPECT_NE(say(client, speech("alice", 11))->body, say(client, speech("default", 11))->body);

    auto deleted = client.Delete("/v1/audio/voices/alice");
    ASSERT_EQ(deleted->status, 200);
    EXPECT_EQ(json::parse(deleted->body), (json{{"object", "voice"}, {"name", "alice"}, {"deleted", true}}));
    EXPECT_TRUE(files_in(dir_).empty());
    EXPECT_TRUE(listed_names(client).empty());
    expect_error(client.Get("/v1/audio/voices/alice"), 404, "name", "no voice 'alice'");
    expect_error(client.Delete("/v1/audio/voices/alice"), 404, "name", "no voice 'alice'");
    expect_error(say(client, speech("alice", 11)), 400, "voice", "unknown");
}

TEST_F(ServerVoices, OverwriteNeedsIntentAndALibraryVoiceShadowsABuiltinName) {
    RunningServer server(*engine_, options());
    httplib::Client client = server.client();
    ASSERT_EQ(create_voice(client, "bob", *recording_)->status, 201);
    const std::string stored = read_bytes(dir_ + "/bob.voice");

    const std::string shorter = reference_wav(1.0, root_);
    auto again = create_voice(client, "bob", shorter);
    expect_error(again, 409, "name", "overwrite=true");
    EXPECT_EQ(json::parse(again->body)["error"]["code"], "voice_exists");
    EXPECT_EQ(read_bytes(dir_ + "/bob.voice"), stored);
    expect_error(create_voice(client, "bob", shorter, {field("overwrite", "false")}), 409, "name", "already");
    expect_error(create_voice(client, "bob", shorter, {field("overwrite", "yes")}), 400, "overwrite", "true or false");

    auto replaced = create_voice(client, "bob", shorter, {field("overwrite", "true")});
    ASSERT_EQ(replaced->status, 201) << replaced->body;
    EXPECT_NEAR(json::parse(replaced->body)["source_seconds"].get<double>(), 1.0, 1e-6);
    EXPECT_NE(read_bytes(dir_ + "/bob.voice"), stored);
    const json body = speech("bob", 5);
    EXPECT_EQ(pcm_samples(say(client, body)->body), session_speech(session_voice(shorter, 0.5f), body));

    // "alloy" is the built-in voice until the library holds one of that name.
    const json alloy = speech("alloy", 5);
    const std::vector<int16_t> builtin = session_speech(engine_->builtin_voice(0.5f), alloy);
    EXPECT_EQ(pcm_samples(say(client, alloy)->body), builtin);
    ASSERT_EQ(create_voice(client, "alloy", *recording_)->status, 201);
    EXPECT_EQ(pcm_samples(say(client, alloy)->body), session_speech(session_voice(*recording_, 0.5f), alloy));
    ASSERT_EQ(client.Delete("/v1/audio/voices/alloy")->status, 200);
    EXPECT_EQ(pcm_samples(say(client, alloy)->body), builtin);
}

TEST_F(ServerVoices, RefusedNamesWriteNothingAnywhere) {
    RunningServer server(*engine_, options());
    httplib::Client client = server.client();
    const std::vector<std::string> bad = {"../x",
                                          "a/b",
                                          ".hidden",
                                          "",
                                          std::string(65, 'v'),
                                          "%2e%2e",
                                          "..",
                                          "a b",
                                          "-x",
                                          "_x",
                                          "a\\b",
                                          "caf\xC3\xA9",
                                          std::string("a\0b", 3),
                                          "x.voice"};
    for (const std::string &name : bad) {
        SCOPED_TRACE(name);
        expect_error(create_voice(client, name, *recording_), 400, "name", "refused");
    }
    for (const char *path : {"/v1/audio/voices/..%2Fx", "/v1/audio/voices/%2e%2e", "/v1/audio/voices/.hidden",
                             "/v1/audio/voices/", "/v1/audio/voices/a%2Fb", "/v1/audio/voices/a%00b"}) {
        SCOPED_TRACE(path);
        expect_error(client.Get(path), 400, "name", "refused");
        expect_error(client.Delete(path), 400, "name", "refused");
    }
    // Names are checked before the upload is looked at: nothing was written, not even the folder.
    EXPECT_TRUE(files_in(root_).empty());

    const std::string longest(server::kMaxVoiceNameLength, 'v');
    ASSERT_EQ(create_voice(client, longest, *recording_)->status, 201);
    ASSERT_EQ(create_voice(client, "Ok_name-2", *recording_)->status, 201);
    EXPECT_EQ(listed_names(client), (std::set<std::string>{longest, "Ok_name-2"}));
}

TEST_F(ServerVoices, BadAndOversizedUploadsAreClearErrors) {
    server::ServerOptions small = options();
    small.max_upload_bytes = 256 << 10;
    small.max_body_bytes = 8192;
    RunningServer server(*engine_, small);
    httplib::Client client = server.client();

    expect_error(client.Post("/v1/audio/voices", json{{"name", "x"}}.dump(), "application/json"), 400, "",
                 "multipart/form-data");
    expect_error(client.Post("/v1/audio/voices", httplib::UploadFormDataItems{upload("file", *recording_)}), 400,
                 "name", "required");
    expect_error(client.Post("/v1/audio/voices", httplib::UploadFormDataItems{field("name", "x")}), 400, "file",
                 "required");
    expect_error(create_voice(client, "x", ""), 400, "file", "empty");
    expect_error(
        client.Post("/v1/audio/voices",
                    httplib::UploadFormDataItems{field("name", "x"), upload("file", "RIFF, not a wave", "fake.wav")}),
        400, "file", "'fake.wav' is not an audio file");
    expect_error(create_voice(client, "x", reference_wav(0.05, root_)), 400, "file", "at least");
    expect_error(create_voice(client, "x", reference_wav(0.5, root_, 500)), 400, "file", "500 Hz");
    std::vector<float> silence(kSampleRate, 0.0f);
    audio::write_audio(root_ + "/silence.wav", silence, kSampleRate);
    expect_error(create_voice(client, "x", read_bytes(root_ + "/silence.wav")), 400, "file", "silent");
    expect_error(create_voice(client, "x", *recording_, {field("consent", "yes")}), 400, "consent", "unknown field");
    expect_error(create_voice(client, "x", *recording_, {field("name", "y")}), 400, "name", "twice");

    // 256 KiB for uploads, 8 KiB for JSON: each route has its own limit.
    const std::string too_big(300 << 10, 'x');
    expect_error(create_voice(client, "x", too_big), 413, "", "too large");
    json long_body = speech("default", 1);
    long_body["input"] = std::string(9000, 'a');
    expect_error(say(client, long_body), 413, "", "too large");
    ASSERT_EQ(create_voice(client, "fits", reference_wav(3.0, root_))->status, 201) << "a 144 KB upload fits";

    // httplib limits only bodies with a Content-Length, so a chunked one is refused before it is read.
    const std::string form = "--b\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nx\r\n--b--\r\n";
    auto chunked = client.Post(
        "/v1/audio/voices",
        [&](size_t, httplib::DataSink &sink) {
            sink.write(form.data(), form.size());
            sink.done();
            return true;
        },
        "multipart/form-data; boundary=b");
    // The refusal comes before the body is read, so the client's write may meet the closed
    // connection first (httplib then reports Error::Write); when the answer arrives, it is the 411.
    if (chunked || chunked.error() != httplib::Error::Write) expect_error(chunked, 411, "", "Content-Length");

    // A recording over the length limit (10 minutes) is refused from its header.
    std::vector<float> long_quiet(size_t(601 * 1000), 0.01f);
    audio::write_audio(root_ + "/long.wav", long_quiet, 1000);
    server::ServerOptions roomy = options();
    RunningServer big(*engine_, roomy);
    httplib::Client big_client = big.client();
    expect_error(create_voice(big_client, "x", read_bytes(root_ + "/long.wav")), 400, "file", "the limit is 600");

    EXPECT_EQ(listed_names(client), std::set<std::string>{"fits"});
    EXPECT_EQ(files_in(dir_), (std::vector<std::string>{"fits.json", "fits.voice"})) << "no scratch file is left";
}

TEST_F(ServerVoices, ConcurrentUploadsOfOneNameStoreOne) {
    server::ServerOptions two = options();
    two.sessions = 2;
    RunningServer server(*engine_, two);
    std::vector<std::future<int>> statuses;
    for (int i = 0; i < 4; ++i)
        statuses.push_back(std::async(std::launch::async, [&] {
            httplib::Client client = server.client();
            auto result = create_voice(client, "same", *recording_);
            return result ? result->status : -1;
        }));
    std::multiset<int> seen;
    for (auto &status : statuses) seen.insert(status.get());
    EXPECT_EQ(seen.count(201), 1u);
    EXPECT_EQ(seen.count(409), 3u);
    EXPECT_EQ(files_in(dir_), (std::vector<std::string>{"same.json", "same.voice"}));
}

TEST_F(ServerVoices, TheLibrarySurvivesARestartWithLeftoversAndACorruptFile) {
    json before;
    std::string said;
    {
        RunningServer server(*engine_, options());
        httplib::Client client = server.client();
        ASSERT_EQ(create_voice(client, "one", *recording_)->status, 201);
        ASSERT_EQ(create_voice(client, "two", reference_wav(1.0, root_))->status, 201);
        before = json::parse(client.Get("/v1/audio/voices")->body);
        said = say(client, speech("one", 3))->body;
    }
    // What a crash leaves: a temp file, metadata whose voice was being deleted, a damaged voice.
    std::ofstream(dir_ + "/.tmp-a1B2c3") << "half a voice";
    std::ofstream(dir_ + "/gone.json") << "{\"created\": 1}";
    std::string damaged = read_bytes(dir_ + "/two.voice");
    damaged[damaged.size() / 2] ^= 0x5A;
    std::ofstream(dir_ + "/broken.voice", std::ios::binary) << damaged;
    std::ofstream(dir_ + "/notes.txt") << "not ours";

    const server::VoiceLibrary library(dir_);
    EXPECT_EQ(library.list().size(), 2u);
    ASSERT_EQ(library.problems().size(), 2u);
    std::string problems = library.problems()[0] + "\n" + library.problems()[1];
    EXPECT_TRUE(test::contains(problems, "removed '.tmp-a1B2c3'"));
    EXPECT_TRUE(test::contains(problems, "skipped 'broken.voice'"));
    EXPECT_EQ(files_in(dir_), (std::vector<std::string>{"broken.voice", "notes.txt", "one.json", "one.voice",
                                                        "two.json", "two.voice"}));

    RunningServer server(*engine_, options());
    httplib::Client client = server.client();
    EXPECT_EQ(json::parse(client.Get("/v1/audio/voices")->body), before);
    EXPECT_EQ(say(client, speech("one", 3))->body, said);
    expect_error(say(client, speech("broken", 3)), 400, "voice", "unknown");
    // A damaged file is not a voice: an upload of that name replaces it.
    ASSERT_EQ(create_voice(client, "broken", *recording_)->status, 201);
    EXPECT_EQ(listed_names(client), (std::set<std::string>{"broken", "one", "two"}));
}

// The real chatterbox-server in its own process, its stderr in a file.
class ServerProcess {
  public:
    ServerProcess(const std::string &voices, const std::string &log) {
        const std::string binary = test::tool_path("chatterbox-server");
        std::vector<std::string> args = {binary, "-m", test::tiny_model_path(), "--port", "0", "--voices", voices,
                                         "-t",   "1"};
        std::vector<char *> argv;
        for (std::string &arg : args) argv.push_back(arg.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        const int spawned = posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (spawned != 0) throw std::runtime_error("cannot start " + binary);
        // It says its port once it listens.
        const std::regex listening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        std::smatch match;
        std::string text;
        while (std::chrono::steady_clock::now() < deadline) {
            text = read_bytes(log);
            if (std::regex_search(text, match, listening)) {
                port_ = std::stoi(match[1]);
                return;
            }
            if (waitpid(pid_, nullptr, WNOHANG) == pid_) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        kill_now();
        throw std::runtime_error("chatterbox-server did not start: " + text);
    }
    ~ServerProcess() { kill_now(); }

    int port() const { return port_; }
    httplib::Client client() const {
        httplib::Client client("127.0.0.1", port_);
        client.set_read_timeout(60, 0);
        return client;
    }
    void kill_now() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }

  private:
    pid_t pid_ = -1;
    int port_ = 0;
};

// A connection that sends an upload in the pieces the test chooses.
class RawUpload {
  public:
    RawUpload(int port, const std::string &name, const std::string &recording) {
        const std::string boundary = "----chatterbox-test-boundary";
        body_ = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n" + name + "\r\n--" +
                boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"slow.wav\"\r\n" +
                "Content-Type: audio/wav\r\n\r\n" + recording + "\r\n--" + boundary + "--\r\n";
        head_ = "POST /v1/audio/voices HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=" +
                boundary + "\r\nContent-Length: " + std::to_string(body_.size()) + "\r\n\r\n";
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(uint16_t(port));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd_, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0)
            throw std::runtime_error("cannot connect");
    }
    ~RawUpload() { ::close(fd_); }

    size_t size() const { return head_.size() + body_.size(); }
    // Sends bytes [from, to) of the request; false when the server is gone.
    bool send(size_t from, size_t to) {
        const std::string request = head_ + body_;
        for (size_t at = from; at < to;) {
            const ssize_t n = ::send(fd_, request.data() + at, to - at, MSG_NOSIGNAL);
            if (n <= 0) return false;
            at += size_t(n);
        }
        return true;
    }

  private:
    std::string head_, body_;
    int fd_ = -1;
};

bool has_temp_file(const std::string &dir) {
    for (const std::string &file : files_in(dir))
        if (file.rfind(".tmp-", 0) == 0) return true;
    return false;
}

TEST_F(ServerVoices, KillDashNineDuringUploadsLeavesTheLibraryIntact) {
    const std::string log = root_ + "/server.log";
    const std::string long_recording = reference_wav(7.0, root_);
    std::vector<std::string> stored;
    {
        ServerProcess server(dir_, log);
        httplib::Client client = server.client();
        ASSERT_EQ(create_voice(client, "keep", *recording_)->status, 201);
        stored = files_in(dir_);

        // Killed half-way through receiving an upload.
        RawUpload slow(server.port(), "half", long_recording);
        ASSERT_TRUE(slow.send(0, slow.size() / 2));
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        server.kill_now();
    }
    EXPECT_EQ(files_in(dir_), stored);
    {
        ServerProcess server(dir_, log);
        httplib::Client client = server.client();
        EXPECT_EQ(listed_names(client), std::set<std::string>{"keep"});

        // Killed while the voice is being built: the upload's scratch file is in the folder then.
        RawUpload whole(server.port(), "built", long_recording);
        ASSERT_TRUE(whole.send(0, whole.size()));
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!has_temp_file(dir_) && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        EXPECT_TRUE(has_temp_file(dir_)) << "the upload's scratch file never appeared";
        server.kill_now();
    }
    ServerProcess server(dir_, log);
    httplib::Client client = server.client();
    const std::set<std::string> names = listed_names(client);
    EXPECT_TRUE(names == std::set<std::string>{"keep"} || names == (std::set<std::string>{"built", "keep"}));
    EXPECT_FALSE(has_temp_file(dir_)) << "leftovers are removed when the library opens";
    EXPECT_TRUE(test::contains(read_bytes(log), "removed '.tmp-"));
    for (const std::string &name : names) {
        auto said = say(client, speech(name, 2));
        ASSERT_TRUE(said);
        EXPECT_EQ(said->status, 200) << name << ": " << said->body;
    }
}

TEST_F(ServerVoices, VoiceConversionGivesTheSourcesLengthInTheVoice) {
    RunningServer server(*engine_, options());
    httplib::Client client = server.client();
    ASSERT_EQ(create_voice(client, "target", *recording_)->status, 201);
    const std::string source = reference_wav(1.0, root_);
    const audio::AudioBuffer source_audio = audio::read_audio(root_ + "/reference.wav");

    const auto convert = [&](httplib::UploadFormDataItems items) {
        items.push_back(upload("file", source, "source.wav"));
        return client.Post("/v1/audio/voice-conversion", items);
    };
    const auto session_conversion = [&](const VoiceConditionals &voice, uint64_t seed) {
        PipelineSession session(*engine_, PipelineSessionOptions{1});
        SynthesisOptions options;
        options.params.sampling.seed = seed;
        return pcm_of(session.convert(source_audio, voice, options).wave);
    };

    auto by_name = convert({field("voice", "target"), field("response_format", "pcm"), field("seed", "9")});
    ASSERT_EQ(by_name->status, 200) << by_name->body;
    EXPECT_EQ(by_name->get_header_value("Content-Type"), "audio/pcm");
    const std::vector<int16_t> converted = pcm_samples(by_name->body);
    EXPECT_NEAR(double(converted.size()), double(source_audio.samples.size()), double(kSamplesPerToken));
    EXPECT_EQ(converted, session_conversion(session_voice(*recording_, 0.5f), 9));

    auto by_file = convert({upload("voice_file", *recording_), field("response_format", "pcm"), field("seed", "9")});
    ASSERT_EQ(by_file->status, 200) << by_file->body;
    EXPECT_EQ(pcm_samples(by_file->body), converted);

    auto wav = convert({field("voice", "default")});
    ASSERT_EQ(wav->status, 200) << wav->body;
    EXPECT_EQ(wav->get_header_value("Content-Type"), "audio/wav");
    EXPECT_EQ(wav->body.substr(0, 4), "RIFF");

    expect_error(convert({field("voice", "nobody")}), 400, "voice", "unknown");
    expect_error(convert({field("voice", "../x")}), 400, "voice", "unknown");
    expect_error(convert({}), 400, "voice", "required");
    expect_error(convert({field("voice", "target"), upload("voice_file", *recording_)}), 400, "voice", "not both");
    expect_error(convert({field("voice", "target"), field("response_format", "au")}), 400, "response_format",
                 "unknown");
    expect_error(convert({field("voice", "target"), field("seed", "-1")}), 400, "seed", "non-negative");
    expect_error(convert({upload("voice_file", "not audio")}), 400, "voice_file", "not an audio file");
    expect_error(client.Post("/v1/audio/voice-conversion", httplib::UploadFormDataItems{field("voice", "target")}), 400,
                 "file", "required");
    EXPECT_EQ(files_in(dir_), (std::vector<std::string>{"target.json", "target.voice"}));
}

} // namespace
