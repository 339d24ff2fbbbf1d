#include "models/chatterbox/pipeline_model.h"

#include "core/error.h"

#include <algorithm>

namespace chatterbox {

namespace {

// Text tokens of one T3 pass. Speech runs at roughly one text token per 1.5 speech tokens, so this
// keeps a piece's speech (about 20 s) well inside the default 1000-token pass; the official model
// was trained on sentences, and users report degraded output beyond ~300 characters.
constexpr size_t kTextTokenBudget = 300;

const char *component_name(Component component) {
    switch (component) {
    case Component::text:
        return "text front end";
    case Component::t3:
        return "T3";
    case Component::flow:
        return "S3Gen flow";
    case Component::vocoder:
        return "HiFT vocoder";
    case Component::voice:
        return "voice models";
    }
    return "?";
}

ModelFiles open_model(const PipelineModelOptions &options) {
    ModelFiles files = ModelFiles::open(options.model_path, options.open);
    const auto need = [&](Component component, const char *file_component) {
        if ((options.components & unsigned(component)) && !files.has_component(file_component))
            fail(options.model_path, ": the model has no ", file_component,
                 " component (a GGUF converted with --components?)");
    };
    need(Component::t3, "t3");
    need(Component::flow, "s3gen");
    need(Component::vocoder, "s3gen");
    if ((options.components & unsigned(Component::text)) && !files.has_tokenizer())
        fail(options.model_path, ": the model has no tokenizer (tokenizer.json)");
    return files;
}

} // namespace

PipelineModel::PipelineModel(const PipelineModelOptions &options)
    : options_(options), files_(open_model(options)), weights_backend_(std::make_unique<Backend>(options.backend)) {
    const WeightStore &store = files_.weights();
    if (has(Component::text))
        text_ = std::make_unique<TextFrontEnd>(files_.tokenizer_json(), files_.path() + " tokenizer",
                                               files_.hparams().t3, files_.cangjie_json());
    if (has(Component::t3)) t3_ = std::make_unique<t3::T3Model>(store, *weights_backend_, files_.hparams().t3);
    if (has(Component::flow))
        flow_ = std::make_unique<s3gen::FlowModel>(store, *weights_backend_, files_.hparams().flow);
    if (has(Component::vocoder))
        vocoder_ = std::make_unique<hift::VocoderModel>(store, *weights_backend_, files_.hparams().hift);
}

PipelineModel::~PipelineModel() = default;

template <class T> const T &PipelineModel::require(const std::unique_ptr<T> &part, Component component) const {
    if (!part) fail("the engine was loaded without the ", component_name(component));
    return *part;
}

const TextFrontEnd &PipelineModel::text() const { return require(text_, Component::text); }
const t3::T3Model &PipelineModel::t3() const { return require(t3_, Component::t3); }
const s3gen::FlowModel &PipelineModel::flow() const { return require(flow_, Component::flow); }
const hift::VocoderModel &PipelineModel::vocoder() const { return require(vocoder_, Component::vocoder); }

const VoiceBuilder &PipelineModel::voice_builder() const {
    if (!has(Component::voice)) fail("the engine was loaded without the ", component_name(Component::voice));
    // An exception leaves the flag unset, so a later call tries again and reports the same error.
    std::call_once(voice_builder_once_,
                   [this] { voice_builder_ = std::make_unique<VoiceBuilder>(files_, *weights_backend_); });
    return *voice_builder_;
}

VoiceConditionals PipelineModel::builtin_voice(float exaggeration) const {
    VoiceConditionals voice = chatterbox::builtin_voice(files_);
    voice.t3.exaggeration = exaggeration;
    return voice;
}

std::vector<text::TextPiece> PipelineModel::split_text(std::string_view text, std::string_view language) const {
    const TextFrontEnd &front_end = this->text();
    front_end.check_language(language);
    text::SplitOptions options;
    options.max_length =
        std::min<size_t>(kTextTokenBudget, size_t(t3().hparams().max_framed_text() - front_end.framing_tokens()));
    options.measure = [&front_end, language](std::string_view piece) {
        return front_end.tokens(piece, language).size();
    };
    try {
        return text::split_text(text, options);
    } catch (const Error &error) { // invalid UTF-8
        throw InvalidArgument(error.what());
    }
}

int PipelineModel::sample_rate() const { return vocoder().hparams().sample_rate; }

std::string PipelineModel::description() const {
    const std::string weights = t3_ ? concat(ggml_type_name(t3_->matmul_type()), " weights, ") : std::string();
    const std::string t3_model =
        files_.t3_model().empty() ? std::string() : " " + files_.t3_model(); // "multilingual v3"
    return concat(files_.hparams().variant, t3_model, " model, ", weights, weights_backend_->description());
}

} // namespace chatterbox
