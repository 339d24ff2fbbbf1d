#include "server/voice_library.h"

#include "core/error.h"
#include "io/file_digest.h"

#include <fcntl.h>
#include <sys/file.h>
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
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

namespace chatterbox::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char *kTempPrefix = ".tmp-";
constexpr const char *kVoiceExtension = ".voice";
constexpr const char *kMetaExtension = ".json";
constexpr const char *kLockFile = ".lock";

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

VoiceLibrary::FileIdentity identity_of(const struct stat &status) {
    VoiceLibrary::FileIdentity identity;
    identity.device = uint64_t(status.st_dev);
    identity.inode = uint64_t(status.st_ino);
    identity.size = uint64_t(status.st_size);
    identity.modified_ns = int64_t(status.st_mtim.tv_sec) * 1000000000 + status.st_mtim.tv_nsec;
    return identity;
}

std::optional<VoiceLibrary::FileIdentity> identity_of(const std::string &path) {
    struct stat status {};
    if (::stat(path.c_str(), &status) != 0 || !S_ISREG(status.st_mode)) return std::nullopt;
    return identity_of(status);
}

void create_folder(const std::string &dir) {
    std::error_code ec;
    if (fs::create_directories(dir, ec)) fsync_path(fs::absolute(dir).parent_path().string(), O_RDONLY | O_DIRECTORY);
    if (ec) fail("cannot create the voice folder '", dir, "': ", ec.message());
}

// A flock on DIR/.lock for this object's life (LOCK_EX for a writer, LOCK_SH for a reader). Where the
// lock file cannot be made (a read-only folder that has none), a reader goes on unlocked: nothing
// can write there either.
class FolderLock {
  public:
    FolderLock(const std::string &dir, int operation) {
        const std::string path = (fs::path(dir) / kLockFile).string();
        fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0) fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd_ < 0) {
            if (operation == LOCK_SH) return;
            fail("cannot open the voice folder's lock file '", path, "': ", std::strerror(errno));
        }
        while (::flock(fd_, operation) != 0) {
            if (errno == EINTR) continue;
            const int error = errno;
            ::close(fd_);
            fail("cannot lock '", path, "': ", std::strerror(error));
        }
    }
    ~FolderLock() {
        if (fd_ >= 0) ::close(fd_); // releases the lock
    }
    FolderLock(const FolderLock &) = delete;
    FolderLock &operator=(const FolderLock &) = delete;

  private:
    int fd_ = -1;
};

// write(temp) fills a temp file beside `path`, which is then synced and renamed over `path`; the
// folder is synced by the caller once all renames are done.
void write_atomically(const std::string &dir, const std::string &path,
                      const std::function<void(const std::string &)> &write) {
    const VoiceLibrary::TempFile temp(dir, "");
    write(temp.path());
    fsync_path(temp.path(), O_RDONLY);
    if (std::rename(temp.path().c_str(), path.c_str()) != 0)
        fail("cannot rename '", temp.path(), "' to '", path, "': ", std::strerror(errno));
}

// Whether `path` still names the file open as `fd` (and not a new one of that name, or none).
bool names_the_open_file(const std::string &path, int fd) {
    struct stat open_file {};
    const std::optional<VoiceLibrary::FileIdentity> named = identity_of(path);
    return ::fstat(fd, &open_file) == 0 && named && named->inode == uint64_t(open_file.st_ino) &&
           named->device == uint64_t(open_file.st_dev);
}

