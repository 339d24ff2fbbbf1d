#include "models/chatterbox/runtime.h"

#include "core/error.h"
#include "models/chatterbox/pipeline_model.h"
#include "models/chatterbox/pipeline_session.h"

namespace chatterbox {

namespace {

void require_at_least_zero(int value, const char *name, const char *zero_means) {
    if (value < 0) throw InvalidArgument(concat(name, " is ", value, ", expected 0 (", zero_means, ") or more"));
}

} // namespace

void RuntimeOptions::validate(const BackendOptions &backend) const {
    require_at_least_zero(batch, "batch", "off");
    require_at_least_zero(voice_prefixes, "voice_prefixes", "off");
    require_at_least_zero(flow_batch, "flow_batch", "off");
    require_at_least_zero(vocoder_batch, "vocoder_batch", "off");
    require_at_least_zero(batch_threads, "batch_threads", "all cores");
    if (batch > 0 && batch_capacity < 1)
        throw InvalidArgument(concat("batch_capacity is ", batch_capacity, ", expected 1 or more"));
    const bool on_cpu = backend.device == "cpu";
    if (kv_cache != GGML_TYPE_F16 && kv_cache != GGML_TYPE_F32 && !(kv_cache == GGML_TYPE_Q8_0 && on_cpu))
        throw InvalidArgument(concat("kv_cache is ", ggml_type_name(kv_cache), " on ", on_cpu ? "the CPU" : backend.device,
                                     ", expected f16, f32, or q8_0 on the CPU"));
}

Runtime::Runtime(const PipelineModel &engine, const RuntimeOptions &options) : engine_(engine), options_(options) {
    options.validate(engine.options().backend);
    BackendOptions batch_backend = engine.options().backend;
    batch_backend.threads = options.batch_threads;
    if (options.batch > 0 && engine.has(Component::t3)) {
        t3::BatchOptions batch;
        batch.max_sequences = options.batch;
        batch.capacity = options.batch_capacity;
        batch.runtime.kv_type = options.kv_cache;
        t3_batch_ = std::make_unique<t3::T3Batch>(engine.t3(), batch_backend, batch);
    }
    if (options.voice_prefixes > 0) t3_prefixes_ = std::make_unique<t3::PrefixCache>(size_t(options.voice_prefixes));
    if (options.flow_batch > 0 && engine.has(Component::flow)) {
        s3gen::FlowBatchOptions batch;
        batch.max_requests = options.flow_batch;
        flow_batch_ = std::make_unique<s3gen::FlowBatch>(engine.flow(), batch_backend, batch);
    }
    if (options.vocoder_batch > 0 && engine.has(Component::vocoder)) {
        hift::VocoderBatchOptions batch;
        batch.max_requests = options.vocoder_batch;
        vocoder_batch_ = std::make_unique<hift::VocoderBatch>(engine.vocoder(), batch_backend, batch);
    }
}

Runtime::~Runtime() = default;

PipelineSessionOptions Runtime::session_options() const {
    PipelineSessionOptions options;
    options.t3.kv_type = options_.kv_cache;
    return options;
}

} // namespace chatterbox
