#include "golden_run.h"

#include "core/error.h"
#include "models/chatterbox/variant_spec.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace chatterbox::golden {

namespace {

template <class T> T field(const nlohmann::json &j, const std::string &key, const std::string &path) {
    if (!j.contains(key)) fail(path, ": case has no field '", key, "'");
    try {
        return j.at(key).get<T>();
    } catch (const nlohmann::json::exception &e) {
        fail(path, ": case field '", key, "' has the wrong type (", e.what(), ")");
    }
}

// The variant's generate() defaults with the case's overrides.
SynthesisParams case_params(const nlohmann::json &j, Variant variant, const std::string &path) {
    SynthesisParams params;
    params.sampling = variant_spec(variant).t3.sampler.defaults;
    nlohmann::json overrides = j.value("generate_kwargs", nlohmann::json::object());
    if (!overrides.is_object()) fail(path, ": case field 'generate_kwargs' must be an object");
    for (const char *name : {"exaggeration", "cfg_weight"})
        if (j.contains(name)) overrides[name] = j[name];
    for (const auto &[name, value] : overrides.items()) {
        const SynthesisParameter *parameter = find_synthesis_parameter(name);
        if (!parameter) fail(path, ": unknown generation parameter '", name, "'");
        if (!value.is_number()) fail(path, ": generation parameter '", name, "' must be a number");
        try {
            parameter->check(value.get<double>());
        } catch (const Error &e) {
            fail(path, ": ", e.what());
        }
        parameter->set(params, value.get<double>());
    }
    return params;
}

// The path part of the tokenizer field: "tokenizer/ (vocab.json, ...)" names tokenizer/.
std::string tokenizer_path(const std::string &field) {
    const size_t description = field.find(" (");
    std::string path = field.substr(0, description);
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    return path;
}

} // namespace

GoldenCase GoldenCase::load(const std::string &path) {
    std::ifstream in(path);
    if (!in) fail("cannot open case file ", path);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception &e) {
        fail(path, ": not valid JSON (", e.what(), ")");
    }
    if (j.contains("case") && j["case"].is_object()) j = j["case"]; // a whole index.json works too
    GoldenCase c;
    c.name = j.value("name", "case");
    if (j.contains("variant")) {
        // The golden sets spell the multilingual variant "mtl", after mtl_tts.py.
        const std::string name = field<std::string>(j, "variant", path);
        try {
            c.variant = parse_variant(name == "mtl" ? "multilingual" : name);
        } catch (const Error &e) {
            fail(path, ": ", e.what());
        }
    }
    c.text = field<std::string>(j, "text", path);
    c.ref_wav = field<std::string>(j, "ref_wav", path);
    c.tokenizer = tokenizer_path(field<std::string>(j, "tokenizer", path));
    c.params = case_params(j, c.variant, path);
    if (j.contains("language_id")) c.params.language = field<std::string>(j, "language_id", path);
    if (j.contains("t3_model")) c.t3_model = field<std::string>(j, "t3_model", path);
    c.seed = field<uint64_t>(j, "seed", path);
    c.n_teacher_forced = field<int>(j, "n_teacher_forced", path);
    c.n_greedy = field<int>(j, "n_greedy", path);
    if (c.n_teacher_forced < 0 || c.n_greedy < 0) fail(path, ": n_teacher_forced and n_greedy must be >= 0");
    return c;
}

GoldenRun::GoldenRun(GoldenCase golden_case, std::string inputs_dir, std::string model_path, std::string out_dir,
                     BackendOptions backend)
    : case_(std::move(golden_case)), inputs_dir_(std::move(inputs_dir)), model_path_(std::move(model_path)),
      out_dir_(std::move(out_dir)), backend_(std::move(backend)) {
    std::filesystem::create_directories(out_dir_);
}

std::string GoldenRun::input_path(const std::string &file) const {
    return std::filesystem::path(file).is_absolute() ? file : inputs_dir_ + "/" + file;
}

NpyArray GoldenRun::input(const std::string &array_name) const { return read_npy(input_path(array_name + ".npy")); }

void GoldenRun::write(const std::string &array_name, const NpyArray &array) {
    write_npy(out_dir_ + "/" + array_name + ".npy", array);
    written_.insert(array_name);
    computed_[array_name] = array;
}

const NpyArray &GoldenRun::computed(const std::string &array_name) const {
    const auto it = computed_.find(array_name);
    if (it == computed_.end())
        fail("needs ", array_name,
             ", which no earlier stage of this run computed (its stage failed or was left out by --only)");
    return it->second;
}

std::unique_ptr<PipelineModel> load_engine(const GoldenRun &run, Components components) {
    PipelineModelOptions options{run.model_path(), run.backend_options(), components};
    options.open.t3_model = run.golden_case().t3_model;
    auto engine = std::make_unique<PipelineModel>(options);
    const Variant model = engine->files().hparams().variant;
    if (model != run.golden_case().variant)
        fail("the case is for the ", variant_name(run.golden_case().variant), " variant, the model ", run.model_path(),
             " is ", variant_name(model));
    return engine;
}

} // namespace chatterbox::golden
