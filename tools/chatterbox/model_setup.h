#pragma once
// Which model a command uses, and fetching the official one when it is missing (issue #6 flow):
// -m MODEL as given; otherwise the default folder (models/chatterbox/model_download.h). A default
// folder with files missing is downloaded with --download, after a yes on a terminal, and otherwise
// the command stops with a message that lists the ways forward.

#include "models/chatterbox/variant.h"
#include "options.h"
#include "progress.h"

#include <string>

namespace cli {

std::string locate_model(const EngineArguments &engine, Progress &progress);

// Downloads the missing official files into `dir` with a progress bar; the error of a failed
// download also says how to go on without network access. t3_model: which T3 of a variant with
// several ("" its first).
void download_model(const std::string &dir, Progress &progress,
                    chatterbox::Variant variant = chatterbox::Variant::english, const std::string &t3_model = "");

} // namespace cli
