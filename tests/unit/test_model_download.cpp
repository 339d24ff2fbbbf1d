// Model location and download, offline: URL building, the default folder, the resume decision, and
// real transfers through libcurl from file:// URLs (a local folder laid out like the model hub) and
// from a loopback fake hub that publishes SHA-256 digests as the real one does (X-Linked-Etag).

#include "core/error.h"
#include "io/file_digest.h"
#include "io/http_download.h"
#include "models/chatterbox/model_download.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>

namespace fs = std::filesystem;
using namespace chatterbox;

namespace {

std::string read_bytes(const fs::path &path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path &path, const std::string &bytes) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
}

// 100 kB of varied bytes, so that a misplaced range shows in the content.
std::string sample_content() {
    std::string bytes(100000, '\0');
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 131 + i / 251) & 0xFF);
    return bytes;
}

std::string file_url(const fs::path &path) { return "file://" + fs::absolute(path).string(); }

std::string error_of(const std::function<void()> &action) {
    try {
        action();
    } catch (const Error &e) {
        return e.what();
    }
    return "(no error)";
}

// The model hub's HTTP side on loopback: GET/HEAD <repo>/resolve/main/<file> answers 302 to
// /storage/<file> with the file's digest in X-Linked-Etag (as for an LFS file), or with only a git
// blob ETag for the files listed as outside LFS; the storage serves the bytes (ranges included).
class FakeHub {
  public:
    explicit FakeHub(std::map<std::string, std::string> files) : files_(std::move(files)) {
        const fs::path scratch = fs::path(test::temp_dir("fake-hub")) / "digest";
        for (const auto &[file, bytes] : files_) {
            write_bytes(scratch, bytes);
            published_[file] = io::file_sha256(scratch.string());
        }
        http_.Get("/(.*)/resolve/main/(.*)", [this](const httplib::Request &request, httplib::Response &response) {
            const std::string file = request.matches[2];
            const std::lock_guard<std::mutex> lock(mutex_);
            if (!files_.count(file)) return void(response.status = 404);
            response.set_redirect("/storage/" + file);
            if (outside_lfs_.count(file))
                response.set_header("ETag", "\"0123456789abcdef0123456789abcdef01234567\"");
            else
                response.set_header("X-Linked-Etag", "\"" + published_.at(file) + "\"");
        });
        http_.Get("/storage/(.*)", [this](const httplib::Request &request, httplib::Response &response) {
            const std::lock_guard<std::mutex> lock(mutex_);
            const auto found = files_.find(request.matches[1]);
            if (found == files_.end()) return void(response.status = 404);
            response.set_content(found->second, "application/octet-stream");
        });
        port_ = http_.bind_to_any_port("127.0.0.1");
        thread_ = std::thread([this] { http_.listen_after_bind(); });
        // bind_to_any_port listens already: connections wait in the backlog until the loop accepts them.
    }
    ~FakeHub() {
        http_.stop();
        thread_.join();
    }

    std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
    std::string url(const std::string &file) const {
        return endpoint() + "/" + kOfficialRepo + "/resolve/main/" + file;
    }
    // Serves `bytes` for `file` while still publishing the digest of what it had at construction.
    void corrupt(const std::string &file, const std::string &bytes) {
        const std::lock_guard<std::mutex> lock(mutex_);
        files_.at(file) = bytes;
    }
    void outside_lfs(const std::string &file) {
        const std::lock_guard<std::mutex> lock(mutex_);
        outside_lfs_[file] = true;
    }

  private:
    // The test changes files_ and outside_lfs_ while the server thread serves them; published_ is
    // fixed before the thread starts.
    std::mutex mutex_;
    std::map<std::string, std::string> files_, published_;
    std::map<std::string, bool> outside_lfs_;
    httplib::Server http_;
    int port_ = 0;
    std::thread thread_;
};

} // namespace

TEST(ModelDownload, ResumePlan) {
    EXPECT_EQ(io::plan_resume(0, 100), io::ResumeAction::start);
    EXPECT_EQ(io::plan_resume(0, io::kUnknownSize), io::ResumeAction::start);
    EXPECT_EQ(io::plan_resume(40, io::kUnknownSize), io::ResumeAction::start);
    EXPECT_EQ(io::plan_resume(40, 100), io::ResumeAction::resume);
    EXPECT_EQ(io::plan_resume(100, 100), io::ResumeAction::complete);
    EXPECT_EQ(io::plan_resume(140, 100), io::ResumeAction::restart);
}

