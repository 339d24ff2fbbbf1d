#pragma once
// The whole pipeline's model, the engine of spec overview.md §2.3: one model loaded once and
// immutable afterwards — model files, text front end, component weights (T3Model, FlowModel,
// VocoderModel), and the voice models (bound on first use under call_once) — shared by any number of
// PipelineSessions (pipeline_session.h) on any threads. Everything a request changes lives in its
// PipelineSession: its own compute backend and thread pool, T3 cache, flow and vocoder graphs. What
// the sessions share and change (batches, kept voice prefixes) is a Runtime's (runtime.h), not the
// model's. (The public api::Engine, include/chatterbox/chatterbox.hpp, is one of these with its Runtime.)
//
//   PipelineModel engine({"models/chatterbox", BackendOptions{}});
//   PipelineSession session(engine);                 // one per concurrent request stream
//   SynthesisResult r = session.synthesize("Hello there.", engine.builtin_voice(0.5f), {});
//
// Tools that need only some parts (a golden stage, a benchmark) name them in
// PipelineModelOptions::components.

#include "core/backend.h"
#include "models/chatterbox/hift/vocoder.h"
#include "models/chatterbox/model_files.h"
#include "models/chatterbox/s3gen/flow.h"
#include "models/chatterbox/t3/model.h"
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

struct PipelineModelOptions {
    std::string model_path; // official folder or GGUF
    BackendOptions backend; // the device of the weights; sessions compute on their own backend of it
    Components components = kAllComponents;
    ModelOpenOptions open; // which T3 of a folder with several (multilingual v2 / v3)
};

class PipelineModel {
  public:
    // Loads every named component (the voice models on first use). Throws Error naming the model
    // path and what is missing or wrong.
    explicit PipelineModel(const PipelineModelOptions &options);
    ~PipelineModel();
    PipelineModel(const PipelineModel &) = delete;
    PipelineModel &operator=(const PipelineModel &) = delete;

    const PipelineModelOptions &options() const { return options_; }
    const ModelFiles &files() const { return files_; }
    bool has(Component component) const { return (options_.components & unsigned(component)) != 0; }

    // Each throws Error when the component was not loaded.
    const TextFrontEnd &text() const;
    const t3::T3Model &t3() const;
    const s3gen::FlowModel &flow() const;
    const hift::VocoderModel &vocoder() const;
    // The voice models, bound on the first call from any thread; throws Error when the model lacks them.
    const VoiceBuilder &voice_builder() const;

    // The model's built-in voice with this exaggeration; throws Error when the model has none.
    VoiceConditionals builtin_voice(float exaggeration) const;
    // Sentences of text, cut to the T3 text budget (measured in text tokens of the language, see
    // TextFrontEnd); throws InvalidArgument for invalid UTF-8 or a language the model does not take.
    std::vector<text::TextPiece> split_text(std::string_view text, std::string_view language = {}) const;

    int sample_rate() const;
    std::string description() const; // variant, weight type, backend

  private:
    template <class T> const T &require(const std::unique_ptr<T> &part, Component component) const;

    PipelineModelOptions options_;
    ModelFiles files_;
    std::unique_ptr<Backend> weights_backend_; // where the weights live; no graph runs on it
    std::unique_ptr<TextFrontEnd> text_;
    std::unique_ptr<t3::T3Model> t3_;
    std::unique_ptr<s3gen::FlowModel> flow_;
    std::unique_ptr<hift::VocoderModel> vocoder_;
    mutable std::once_flag voice_builder_once_;
    mutable std::unique_ptr<VoiceBuilder> voice_builder_;
};

} // namespace chatterbox