// Whether a process holds the flock of this marker (false when it is gone).
bool held_by_a_writer(const std::string &marker) {
    const int fd = ::open(marker.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return false;
    const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
    ::close(fd);
    return held;
}

// Removes `path`, a temp marker or a file beside one, when no process holds its marker (the
// leftover of a crash); true when removed.
bool remove_unheld_temp_file(const std::string &path) {
    const fs::path file(path);
    const std::string name = file.filename().string();
    const std::string marker_name = name.substr(0, std::strlen(kTempPrefix) + 6);
    if (marker_name != name) {
        if (held_by_a_writer((file.parent_path() / marker_name).string())) return false;
        return ::unlink(path.c_str()) == 0;
    }
    // The marker itself: removed only when this process gets its lock and the name still names the
    // file locked (a writer between creating it and locking it checks that its marker is still there).
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return false; // removed by its writer meanwhile
    bool removed = false;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
        removed = names_the_open_file(path, fd) && ::unlink(path.c_str()) == 0;
    }
    ::close(fd);
    return removed;
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

// The metadata file's fields. It names the SHA-256 of the voice file it was written with: a
// metadata file of another write (a writer killed between its two renames) is not this voice's and
// is ignored, as a missing or unreadable one is: the voice file's time stands in for "created".
VoiceInfo read_info(const std::string &name, const std::string &meta_path, const std::string &voice_path) {
    VoiceInfo info;
    info.name = name;
    info.created = modified_seconds(voice_path);
    std::ifstream in(meta_path, std::ios::binary);
    if (!in) return info;
    std::stringstream text;
    text << in.rdbuf();
    const json meta = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (!meta.is_object()) return info;
    if (meta.contains("voice_sha256") && meta["voice_sha256"] != io::file_sha256(voice_path)) return info;
    if (meta.contains("created") && meta["created"].is_number_integer()) info.created = meta["created"];
    if (meta.contains("source_seconds") && meta["source_seconds"].is_number())
        info.source_seconds = meta["source_seconds"];
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

bool VoiceLibrary::FileIdentity::operator==(const FileIdentity &other) const {
    return device == other.device && inode == other.inode && size == other.size && modified_ns == other.modified_ns;
}

VoiceLibrary::VoiceLibrary(std::string dir) : dir_(std::move(dir)) { open(); }

std::string VoiceLibrary::voice_path(const std::string &name) const {
    return (fs::path(dir_) / (name + kVoiceExtension)).string();
}

std::string VoiceLibrary::meta_path(const std::string &name) const {
    return (fs::path(dir_) / (name + kMetaExtension)).string();
}

std::vector<std::string> VoiceLibrary::names_on_disk() const {
    std::vector<std::string> names;
    std::error_code ec;
    if (!fs::exists(dir_, ec)) return names;
    for (const fs::directory_entry &entry : fs::directory_iterator(dir_, ec)) {
        const fs::path &path = entry.path();
        if (path.extension() == kVoiceExtension && voice_name_problem(path.stem().string()).empty())
            names.push_back(path.stem().string());
    }
    if (ec) fail("cannot read the voice folder '", dir_, "': ", ec.message());
    return names;
}

const VoiceLibrary::Entry *VoiceLibrary::refresh(const std::string &name, FolderLocked locked) const {
    const std::optional<FileIdentity> file = identity_of(voice_path(name));
    if (!file) {
        voices_.erase(name);
        unloadable_.erase(name);
        return nullptr;
    }
    const auto cached = voices_.find(name);
    if (cached != voices_.end() && cached->second.file == *file) return &cached->second;
    const auto bad = unloadable_.find(name);
    if (bad != unloadable_.end() && bad->second == *file) return nullptr;

    // Changed on disk: load the voice and its metadata as one writer left them.
    std::optional<FolderLock> folder_lock;
    if (locked == FolderLocked::no) folder_lock.emplace(dir_, LOCK_SH);
    const std::optional<FileIdentity> loading = identity_of(voice_path(name));
    voices_.erase(name);
    if (!loading) return nullptr; // deleted meanwhile
    try {
        auto voice = std::make_shared<const VoiceConditionals>(load_voice(voice_path(name)));
        unloadable_.erase(name);
        Entry entry{std::move(voice), read_info(name, meta_path(name), voice_path(name)), *loading};
        return &voices_.insert_or_assign(name, std::move(entry)).first->second;
    } catch (const std::exception &e) {
        unloadable_[name] = *loading;
        std::fprintf(stderr, "voice library: skipped '%s%s': %s\n", name.c_str(), kVoiceExtension, e.what());
        return nullptr;
    }
}

void VoiceLibrary::open() {
    std::error_code ec;
    if (!fs::exists(dir_, ec)) return; // created by the first write
    if (!fs::is_directory(dir_, ec)) fail("the voice folder '", dir_, "' is not a folder");

    std::vector<std::string> metadata;
    for (const fs::directory_entry &entry : fs::directory_iterator(dir_, ec)) {
        const std::string file = entry.path().filename().string();
        if (file.rfind(kTempPrefix, 0) == 0) {
            // Another replica's write in progress is held, and stays.
            if (remove_unheld_temp_file(entry.path().string()))
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
            const std::optional<FileIdentity> identity = identity_of(entry.path().string());
            if (!identity) continue; // deleted by another process meanwhile
            auto voice = std::make_shared<const VoiceConditionals>(load_voice(entry.path().string()));
            voices_[stem] = Entry{std::move(voice), read_info(stem, meta_path(stem), entry.path().string()), *identity};
        } catch (const std::exception &e) {
            if (const std::optional<FileIdentity> identity = identity_of(entry.path().string()))
                unloadable_[stem] = *identity;
            problems_.push_back(concat("skipped '", file, "': ", e.what()));
        }
    }
    if (ec) fail("cannot read the voice folder '", dir_, "': ", ec.message());
    // Metadata whose voice is gone: a delete interrupted between its two removals. Under the folder's
    // lock, so as not to race another process's store (voice first, then its metadata).
    if (!metadata.empty()) {
        const FolderLock folder_lock(dir_, LOCK_EX);
        for (const std::string &name : metadata) {
            if (voices_.count(name) || fs::exists(voice_path(name), ec)) continue;
            fs::remove(meta_path(name), ec);
        }
    }
    for (const std::string &problem : problems_) std::fprintf(stderr, "voice library: %s\n", problem.c_str());
}

std::vector<VoiceInfo> VoiceLibrary::list() const {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::vector<std::string> found = names_on_disk();
    const std::set<std::string> names(found.begin(), found.end()); // sorted
    // Voices another process deleted leave the cache here (those on disk are refreshed below).
    for (auto it = voices_.begin(); it != voices_.end();)
        it = names.count(it->first) ? std::next(it) : voices_.erase(it);
    std::vector<VoiceInfo> out;
    for (const std::string &name : names)
        if (const Entry *entry = refresh(name, FolderLocked::no)) out.push_back(entry->info);
    return out;
}

std::optional<VoiceInfo> VoiceLibrary::info(const std::string &name) const {
    if (!voice_name_problem(name).empty()) return std::nullopt;
    std::lock_guard<std::mutex> lock(mutex_);
    const Entry *entry = refresh(name, FolderLocked::no);
    if (!entry) return std::nullopt;
    return entry->info;
}

std::shared_ptr<const VoiceConditionals> VoiceLibrary::voice(const std::string &name) const {
    if (!voice_name_problem(name).empty()) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    const Entry *entry = refresh(name, FolderLocked::no);
    return entry ? entry->voice : nullptr;
}

std::optional<VoiceInfo> VoiceLibrary::store(const std::string &name, const VoiceConditionals &voice,
                                             double source_seconds, bool overwrite) {
    if (const std::string problem = voice_name_problem(name); !problem.empty())
        throw InvalidArgument(concat("voice name '", name, "': ", problem));
    VoiceInfo info;
    info.name = name;
    info.created = now_seconds();
    info.source_seconds = source_seconds;
    // One writer at a time, in this process (mutex_) and across processes (DIR/.lock): the check for
    // a taken name and the write of both files are one step.
    std::lock_guard<std::mutex> lock(mutex_);
    create_folder(dir_);
    const FolderLock folder_lock(dir_, LOCK_EX);
    if (!overwrite && refresh(name, FolderLocked::yes)) return std::nullopt;
    write_atomically(dir_, voice_path(name), [&](const std::string &temp) { save_voice(voice, temp); });
    const json meta = {{"created", info.created},
                       {"source_seconds", info.source_seconds},
                       {"voice_sha256", io::file_sha256(voice_path(name))}};
    write_atomically(dir_, meta_path(name), [&](const std::string &temp) { write_text(temp, meta.dump()); });
    fsync_path(dir_, O_RDONLY | O_DIRECTORY);
    const std::optional<FileIdentity> file = identity_of(voice_path(name));
    if (!file) fail("the voice file '", voice_path(name), "' is gone right after it was written");
    unloadable_.erase(name);
    voices_.insert_or_assign(name, Entry{std::make_shared<const VoiceConditionals>(voice), info, *file});
    return info;
}

bool VoiceLibrary::remove(const std::string &name) {
    if (!voice_name_problem(name).empty()) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    std::error_code ec;
    if (!fs::exists(dir_, ec)) return false;
    const FolderLock folder_lock(dir_, LOCK_EX);
    if (!refresh(name, FolderLocked::yes)) return false;
    if (!fs::remove(voice_path(name), ec) && ec) fail("cannot delete '", voice_path(name), "': ", ec.message());
    voices_.erase(name);
    fs::remove(meta_path(name), ec);
    fsync_path(dir_, O_RDONLY | O_DIRECTORY);
    return true;
}

VoiceLibrary::TempFile::TempFile(const std::string &dir, const std::string &suffix) {
    create_folder(dir);
    for (;;) {
        marker_ = (fs::path(dir) / (std::string(kTempPrefix) + "XXXXXX")).string();
        marker_fd_ = ::mkostemp(marker_.data(), O_CLOEXEC);
        if (marker_fd_ < 0) fail("cannot create a temp file in '", dir, "': ", std::strerror(errno));
        if (::flock(marker_fd_, LOCK_EX) != 0) {
            const int error = errno;
            ::unlink(marker_.c_str());
            ::close(marker_fd_);
            fail("cannot lock the temp file '", marker_, "': ", std::strerror(error));
        }
        // Between mkostemp and flock another process's cleanup may have taken the unheld marker for
        // a leftover and removed it: then start again with a new one.
        if (names_the_open_file(marker_, marker_fd_)) break;
        ::close(marker_fd_);
    }
    path_ = marker_ + ".part" + suffix;
}

VoiceLibrary::TempFile::~TempFile() {
    ::unlink(path_.c_str()); // gone already when it was renamed into place
    ::unlink(marker_.c_str());
    ::close(marker_fd_); // releases the lock, last
}

VoiceLibrary::Scratch::Scratch(const std::string &dir, const std::string &contents, const std::string &suffix)
    : file_(dir, suffix) {
    write_text(file_.path(), contents);
}

} // namespace chatterbox::server
