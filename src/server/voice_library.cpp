#include "server/voice_library.h"

#include "core/error.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

namespace chatterbox::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char *kTempPrefix = ".tmp-";
constexpr const char *kVoiceExtension = ".voice";
constexpr const char *kMetaExtension = ".json";

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

int64_t now_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

void fsync_path(const std::string &path, int flags) {
    const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
    if (fd < 0) fail("cannot open '", path, "' to sync it: ", std::strerror(errno));
    const int synced = ::fsync(fd);
    const int error = errno;
    ::close(fd);
    if (synced != 0) fail("cannot sync '", path, "' to disk: ", std::strerror(error));
}

// A new empty file in `dir` named .tmp-XXXXXX<suffix>; creates the folder when missing (and syncs
// its parent, so the new folder itself survives a crash).
std::string make_temp_file(const std::string &dir, const std::string &suffix) {
    std::error_code ec;
    if (fs::create_directories(dir, ec)) fsync_path(fs::absolute(dir).parent_path().string(), O_RDONLY | O_DIRECTORY);
    if (ec) fail("cannot create the voice folder '", dir, "': ", ec.message());
    std::string path = (fs::path(dir) / (std::string(kTempPrefix) + "XXXXXX" + suffix)).string();
    const int fd = ::mkstemps(path.data(), int(suffix.size()));
    if (fd < 0) fail("cannot create a temp file in '", dir, "': ", std::strerror(errno));
    ::close(fd);
    return path;
}

// write(temp) fills a temp file beside `path`, which is then synced and renamed over `path`; the
// folder is synced by the caller once all renames are done.
void write_atomically(const std::string &dir, const std::string &path,
                      const std::function<void(const std::string &)> &write) {
    const std::string temp = make_temp_file(dir, "");
    try {
        write(temp);
        fsync_path(temp, O_RDONLY);
        if (std::rename(temp.c_str(), path.c_str()) != 0)
            fail("cannot rename '", temp, "' to '", path, "': ", std::strerror(errno));
    } catch (...) {
        std::error_code ignored;
        fs::remove(temp, ignored);
        throw;
    }
}

void write_text(const std::string &path, const std::string &text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) fail("cannot write '", path, "'");
}

int64_t modified_seconds(const std::string &path) {
    struct stat status {};
    return ::stat(path.c_str(), &status) == 0 ? int64_t(status.st_mtime) : 0;
}

// The metadata file's fields; a missing or unreadable one falls back to the voice file's time
// (metadata is written after the voice, so a crash between the two leaves a voice without it).
VoiceInfo read_info(const std::string &name, const std::string &meta_path, const std::string &voice_path) {
    VoiceInfo info;
    info.name = name;
    info.created = modified_seconds(voice_path);
    std::ifstream in(meta_path, std::ios::binary);
    if (!in) return info;
    std::stringstream text;
    text << in.rdbuf();
    const json meta = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (meta.is_object()) {
        if (meta.contains("created") && meta["created"].is_number_integer()) info.created = meta["created"];
        if (meta.contains("source_seconds") && meta["source_seconds"].is_number())
            info.source_seconds = meta["source_seconds"];
    }
    return info;
}

} // namespace

std::string voice_name_problem(const std::string &name) {
    if (name.empty()) return "a voice name must not be empty";
    if (name.size() > kMaxVoiceNameLength)
        return concat("a voice name has at most ", kMaxVoiceNameLength, " characters, this one ", name.size());
    if (!std::all_of(name.begin(), name.end(), name_char))
        return "a voice name holds only letters, digits, '_' and '-'";
    if (name[0] == '_' || name[0] == '-') return "a voice name starts with a letter or a digit";
    return "";
}

std::string default_voices_dir() {
    const char *data_home = std::getenv("XDG_DATA_HOME");
    // The XDG base-directory spec ignores relative values.
    if (data_home && data_home[0] == '/') return (fs::path(data_home) / "chatterbox" / "voices").string();
    const char *home = std::getenv("HOME");
    if (home && home[0]) return (fs::path(home) / ".local" / "share" / "chatterbox" / "voices").string();
    fail("no default voice folder: neither XDG_DATA_HOME nor HOME is set; pass --voices DIR");
}

json VoiceInfo::json() const {
    return {{"object", "voice"}, {"name", name}, {"created", created}, {"source_seconds", source_seconds}};
}

VoiceLibrary::VoiceLibrary(std::string dir) : dir_(std::move(dir)) { open(); }

