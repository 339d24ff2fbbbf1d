#include "model_setup.h"

#include "models/chatterbox/model_download.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <unistd.h>

namespace cli {

namespace fs = std::filesystem;
using chatterbox::concat;
using chatterbox::fail;

namespace {

// The official English model: t3_cfg 2.1 GB + s3gen 1.1 GB + small files.
constexpr const char *kOfficialModelSize = "about 3.2 GB";

std::string official_repo_page() {
    return chatterbox::hub_repo_page(chatterbox::ModelEnvironment::from_process().hf_endpoint,
                                     chatterbox::kOfficialRepo, chatterbox::kOfficialRevision);
}

bool user_agrees_to_download(const std::string &dir, const std::vector<std::string> &missing) {
    std::fprintf(stderr, "The Chatterbox model is not in %s (missing %s).\nDownload it from %s (%s)? [y/N] ",
                 dir.c_str(), chatterbox::file_list(missing).c_str(), official_repo_page().c_str(), kOfficialModelSize);
    std::string answer;
    std::getline(std::cin, answer);
    return answer == "y" || answer == "Y" || answer == "yes";
}

} // namespace

void download_model(const std::string &dir, Progress &progress, chatterbox::Variant variant,
                    const std::string &t3_model) {
    const auto env = chatterbox::ModelEnvironment::from_process();
    chatterbox::ModelDownloadOptions options;
    options.variant = variant;
    options.t3_model = t3_model;
    options.endpoint = env.hf_endpoint;
    std::string label;
    options.on_file = [&](size_t index, size_t count, const std::string &file) {
        label = concat("[", index + 1, "/", count, "] ", file);
        progress.note(concat("downloading ", label));
    };
    options.transfer.progress = [&](int64_t done, int64_t total) {
        if (total > 0)
            progress.update("download", double(done) / double(total),
                            concat(human_bytes(double(done)), " / ", human_bytes(double(total))));
        return true;
    };
    try {
        chatterbox::download_official_model(dir, options);
    } catch (const chatterbox::Error &e) {
        progress.clear();
        fail(e.what(), "\nOr use a model you already have: chatterbox -m MODEL (a folder or a .gguf).");
    }
    progress.clear();
    progress.note(concat("the model is complete in ", dir));
}

std::string locate_model(const EngineArguments &engine, Progress &progress) {
    std::error_code ec;
    const std::string &model = engine.settings.model;
    if (!model.empty()) {
        if (!fs::exists(model, ec))
            fail("model not found: ", model, " (an official model folder or a .gguf from chatterbox-convert)");
        return model;
    }
    const std::string dir = chatterbox::default_model_path(chatterbox::ModelEnvironment::from_process());
    if (fs::is_regular_file(dir, ec)) return dir; // $CHATTERBOX_MODEL names a .gguf
    const std::vector<std::string> missing = chatterbox::missing_model_files(dir);
    if (missing.empty()) return dir;
    const bool interactive = isatty(STDIN_FILENO) && isatty(STDERR_FILENO);
    if (engine.download || (interactive && user_agrees_to_download(dir, missing))) {
        download_model(dir, progress);
        return dir;
    }
    fail("no model: the default model folder ", dir, " is missing ", chatterbox::file_list(missing), ".\n",
         "  chatterbox download        fetches the official model (", kOfficialModelSize, ") into it\n",
         "  chatterbox --download ...  does the same, then goes on\n",
         "  chatterbox -m MODEL ...    uses a model folder or .gguf you have (or set CHATTERBOX_MODEL)\n",
         "Without network access, download ", chatterbox::file_list(chatterbox::official_model_files()), " from ",
         official_repo_page(), " on another machine and copy them into ", dir, ".");
}

} // namespace cli
