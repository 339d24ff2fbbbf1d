#pragma once
// The options that load a model and start the services its sessions share, and the ONE table that
// gives each its name, command-line flag, accepted values, default and meaning. The C API
// (chatterbox_engine_params and its setter), the C++ wrapper, the CLI, the server and the benches
// all read this table (the command-line flags through src/cli/engine_flags.h), so they cannot
// disagree; synthesis_params.h is the same for a request's parameters.
//
// The defaults are the member initialisers below; the table reads them from a default-constructed
// EngineSettings. A front end that wants another default (the server keeps 16 voice prefixes) sets
// the field before it reads its command line.

#include "models/chatterbox/pipeline_model.h"
#include "models/chatterbox/runtime.h"

#include <string>
#include <vector>

namespace chatterbox {

struct EngineSettings {
    std::string model;            // official folder or GGUF; "": the front end's default location
    std::string backend = "auto"; // "auto" (a GPU when one is usable), "cpu", "cuda" or "gpu"
    int threads = 0;              // CPU threads of each session; 0: all cores
    std::string t3_model;         // which T3 of a folder with several: "" its default, "v2", "v3"
    int batch = 0;                // RuntimeOptions::batch
    int flow_batch = 0;           // RuntimeOptions::flow_batch
    int vocoder_batch = 0;        // RuntimeOptions::vocoder_batch
    int batch_threads = 0;        // RuntimeOptions::batch_threads
    int voice_prefixes = 0;       // RuntimeOptions::voice_prefixes
    std::string kv_cache = "f16"; // RuntimeOptions::kv_cache by name: f16, f32, q8_0 (CPU)

    // Throws InvalidArgument naming the first setting out of its range or choices, or a combination
    // the engine refuses (q8_0 on a GPU); cheap, so that front ends check before the weights load.
    void validate() const;
    // The engine's and the runtime's options ("auto" resolved to the device there is); validate()d.
    PipelineModelOptions engine_options() const;
    RuntimeOptions runtime_options() const;
};

// One setting: a whole number in [lo, hi], or text (one of `choices` when there are any).
struct EngineSetting {
    const char *name;       // field of EngineSettings and chatterbox_engine_params: "flow_batch"
    const char *option;     // command-line flag without the dashes: "flow-batch"
    char short_option;      // '\0', or the one-letter flag ('m' for -m)
    const char *value_name; // for --help: "N", "PATH", "NAME"
    const char *meaning;    // one line for --help
    // A setting that matters only where many requests share one engine (a server, the C API's
    // sessions): the batches and the kept voice prefixes. The CLI, one request per run, leaves them out.
    bool shared_services;
    int lo, hi;                       // a number's range
    std::vector<std::string> choices; // text: the accepted values; empty: any text
    int *(*number)(EngineSettings &s);
    std::string *(*text)(EngineSettings &s); // exactly one of number and text

    std::string get(const EngineSettings &s) const;
    // Throws InvalidArgument naming the setting unless it accepts value ("batch is -1, expected [0, 1024]").
    void set(EngineSettings &s, const std::string &value) const;
    std::string default_value() const { return get(EngineSettings{}); }
    std::string accepted_text() const; // "[0, 1024]", "auto|cpu|cuda|gpu", "" for any text
};

const std::vector<EngineSetting> &engine_settings_table();
// nullptr when no setting has this name.
const EngineSetting *find_engine_setting(const std::string &name);

} // namespace chatterbox
