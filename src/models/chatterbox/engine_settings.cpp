#include "models/chatterbox/engine_settings.h"

#include "core/error.h"
#include "models/chatterbox/t3/kv_cache.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace chatterbox {

namespace {

constexpr int kMaxThreads = 1024;
constexpr int kMaxBatch = 1024;
constexpr int kMaxVoicePrefixes = 1 << 16;

// "auto": a GPU when one is usable, else the CPU (Backend::why_no_gpu says why not).
std::string resolved_device(const std::string &backend) {
    if (backend != "auto") return backend;
    return Backend::why_no_gpu().empty() ? "cuda" : "cpu";
}

} // namespace

const std::vector<EngineSetting> &engine_settings_table() {
    using S = EngineSettings;
    static const std::vector<EngineSetting> table = {
        {"model",
         "model",
         'm',
         "PATH",
         "the official model folder (ve/t3/s3gen .safetensors, tokenizer, conds.pt) or a .gguf from chatterbox-convert",
         false,
         0,
         0,
         {},
         nullptr,
         [](S &s) { return &s.model; }},
        {"backend",
         "backend",
         '\0',
         "NAME",
         "compute device: auto (a GPU when one is usable), cpu, cuda or gpu",
         false,
         0,
         0,
         {"auto", "cpu", "cuda", "gpu"},
         nullptr,
         [](S &s) { return &s.backend; }},
        {"threads",
         "threads",
         't',
         "N",
         "CPU threads of each request, 0 for all cores",
         false,
         0,
         kMaxThreads,
         {},
         [](S &s) { return &s.threads; },
         nullptr},
        {"t3_model",
         "t3-model",
         '\0',
         "NAME",
         "which T3 of a multilingual folder: v2 (the default, as the official from_pretrained) or v3",
         false,
         0,
         0,
         {},
         nullptr,
         [](S &s) { return &s.t3_model; }},
        {"batch",
         "batch",
         '\0',
         "N",
         "T3 decode steps of up to N concurrent requests computed as one (continuous batching), 0 off",
         true,
         0,
         kMaxBatch,
         {},
         [](S &s) { return &s.batch; },
         nullptr},
        // On a CPU the flow's and HiFT's products are wide enough alone: batching them costs more than it
        // saves (bench/README.md, "Batching"), hence off by default.
        {"flow_batch",
         "flow-batch",
         '\0',
         "N",
         "the flow's CFM steps of up to N concurrent requests as one, 0 off",
         true,
         0,
         kMaxBatch,
         {},
         [](S &s) { return &s.flow_batch; },
         nullptr},
        {"vocoder_batch",
         "vocoder-batch",
         '\0',
         "N",
         "the vocoder (HiFT) of up to N concurrent requests as one, 0 off",
         true,
         0,
         kMaxBatch,
         {},
         [](S &s) { return &s.vocoder_batch; },
         nullptr},
        {"batch_threads",
         "batch-threads",
         '\0',
         "N",
         "CPU threads of each batch (T3, flow, vocoder), 0 for all cores; --threads is each request's",
         true,
         0,
         kMaxThreads,
         {},
         [](S &s) { return &s.batch_threads; },
         nullptr},
        {"voice_prefixes",
         "voice-prefixes",
         '\0',
         "N",
         "voices whose T3 conditioning prefix is kept, so that a request in one prefills only its text, 0 off",
         true,
         0,
         kMaxVoicePrefixes,
         {},
         [](S &s) { return &s.voice_prefixes; },
         nullptr},
        {"kv_cache",
         "kv-cache",
         '\0',
         "TYPE",
         "T3 keys and values: f16, f32 (exact, twice the memory) or q8_0 (half f16's memory and fewer bytes for a "
         "batched step to read; lossy; CPU only)",
         true,
         0,
         0,
         {"f16", "f32", "q8_0"},
         nullptr,
         [](S &s) { return &s.kv_cache; }},
    };
    return table;
}

const EngineSetting *find_engine_setting(const std::string &name) {
    const std::vector<EngineSetting> &table = engine_settings_table();
    const auto found = std::find_if(table.begin(), table.end(), [&](const EngineSetting &s) { return name == s.name; });
    return found == table.end() ? nullptr : &*found;
}

std::string EngineSetting::get(const EngineSettings &s) const {
    EngineSettings &fields = const_cast<EngineSettings &>(s); // the accessors only locate the field
    return number ? std::to_string(*number(fields)) : *text(fields);
}

std::string EngineSetting::accepted_text() const {
    if (number) return concat("[", lo, ", ", hi, "]");
    std::string alternatives;
    for (const std::string &choice : choices) alternatives += (alternatives.empty() ? "" : "|") + choice;
    return alternatives;
}

void EngineSetting::set(EngineSettings &s, const std::string &value) const {
    const auto refuse = [&] {
        throw InvalidArgument(
            number ? concat(name, " is ", value.empty() ? "empty" : value, ", expected ", accepted_text())
                   : concat(name, " is '", value, "', expected ", accepted_text()));
    };
    if (number) {
        errno = 0;
        char *end = nullptr;
        const long parsed = std::strtol(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || errno == ERANGE || parsed < lo || parsed > hi) refuse();
        *number(s) = int(parsed);
        return;
    }
    if (!choices.empty() && std::find(choices.begin(), choices.end(), value) == choices.end()) refuse();
    *text(s) = value;
}

namespace {

// The runtime's options as the settings say, unchecked.
RuntimeOptions runtime_fields(const EngineSettings &s) {
    RuntimeOptions options;
    options.batch = s.batch;
    options.flow_batch = s.flow_batch;
    options.vocoder_batch = s.vocoder_batch;
    options.batch_threads = s.batch_threads;
    options.voice_prefixes = s.voice_prefixes;
    options.kv_cache = t3::kv_cache_type(s.kv_cache);
    return options;
}

} // namespace

void EngineSettings::validate() const {
    EngineSettings checked; // each value through its setting's check
    for (const EngineSetting &setting : engine_settings_table()) setting.set(checked, setting.get(*this));
    BackendOptions backend_options; // then the combinations (a q8_0 cache on a GPU)
    backend_options.device = resolved_device(backend);
    runtime_fields(*this).validate(backend_options);
}

PipelineModelOptions EngineSettings::engine_options() const {
    validate();
    if (model.empty()) throw InvalidArgument("model: no model path (an official model folder or a .gguf)");
    PipelineModelOptions options;
    options.model_path = model;
    options.backend.device = resolved_device(backend);
    options.backend.threads = threads;
    options.open.t3_model = t3_model;
    return options;
}

RuntimeOptions EngineSettings::runtime_options() const {
    validate();
    return runtime_fields(*this);
}

} // namespace chatterbox
