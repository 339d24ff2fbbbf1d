#pragma once
// chatterbox-server's voice library: named voices kept in one folder, each as the engine's voice
// file (voice.h save_voice) plus a small metadata file:
//
//   DIR/<name>.voice   the conditionals (GGUF, checksummed); the voice exists iff this file loads
//   DIR/<name>.json    {"created": unix seconds, "source_seconds": length of the recording,
//                      "voice_sha256": the voice file it describes (another's is ignored)}
//   DIR/.tmp-XXXXXX    a write in progress: flock'ed by its writer while it lasts, and the file
//   DIR/.tmp-XXXXXX.part*  written beside it; files of a marker nobody holds (a crash's leftovers)
//                      are removed when a library opens
//   DIR/.lock          flock'ed: exclusively by a store or remove for its whole write, shared by a
//                      reader loading a voice and its metadata
//
// Every write goes to a temp file in DIR, is fsynced, renamed over the final name and the folder
// fsynced, so a crash (kill -9, power loss) leaves each voice either whole or as it was.
//
// Several processes may share one folder (replicas of the server on a ReadWriteMany volume; the
// folder's file system must honour flock, as local ones, NFSv4 and CephFS do): every lookup checks
// the voice file on disk (a stat; its inode changes with each rename) and reloads it when another
// process replaced it, drops it when another deleted it, and list() reads the folder. Two writers of
// one name, in one process or several, take turns under DIR/.lock: the second sees the first's
// voice (409 without overwrite) and never mixes its metadata with the other's voice. Voices stay
// cached in memory while their file is unchanged. All methods are safe to call from any thread.
#include "models/chatterbox/voice.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace chatterbox::server {

// Names are 1 to kMaxVoiceNameLength characters of [A-Za-z0-9_-], starting with a letter or digit:
// never a path, a dot file or anything a shell or URL would need to quote.
constexpr size_t kMaxVoiceNameLength = 64;
// "" when the name is acceptable, else why not (for the client's error message).
std::string voice_name_problem(const std::string &name);

// $XDG_DATA_HOME/chatterbox/voices, else $HOME/.local/share/chatterbox/voices; throws Error when
// neither variable is set.
std::string default_voices_dir();

struct VoiceInfo {
    std::string name;
    int64_t created = 0;       // Unix seconds
    double source_seconds = 0; // the recording the voice was built from; 0: unknown

    nlohmann::json json() const; // {"object": "voice", "name", "created", "source_seconds"}
};

class VoiceLibrary {
  public:
    // Removes leftover temp files (those no process holds) and loads every voice; a missing folder is
    // an empty library, created by the first write. Throws Error when the folder cannot be read.
    explicit VoiceLibrary(std::string dir);

    const std::string &dir() const { return dir_; }
    // What opening found wrong (skipped files, removed leftovers), one line each.
    const std::vector<std::string> &problems() const { return problems_; }

    // What the folder holds now (written by this process or another), sorted by name.
    std::vector<VoiceInfo> list() const;
    std::optional<VoiceInfo> info(const std::string &name) const;
    // The voice as its file holds it now; nullptr when the library has none of that name.
    std::shared_ptr<const VoiceConditionals> voice(const std::string &name) const;

    // Stores the voice under a valid name (voice_name_problem) atomically and returns what was
    // stored; nullopt, and nothing written, when the name is taken (by any process) and overwrite
    // is false. Throws Error when the disk write fails.
    std::optional<VoiceInfo> store(const std::string &name, const VoiceConditionals &voice, double source_seconds,
                                   bool overwrite);
    // False when there was no such voice.
    bool remove(const std::string &name);

    // A temp file's name in the folder, DIR/.tmp-XXXXXX.part<suffix>, for this object's life: the
    // marker DIR/.tmp-XXXXXX is made and flock'ed first and removed last, so that another process
    // opening the library knows the file is in use. The lock is on the marker, not on the file,
    // which its writer may replace by a rename (the GGUF writer does) and so take any lock with it.
    // Removes the file (when still there) and the marker when destroyed.
    class TempFile {
      public:
        TempFile(const std::string &dir, const std::string &suffix);
        ~TempFile();
        TempFile(const TempFile &) = delete;
        TempFile &operator=(const TempFile &) = delete;
        const std::string &path() const { return path_; }

      private:
        std::string marker_, path_;
        int marker_fd_ = -1; // holds the flock
    };

    // A file in the library folder holding `contents`, deleted with this object (an uploaded
    // recording, for the audio reader, which reads paths); a crash's leftover is removed on open.
    class Scratch {
      public:
        Scratch(const std::string &dir, const std::string &contents, const std::string &suffix);
        const std::string &path() const { return file_.path(); }

      private:
        TempFile file_;
    };

    // Which file a path names: a rename over it (another process's store) changes the inode.
    struct FileIdentity {
        uint64_t device = 0, inode = 0, size = 0;
        int64_t modified_ns = 0;
        bool operator==(const FileIdentity &other) const;
    };

  private:
    struct Entry {
        std::shared_ptr<const VoiceConditionals> voice;
        VoiceInfo info;
        FileIdentity file;
    };
    enum class FolderLocked { no, yes };
    void open();
    // The entry of `name` as the folder holds it now (loaded again when its file changed); nullptr
    // when there is none or it does not load. Needs mutex_; takes DIR/.lock shared to load unless
    // the caller holds it (FolderLocked::yes).
    const Entry *refresh(const std::string &name, FolderLocked locked) const;
    std::vector<std::string> names_on_disk() const;
    std::string voice_path(const std::string &name) const;
    std::string meta_path(const std::string &name) const;

    const std::string dir_;
    std::vector<std::string> problems_;
    mutable std::mutex mutex_;
    mutable std::map<std::string, Entry> voices_;
    // Files that did not load, so that each is reported and parsed once, not on every lookup.
    mutable std::map<std::string, FileIdentity> unloadable_;
};

} // namespace chatterbox::server