TEST(ModelDownload, HubUrls) {
    EXPECT_EQ(hub_file_url("", kOfficialRepo, kOfficialRevision, "t3_cfg.safetensors"),
              "https://huggingface.co/ResembleAI/chatterbox/resolve/main/t3_cfg.safetensors");
    EXPECT_EQ(hub_file_url("https://mirror.example/", "a/b", "v1", "x.json"),
              "https://mirror.example/a/b/resolve/v1/x.json");
    EXPECT_EQ(hub_repo_page("", kOfficialRepo, kOfficialRevision),
              "https://huggingface.co/ResembleAI/chatterbox/tree/main");
}

TEST(ModelDownload, OfficialFilesAreWhatTtsPyLoads) {
    std::vector<std::string> files = official_model_files();
    std::sort(files.begin(), files.end());
    EXPECT_EQ(files, (std::vector<std::string>{"conds.pt", "s3gen.safetensors", "t3_cfg.safetensors", "tokenizer.json",
                                               "ve.safetensors"}));
}

TEST(ModelDownload, MultilingualFetchesTheT3ItIsAskedFor) {
    const auto has = [](const std::vector<std::string> &files, const std::string &file) {
        return std::find(files.begin(), files.end(), file) != files.end();
    };
    const std::vector<std::string> v2 = official_model_files(Variant::multilingual);
    const std::vector<std::string> v3 = official_model_files(Variant::multilingual, "v3");
    EXPECT_TRUE(has(v2, "t3_mtl23ls_v2.safetensors"));
    EXPECT_FALSE(has(v2, "t3_mtl23ls_v3.safetensors"));
    EXPECT_TRUE(has(v3, "t3_mtl23ls_v3.safetensors"));
    EXPECT_FALSE(has(v3, "t3_mtl23ls_v2.safetensors"));
    EXPECT_EQ(official_model_files(Variant::multilingual, "t3_mtl23ls_v3"), v3);
    EXPECT_EQ(official_model_files(Variant::multilingual, "v2"), v2);
    EXPECT_TRUE(test::contains(error_of([] { official_model_files(Variant::multilingual, "v9"); }), "v2, v3"));
    EXPECT_TRUE(test::contains(error_of([] { official_model_files(Variant::english, "v3"); }), "one T3"));
}

TEST(ModelDownload, DefaultModelPath) {
    EXPECT_EQ(default_model_path({"/models/cb.gguf", "/xdg", "/home/u", ""}), "/models/cb.gguf");
    EXPECT_EQ(default_model_path({"", "/xdg", "/home/u", ""}), "/xdg/chatterbox/models/chatterbox");
    EXPECT_EQ(default_model_path({"", "relative/cache", "/home/u", ""}), "/home/u/.cache/chatterbox/models/chatterbox");
    EXPECT_EQ(default_model_path({"", "", "/home/u", ""}), "/home/u/.cache/chatterbox/models/chatterbox");
    EXPECT_TRUE(test::contains(error_of([] { default_model_path({}); }), "CHATTERBOX_MODEL"));
}

TEST(ModelDownload, MissingFiles) {
    const fs::path dir = test::temp_dir("model-download");
    EXPECT_EQ(missing_model_files((dir / "absent").string()), official_model_files());
    write_bytes(dir / "tokenizer.json", "{}");
    write_bytes(dir / "t3_cfg.safetensors.part", "partial"); // an unfinished download is not the file
    const std::vector<std::string> missing = missing_model_files(dir.string());
    EXPECT_EQ(missing,
              (std::vector<std::string>{"conds.pt", "ve.safetensors", "s3gen.safetensors", "t3_cfg.safetensors"}));
}

TEST(ModelDownload, RemoteSizeOfALocalFile) {
    const fs::path dir = test::temp_dir("model-download");
    write_bytes(dir / "source.bin", sample_content());
    EXPECT_EQ(io::remote_file_size(file_url(dir / "source.bin")), 100000);
}

