#pragma once
// The three commands of the chatterbox tool; each returns the process exit code.

#include "options.h"

namespace cli {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInterrupted = 130; // Ctrl-C, as shells report a SIGINT

int run_synthesis(const SynthesisArguments &options);
int run_conversion(const ConversionArguments &options);
int run_download(const DownloadArguments &options);

} // namespace cli
