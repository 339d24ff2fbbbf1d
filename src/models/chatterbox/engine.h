#pragma once
// The engine (spec overview.md §2.3): one model loaded once and immutable afterwards — model files,
// text front end, component weights, and the voice models (bound on first use under call_once) —
// shared by any number of Sessions (session.h) on any threads. Everything a request changes lives in
// its Session: its own compute backend and thread pool, T3 cache, flow and vocoder graphs.
//
//   Engine engine({"models/chatterbox", BackendOptions{}});
//   Session session(engine);                         // one per concurrent request stream
//   SynthesisResult r = session.synthesize("Hello there.", engine.builtin_voice(0.5f), {});
//
// Tools that need only some parts (a golden stage, a benchmark) name them in EngineOptions::components.

#include "core/backend.h"
#include "models/chatterbox/hift/vocoder.h"
#include "models/chatterbox/hift/vocoder_batch.h"
#include "models/chatterbox/model_files.h"
#include "models/chatterbox/s3gen/flow.h"
#include "models/chatterbox/s3gen/flow_batch.h"
#include "models/chatterbox/t3/batch_scheduler.h"
#include "models/chatterbox/t3/model.h"
#include "models/chatterbox/t3/prefix_cache.h"
#include "models/chatterbox/text_frontend.h"
#include "models/chatterbox/voice.h"
#include "text/sentence_splitter.h"

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace chatterbox {

// The parts of a model; an engine loads the ones its caller names.
enum class Component : unsigned {
    text = 1u << 0,    // text front end (needs T3's hyper-parameters) and sentence splitter
    t3 = 1u << 1,      // speech-token generator
    flow = 1u << 2,    // S3Gen flow (tokens -> mel)
    vocoder = 1u << 3, // HiFT (mel -> wave)
    voice = 1u << 4,   // VoiceEncoder, CAMPPlus, S3Tokenizer (voices from recordings, voice conversion)
};
using Components = unsigned; // a set of Component bits
template <class... Parts> constexpr Components components(Parts... parts) { return (0u | ... | unsigned(parts)); }
constexpr Components kAllComponents =
    components(Component::text, Component::t3, Component::flow, Component::vocoder, Component::voice);

struct EngineOptions {
    std::string model_path; // official folder or GGUF
    BackendOptions backend; // the device of the weights; sessions compute on their own backend of it
    Components components = kAllComponents;
    // T3 decode batched across the sessions' requests (t3/batch_scheduler.h): up to this many
    // requests share each step; 0 (default): each session decodes alone.
    int batch = 0;
    int batch_capacity = 1536; // cache positions per batched request (longer ones decode alone)
    // The flow's CFM steps batched across the sessions' requests (s3gen/flow_batch.h): up to this
    // many requests share each estimator run; 0 (default): each session solves alone.
    int flow_batch = 0;
    // The vocoder batched across the sessions' requests (hift/vocoder_batch.h): up to this many
    // mels share each HiFT run; 0 (default): each session vocodes alone.
    int vocoder_batch = 0;
    // CPU threads of each batch's own backend (T3, flow, vocoder); 0 (default): all cores. Not
    // backend.threads, which is what each session gets: a batch computes for many sessions at once,
    // and gives threads back while sessions keep CPUs busy (BackendOptions::adapt_threads).
    int batch_threads = 0;
    // Voices whose T3 conditioning prefix (its keys/values) is kept, so that a request in a kept
    // voice prefills only its text (t3/prefix_cache.h); 0 (default): every prefill computes it.
    int voice_prefixes = 0;
    // The T3 KV cache type of the batch (t3::RuntimeOptions::kv_type): f16, or q8_0 on the CPU (half the
    // bytes a batched step reads; lossy). A session's requests join the batch only with the same type:
    // sessions take this one unless their options say otherwise (engine_session_options).
    ggml_type kv_cache = GGML_TYPE_F16;
    ModelOpenOptions open; // which T3 of a folder with several (multilingual v2 / v3)
};

class Engine {
  public:
    // Loads every named component (the voice models on first use). Throws Error naming the model
    // path and what is missing or wrong.
    explicit Engine(const EngineOptions &options);
    ~Engine();
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    const EngineOptions &options() const { return options_; }
    const ModelFiles &files() const { return files_; }
    bool has(Component component) const { return (options_.components & unsigned(component)) != 0; }

    // Each throws Error when the component was not loaded.
    const TextFrontEnd &text() const;
    const t3::Model &t3() const;
    const s3gen::FlowModel &flow() const;
    const hift::VocoderModel &vocoder() const;
    // The voice models, bound on the first call from any thread; throws Error when the model lacks them.
    const VoiceBuilder &voice_builder() const;

    // The model's built-in voice with this exaggeration; throws Error when the model has none.
    Voice builtin_voice(float exaggeration) const;
    // Sentences of text, cut to the T3 text budget (measured in text tokens of the language, see
    // TextFrontEnd); throws InvalidArgument for invalid UTF-8 or a language the model does not take.
    std::vector<text::TextPiece> split_text(std::string_view text, std::string_view language = {}) const;

    // The T3 batch the sessions decode in, or nullptr (EngineOptions::batch 0).
    t3::BatchScheduler *t3_batch() const { return t3_batch_.get(); }
    // The flow batch the sessions solve in, or nullptr (EngineOptions::flow_batch 0).
    s3gen::FlowBatchScheduler *flow_batch() const { return flow_batch_.get(); }
    // The vocoder batch the sessions vocode in, or nullptr (EngineOptions::vocoder_batch 0).
    hift::VocoderBatchScheduler *vocoder_batch() const { return vocoder_batch_.get(); }
    // The kept voice prefixes, or nullptr (EngineOptions::voice_prefixes 0).
    t3::PrefixCache *t3_prefixes() const { return t3_prefixes_.get(); }

    int sample_rate() const;
    std::string description() const; // variant, weight type, backend

  private:
    template <class T> const T &require(const std::unique_ptr<T> &part, Component component) const;

    EngineOptions options_;
    ModelFiles files_;
    std::unique_ptr<Backend> weights_backend_; // where the weights live; no graph runs on it
    std::unique_ptr<TextFrontEnd> text_;
    std::unique_ptr<t3::Model> t3_;
    std::unique_ptr<s3gen::FlowModel> flow_;
    std::unique_ptr<hift::VocoderModel> vocoder_;
    std::unique_ptr<t3::BatchScheduler> t3_batch_;               // a service with its own thread, not model state
    std::unique_ptr<s3gen::FlowBatchScheduler> flow_batch_;      // likewise
    std::unique_ptr<hift::VocoderBatchScheduler> vocoder_batch_; // likewise
    std::unique_ptr<t3::PrefixCache> t3_prefixes_;               // filled by the sessions' requests
    mutable std::once_flag voice_builder_once_;
    mutable std::unique_ptr<VoiceBuilder> voice_builder_;
};

} // namespace chatterbox