TEST(ModelDownload, FreshDownloadWithProgress) {
    const fs::path dir = test::temp_dir("model-download");
    const std::string content = sample_content();
    write_bytes(dir / "source.bin", content);
    int64_t last_done = -1, last_total = -1;
    io::DownloadOptions options;
    options.progress = [&](int64_t done, int64_t total) {
        last_done = done;
        last_total = total;
        return true;
    };
    io::download_file(file_url(dir / "source.bin"), (dir / "copy.bin").string(), options);
    EXPECT_EQ(read_bytes(dir / "copy.bin"), content);
    EXPECT_FALSE(fs::exists(dir / "copy.bin.part"));
    EXPECT_EQ(last_done, 100000);
    EXPECT_EQ(last_total, 100000);
}

TEST(ModelDownload, ResumesAPartialFile) {
    const fs::path dir = test::temp_dir("model-download");
    const std::string content = sample_content();
    write_bytes(dir / "source.bin", content);
    // A partial file whose bytes differ from the source: only a ranged request keeps them.
    const std::string earlier(30000, 'x');
    write_bytes(dir / "copy.bin.part", earlier);
    io::download_file(file_url(dir / "source.bin"), (dir / "copy.bin").string());
    EXPECT_EQ(read_bytes(dir / "copy.bin"), earlier + content.substr(30000));
}

TEST(ModelDownload, CompletePartialFileIsOnlyRenamed) {
    const fs::path dir = test::temp_dir("model-download");
    write_bytes(dir / "source.bin", sample_content());
    const std::string earlier(100000, 'y');
    write_bytes(dir / "copy.bin.part", earlier);
    io::download_file(file_url(dir / "source.bin"), (dir / "copy.bin").string());
    EXPECT_EQ(read_bytes(dir / "copy.bin"), earlier);
}

TEST(ModelDownload, OverlongPartialFileRestarts) {
    const fs::path dir = test::temp_dir("model-download");
    const std::string content = sample_content();
    write_bytes(dir / "source.bin", content);
    write_bytes(dir / "copy.bin.part", std::string(150000, 'z'));
    io::download_file(file_url(dir / "source.bin"), (dir / "copy.bin").string());
    EXPECT_EQ(read_bytes(dir / "copy.bin"), content);
}

TEST(ModelDownload, StoppedByProgressKeepsThePartialFile) {
    const fs::path dir = test::temp_dir("model-download");
    write_bytes(dir / "source.bin", sample_content());
    io::DownloadOptions options;
    options.progress = [](int64_t, int64_t) { return false; };
    const std::string message =
        error_of([&] { io::download_file(file_url(dir / "source.bin"), (dir / "copy.bin").string(), options); });
    EXPECT_TRUE(test::contains(message, "stopped"));
    EXPECT_FALSE(fs::exists(dir / "copy.bin"));
    EXPECT_TRUE(fs::exists(dir / "copy.bin.part"));
}

TEST(ModelDownload, ErrorsNameTheUrlAndCause) {
    const fs::path dir = test::temp_dir("model-download");
    const std::string missing_url = file_url(dir / "absent.bin");
    EXPECT_TRUE(
        test::contains(error_of([&] { io::download_file(missing_url, (dir / "out.bin").string()); }), missing_url));
    // Nothing listens on the discard port of this machine: the connection is refused at once.
    EXPECT_TRUE(test::contains(error_of([&] { io::download_file("http://127.0.0.1:9/x", (dir / "out.bin").string()); }),
                               "http://127.0.0.1:9/x failed"));
    write_bytes(dir / "source.bin", "abc");
    const std::string unwritable = (dir / "no-such-folder" / "out.bin").string();
    EXPECT_TRUE(
        test::contains(error_of([&] { io::download_file(file_url(dir / "source.bin"), unwritable); }), "cannot write"));
}

