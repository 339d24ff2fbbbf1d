#pragma once
// chatterbox-server's voice library: named voices kept in one folder the server owns, each as the
// engine's voice file (voice.h save_voice) plus a small metadata file:
//
//   DIR/<name>.voice   the conditionals (GGUF, checksummed); the voice exists iff this file loads
//   DIR/<name>.json    {"created": unix seconds, "source_seconds": length of the recording}
//   DIR/.tmp-*         a write in progress; a leftover of a crash is removed when the library opens
//
// Every write goes to a temp file in DIR, is fsynced, renamed over the final name and the folder
// fsynced, so a crash (kill -9, power loss) leaves each voice either whole or as it was. Opening
// loads every voice once (they stay cached in memory); a file that does not load is reported in
// problems() and skipped. All methods are safe to call from any thread.

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
    // Removes leftover temp files and loads every voice; a missing folder is an empty library,
    // created by the first write. Throws Error when the folder cannot be read.
    explicit VoiceLibrary(std::string dir);

    const std::string &dir() const { return dir_; }
    // What opening found wrong (skipped files, removed leftovers), one line each.
    const std::vector<std::string> &problems() const { return problems_; }

    std::vector<VoiceInfo> list() const; // sorted by name
    std::optional<VoiceInfo> info(const std::string &name) const;
    // The cached voice; nullptr when the library has none of that name.
    std::shared_ptr<const Voice> voice(const std::string &name) const;

    // Stores the voice under a valid name (voice_name_problem) atomically; false, and nothing
    // written, when the name is taken and overwrite is false. Throws Error when the disk write fails.
    bool store(const std::string &name, const Voice &voice, double source_seconds, bool overwrite);
    // False when there was no such voice.
    bool remove(const std::string &name);

    // A file in the library folder holding `contents`, deleted with this object (an uploaded
    // recording, for the audio reader, which reads paths); a crash's leftover is removed on open.
    class Scratch {
      public:
        Scratch(const std::string &dir, const std::string &contents, const std::string &suffix);
        ~Scratch();
        Scratch(const Scratch &) = delete;
        Scratch &operator=(const Scratch &) = delete;
        const std::string &path() const { return path_; }

      private:
        std::string path_;
    };

  private:
    struct Entry {
        std::shared_ptr<const Voice> voice;
        VoiceInfo info;
    };
    void open();
    std::string voice_path(const std::string &name) const;
    std::string meta_path(const std::string &name) const;

    const std::string dir_;
    std::vector<std::string> problems_;
    mutable std::mutex mutex_;
    std::map<std::string, Entry> voices_;
};

} // namespace chatterbox::server
