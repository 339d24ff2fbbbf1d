#pragma once
// Where the official model lives on this machine, and fetching it from the model hub.
//
// Default location: $CHATTERBOX_MODEL when set (a folder or a .gguf), else
// $XDG_CACHE_HOME/chatterbox/models/chatterbox, else ~/.cache/chatterbox/models/chatterbox.
// The files are those tts.py's from_pretrained fetches from the hub repository ResembleAI/chatterbox;
// $HF_ENDPOINT replaces https://huggingface.co as huggingface_hub allows (a mirror, or a file:// folder).

#include "io/http_download.h"
#include "models/chatterbox/model_files.h"

#include <string>
#include <vector>

namespace chatterbox {

// The environment variables the model location depends on ("" when unset).
struct ModelEnvironment {
    std::string chatterbox_model; // CHATTERBOX_MODEL
    std::string xdg_cache_home;   // XDG_CACHE_HOME
    std::string home;             // HOME
    std::string hf_endpoint;      // HF_ENDPOINT

    static ModelEnvironment from_process();
};

// The default model path for `env`; throws Error when no variable gives one. Other variants than
// English have their own folder beside it, named after their repository (models/chatterbox-turbo);
// CHATTERBOX_MODEL names the English one.
std::string default_model_path(const ModelEnvironment &env, Variant variant = Variant::english);

// The official English repository (each variant's is in official_folders()) and a variant's files,
// in download order (small ones first).
constexpr const char *kOfficialRepo = "ResembleAI/chatterbox";
constexpr const char *kOfficialRevision = "main";
constexpr const char *kDefaultHubEndpoint = "https://huggingface.co";
// t3_model picks a T3 of a variant that has several (ModelOpenOptions::t3_model: "v2", "v3"); "" its
// first. Error for a name no folder of the variant answers.
std::vector<std::string> official_model_files(Variant variant = Variant::english, const std::string &t3_model = "");

// "<endpoint>/<repo>/resolve/<revision>/<file>"; endpoint "" means kDefaultHubEndpoint.
std::string hub_file_url(const std::string &endpoint, const std::string &repo, const std::string &revision,
                         const std::string &file);
// The repository's page, for messages ("<endpoint>/<repo>/tree/<revision>").
std::string hub_repo_page(const std::string &endpoint, const std::string &repo, const std::string &revision);

// The variant's official files missing from `dir` (all of them when it does not exist).
std::vector<std::string> missing_model_files(const std::string &dir, Variant variant = Variant::english,
                                             const std::string &t3_model = "");
// "a, b, c", for messages.
std::string file_list(const std::vector<std::string> &files);

struct ModelDownloadOptions {
    Variant variant = Variant::english; // which repository (official_folder(variant).repo)
    std::string t3_model;               // which T3 of a variant with several ("": its first)
    std::string endpoint;               // "" : kDefaultHubEndpoint
    // Called before each file starts (index into the files being fetched, their count, name).
    std::function<void(size_t index, size_t count, const std::string &file)> on_file;
    io::DownloadOptions transfer; // progress of the current file, timeouts
};

// Downloads the missing official files into `dir` (created when needed), resuming partial ones.
// On failure throws Error that says what to do without network access: fetch the files elsewhere
// and copy them into `dir`, or pass a model with -m.
void download_official_model(const std::string &dir, const ModelDownloadOptions &options);

} // namespace chatterbox