TEST(ModelDownload, OfficialModelFromALocalHub) {
    const fs::path dir = test::temp_dir("model-download");
    const fs::path hub = dir / "hub";
    for (const std::string &file : official_model_files())
        write_bytes(hub / kOfficialRepo / "resolve" / kOfficialRevision / file, "content of " + file);
    const fs::path model = dir / "cache" / "chatterbox";
    write_bytes(model / "tokenizer.json", "already here"); // present files are kept, not fetched again

    ModelDownloadOptions options;
    options.endpoint = file_url(hub);
    std::vector<std::string> announced;
    options.on_file = [&](size_t, size_t, const std::string &file) { announced.push_back(file); };
    download_official_model(model.string(), options);

    EXPECT_TRUE(missing_model_files(model.string()).empty());
    EXPECT_EQ(read_bytes(model / "tokenizer.json"), "already here");
    EXPECT_EQ(read_bytes(model / "ve.safetensors"), "content of ve.safetensors");
    EXPECT_EQ(announced.size(), official_model_files().size() - 1);
}

TEST(ModelDownload, TurboAndNanoComeFromTheirOwnRepositories) {
    const fs::path dir = test::temp_dir("model-download");
    const fs::path hub = dir / "hub";
    const std::vector<std::string> files = official_model_files(Variant::turbo);
    EXPECT_EQ(files,
              (std::vector<std::string>{"vocab.json", "merges.txt", "added_tokens.json", "special_tokens_map.json",
                                        "tokenizer_config.json", "conds.pt", "ve.safetensors",
                                        "s3gen_meanflow.safetensors", "t3_turbo_v1.safetensors"}));
    EXPECT_EQ(official_model_files(Variant::nano).back(), "t3_nano_v1.safetensors");
    // Multilingual: mtl_tts.py's from_pretrained files (v2, its default), in English's repository but
    // a folder of its own.
    EXPECT_EQ(official_model_files(Variant::multilingual),
              (std::vector<std::string>{"grapheme_mtl_merged_expanded_v1.json", "Cangjie5_TC.json", "conds.pt", "ve.pt",
                                        "s3gen.pt", "t3_mtl23ls_v2.safetensors"}));
    EXPECT_EQ(official_folder(Variant::multilingual).repo, std::string("ResembleAI/chatterbox"));
    EXPECT_EQ(default_model_path({"", "", "/home/u", ""}, Variant::multilingual),
              "/home/u/.cache/chatterbox/models/chatterbox-multilingual");
    EXPECT_EQ(default_model_path({"/models/cb.gguf", "", "/home/u", ""}, Variant::turbo),
              "/home/u/.cache/chatterbox/models/chatterbox-turbo");
    for (const std::string &file : files)
        write_bytes(hub / "ResembleAI/chatterbox-turbo" / "resolve" / kOfficialRevision / file, "content of " + file);
    const fs::path model = dir / "cache" / "chatterbox-turbo";
    ModelDownloadOptions options;
    options.endpoint = file_url(hub);
    options.variant = Variant::turbo;
    download_official_model(model.string(), options);
    EXPECT_TRUE(missing_model_files(model.string(), Variant::turbo).empty());
    EXPECT_EQ(read_bytes(model / "t3_turbo_v1.safetensors"), "content of t3_turbo_v1.safetensors");
    // Nano's repository is another one: its T3 file is not on this hub, and the message names the repository.
    options.variant = Variant::nano;
    EXPECT_TRUE(test::contains(error_of([&] { download_official_model((dir / "nano").string(), options); }),
                               "ResembleAI/chatterbox-nano"));
}

TEST(ModelDownload, FailureSaysWhatToDoOffline) {
    const fs::path dir = test::temp_dir("model-download");
    ModelDownloadOptions options;
    options.endpoint = "http://127.0.0.1:9";
    const std::string message = error_of([&] { download_official_model((dir / "model").string(), options); });
    EXPECT_TRUE(test::contains(message, "Without network access"));
    EXPECT_TRUE(test::contains(message, "http://127.0.0.1:9/ResembleAI/chatterbox/tree/main"));
    EXPECT_TRUE(test::contains(message, "copy them into " + (dir / "model").string()));
    EXPECT_TRUE(test::contains(message, "t3_cfg.safetensors"));
}

