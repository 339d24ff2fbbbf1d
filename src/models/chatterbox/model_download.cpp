#include "models/chatterbox/model_download.h"

#include "core/error.h"

#include <cstdlib>
#include <filesystem>

namespace chatterbox {

namespace fs = std::filesystem;

namespace {

std::string env_or_empty(const char *name) {
    const char *value = std::getenv(name);
    return value ? value : "";
}

} // namespace

ModelEnvironment ModelEnvironment::from_process() {
    return {env_or_empty("CHATTERBOX_MODEL"), env_or_empty("XDG_CACHE_HOME"), env_or_empty("HOME"),
            env_or_empty("HF_ENDPOINT")};
}

std::string default_model_path(const ModelEnvironment &env, Variant variant) {
    if (variant == Variant::english && !env.chatterbox_model.empty()) return env.chatterbox_model;
    const fs::path tail = fs::path("chatterbox") / "models" / official_folder(variant).local_folder_name();
    // The XDG base-directory spec ignores relative values.
    if (!env.xdg_cache_home.empty() && fs::path(env.xdg_cache_home).is_absolute())
        return (fs::path(env.xdg_cache_home) / tail).string();
    if (!env.home.empty()) return (fs::path(env.home) / ".cache" / tail).string();
    fail("no default model folder: neither CHATTERBOX_MODEL, XDG_CACHE_HOME nor HOME is set");
}

namespace {

const OfficialFolder &download_folder(Variant variant, const std::string &t3_model) {
    if (t3_model.empty()) return official_folder(variant);
    std::string known;
    for (const OfficialFolder &folder : official_folders()) {
        if (folder.variant != variant || !folder.t3_model) continue;
        if (folder.answers_t3_model(t3_model)) return folder;
        known += (known.empty() ? "" : ", ") + std::string(folder.t3_model);
    }
    if (known.empty()) fail("the ", variant_name(variant), " model has one T3: no --t3-model to choose");
    fail("no ", variant_name(variant), " T3 \"", t3_model, "\" to download (", known, ")");
}

} // namespace

std::vector<std::string> official_model_files(Variant variant, const std::string &t3_model) {
    return download_folder(variant, t3_model).all_files();
}

namespace {
std::string endpoint_or_default(const std::string &endpoint) {
    std::string base = endpoint.empty() ? kDefaultHubEndpoint : endpoint;
    while (!base.empty() && base.back() == '/') base.pop_back();
    return base;
}
} // namespace

std::string hub_file_url(const std::string &endpoint, const std::string &repo, const std::string &revision,
                         const std::string &file) {
    return concat(endpoint_or_default(endpoint), "/", repo, "/resolve/", revision, "/", file);
}

std::string hub_repo_page(const std::string &endpoint, const std::string &repo, const std::string &revision) {
    return concat(endpoint_or_default(endpoint), "/", repo, "/tree/", revision);
}

std::string file_list(const std::vector<std::string> &files) {
    std::string out;
    for (const std::string &file : files) out += (out.empty() ? "" : ", ") + file;
    return out;
}

std::vector<std::string> missing_model_files(const std::string &dir, Variant variant, const std::string &t3_model) {
    std::vector<std::string> missing;
    for (const std::string &file : official_model_files(variant, t3_model)) {
        std::error_code ec;
        if (!fs::is_regular_file(fs::path(dir) / file, ec)) missing.push_back(file);
    }
    return missing;
}

void download_official_model(const std::string &dir, const ModelDownloadOptions &options) {
    const std::vector<std::string> missing = missing_model_files(dir, options.variant, options.t3_model);
    const char *repo = download_folder(options.variant, options.t3_model).repo;
    try {
        std::error_code ec;
        fs::create_directories(dir, ec);
        if (ec) fail("cannot create the model folder ", dir, ": ", ec.message());
        for (size_t i = 0; i < missing.size(); ++i) {
            if (options.on_file) options.on_file(i, missing.size(), missing[i]);
            io::download_file(hub_file_url(options.endpoint, repo, kOfficialRevision, missing[i]),
                              (fs::path(dir) / missing[i]).string(), options.transfer);
        }
    } catch (const Error &e) {
        fail(e.what(), "\nWithout network access here, download ",
             file_list(missing_model_files(dir, options.variant, options.t3_model)), " from ",
             hub_repo_page(options.endpoint, repo, kOfficialRevision), " on another machine and copy them into ", dir,
             " (a run with network access resumes partial files).");
    }
}

} // namespace chatterbox