std::string VoiceLibrary::voice_path(const std::string &name) const {
    return (fs::path(dir_) / (name + kVoiceExtension)).string();
}

std::string VoiceLibrary::meta_path(const std::string &name) const {
    return (fs::path(dir_) / (name + kMetaExtension)).string();
}

void VoiceLibrary::open() {
    std::error_code ec;
    if (!fs::exists(dir_, ec)) return; // created by the first write
    if (!fs::is_directory(dir_, ec)) fail("the voice folder '", dir_, "' is not a folder");

    std::vector<std::string> metadata;
    for (const fs::directory_entry &entry : fs::directory_iterator(dir_, ec)) {
        const std::string file = entry.path().filename().string();
        if (file.rfind(kTempPrefix, 0) == 0) {
            std::error_code removed;
            fs::remove(entry.path(), removed);
            problems_.push_back(concat("removed '", file, "', left over from an interrupted write"));
            continue;
        }
        const std::string stem = entry.path().stem().string();
        const std::string extension = entry.path().extension().string();
        if (extension == kMetaExtension && voice_name_problem(stem).empty()) metadata.push_back(stem);
        if (extension != kVoiceExtension || !entry.is_regular_file()) continue;
        if (!voice_name_problem(stem).empty()) {
            problems_.push_back(concat("skipped '", file, "': not a valid voice name"));
            continue;
        }
        try {
            auto voice = std::make_shared<const Voice>(load_voice(entry.path().string()));
            voices_[stem] = Entry{std::move(voice), read_info(stem, meta_path(stem), entry.path().string())};
        } catch (const std::exception &e) {
            problems_.push_back(concat("skipped '", file, "': ", e.what()));
        }
    }
    if (ec) fail("cannot read the voice folder '", dir_, "': ", ec.message());
    // Metadata whose voice is gone: a delete interrupted between its two removals.
    for (const std::string &name : metadata) {
        if (voices_.count(name) || fs::exists(voice_path(name), ec)) continue;
        fs::remove(meta_path(name), ec);
    }
    for (const std::string &problem : problems_) std::fprintf(stderr, "voice library: %s\n", problem.c_str());
}

std::vector<VoiceInfo> VoiceLibrary::list() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<VoiceInfo> out;
    for (const auto &[name, entry] : voices_) out.push_back(entry.info);
    return out;
}

std::optional<VoiceInfo> VoiceLibrary::info(const std::string &name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = voices_.find(name);
    if (it == voices_.end()) return std::nullopt;
    return it->second.info;
}

std::shared_ptr<const Voice> VoiceLibrary::voice(const std::string &name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = voices_.find(name);
    return it == voices_.end() ? nullptr : it->second.voice;
}

bool VoiceLibrary::store(const std::string &name, const Voice &voice, double source_seconds, bool overwrite) {
    if (const std::string problem = voice_name_problem(name); !problem.empty())
        throw InvalidArgument(concat("voice name '", name, "': ", problem));
    VoiceInfo info;
    info.name = name;
    info.created = now_seconds();
    info.source_seconds = source_seconds;
    // One writer at a time: the check for a taken name and the write are one step.
    std::lock_guard<std::mutex> lock(mutex_);
    if (voices_.count(name) && !overwrite) return false;
    write_atomically(dir_, voice_path(name), [&](const std::string &temp) { save_voice(voice, temp); });
    write_atomically(dir_, meta_path(name), [&](const std::string &temp) {
        write_text(temp, json{{"created", info.created}, {"source_seconds", info.source_seconds}}.dump());
    });
    fsync_path(dir_, O_RDONLY | O_DIRECTORY);
    voices_[name] = Entry{std::make_shared<const Voice>(voice), info};
    return true;
}

bool VoiceLibrary::remove(const std::string &name) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!voices_.count(name)) return false;
    std::error_code ec;
    if (!fs::remove(voice_path(name), ec) && ec) fail("cannot delete '", voice_path(name), "': ", ec.message());
    voices_.erase(name);
    fs::remove(meta_path(name), ec);
    fsync_path(dir_, O_RDONLY | O_DIRECTORY);
    return true;
}

VoiceLibrary::Scratch::Scratch(const std::string &dir, const std::string &contents, const std::string &suffix)
    : path_(make_temp_file(dir, suffix)) {
    try {
        write_text(path_, contents);
    } catch (...) {
        std::error_code ignored;
        fs::remove(path_, ignored);
        throw;
    }
}

VoiceLibrary::Scratch::~Scratch() {
    std::error_code ignored;
    fs::remove(path_, ignored);
}

} // namespace chatterbox::server