TEST(ModelDownload, FileSha256) {
    const fs::path dir = test::temp_dir("model-download");
    write_bytes(dir / "abc", "abc");
    write_bytes(dir / "empty", "");
    // FIPS 180-2's test vector, and the digest of nothing.
    EXPECT_EQ(io::file_sha256((dir / "abc").string()),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(io::file_sha256((dir / "empty").string()),
              "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_TRUE(test::contains(error_of([&] { io::file_sha256((dir / "absent").string()); }), "absent"));
}

TEST(ModelDownload, RemoteInfoReadsTheHubsLinkedEtag) {
    FakeHub hub({{"ve.safetensors", sample_content()}, {"tokenizer.json", "{}"}});
    hub.outside_lfs("tokenizer.json");
    const io::RemoteFile lfs = io::remote_file_info(hub.url("ve.safetensors"));
    EXPECT_EQ(lfs.bytes, 100000);
    const fs::path dir = test::temp_dir("model-download");
    write_bytes(dir / "expected", sample_content());
    EXPECT_EQ(lfs.sha256, io::file_sha256((dir / "expected").string()));
    const io::RemoteFile plain = io::remote_file_info(hub.url("tokenizer.json"));
    EXPECT_EQ(plain.bytes, 2);
    EXPECT_EQ(plain.sha256, ""); // a git blob's SHA-1 is not taken for a SHA-256
}

TEST(ModelDownload, VerifiedDownloadFromAFakeHub) {
    FakeHub hub({{"ve.safetensors", sample_content()}});
    const fs::path dir = test::temp_dir("model-download");
    io::download_file(hub.url("ve.safetensors"), (dir / "ve.safetensors").string());
    EXPECT_EQ(read_bytes(dir / "ve.safetensors"), sample_content());
    EXPECT_FALSE(fs::exists(dir / "ve.safetensors.part"));
}

TEST(ModelDownload, DigestMismatchKeepsTheOldFileAndSaysSo) {
    FakeHub hub({{"ve.safetensors", sample_content()}});
    std::string damaged = sample_content();
    damaged[5000] ^= 1; // same size: only the digest can tell
    hub.corrupt("ve.safetensors", damaged);
    const fs::path dir = test::temp_dir("model-download");
    const fs::path dest = dir / "ve.safetensors";
    write_bytes(dest, "the old file");

    const std::string message = error_of([&] { io::download_file(hub.url("ve.safetensors"), dest.string()); });
    write_bytes(dir / "damaged", damaged);
    write_bytes(dir / "published", sample_content());
    EXPECT_TRUE(test::contains(message, "SHA-256 is " + io::file_sha256((dir / "damaged").string()))) << message;
    EXPECT_TRUE(test::contains(message, "publishes " + io::file_sha256((dir / "published").string()))) << message;
    EXPECT_TRUE(test::contains(message, dest.string() + " is kept as it was")) << message;
    EXPECT_EQ(read_bytes(dest), "the old file");
    EXPECT_FALSE(fs::exists(dir / "ve.safetensors.part")); // resuming a damaged copy cannot help

    // A damaged .part left complete by an earlier run is caught the same way, not renamed.
    write_bytes(dir / "fresh.bin.part", damaged);
    EXPECT_TRUE(
        test::contains(error_of([&] { io::download_file(hub.url("ve.safetensors"), (dir / "fresh.bin").string()); }),
                       "fresh.bin was not created"));
    EXPECT_FALSE(fs::exists(dir / "fresh.bin"));
}

TEST(ModelDownload, OfficialModelFromAFakeHubIsVerified) {
    std::map<std::string, std::string> files;
    for (const std::string &file : official_model_files()) files[file] = "content of " + file;
    FakeHub hub(files);
    hub.outside_lfs("tokenizer.json");
    hub.corrupt("s3gen.safetensors", "CONTENT OF s3gen.safetensors");
    const fs::path model = fs::path(test::temp_dir("model-download")) / "model";
    ModelDownloadOptions options;
    options.endpoint = hub.endpoint();
    const std::string message = error_of([&] { download_official_model(model.string(), options); });
    EXPECT_TRUE(test::contains(message, "s3gen.safetensors is damaged")) << message;
    EXPECT_TRUE(test::contains(message, "Without network access")) << message;
    EXPECT_EQ(missing_model_files(model.string()),
              (std::vector<std::string>{"s3gen.safetensors", "t3_cfg.safetensors"}));
    EXPECT_EQ(read_bytes(model / "tokenizer.json"), "content of tokenizer.json"); // size-checked only
}
