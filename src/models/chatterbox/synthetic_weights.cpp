#include "models/chatterbox/synthetic_weights.h"

#include "core/error.h"
#include "core/safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>

namespace chatterbox::synthetic {

// The text of src/models/chatterbox/official_manifest.txt, compiled in by CMake (see the top-level CMakeLists.txt).
extern const char *const kOfficialManifestText;

namespace {

constexpr uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;
constexpr const char *kNotSaved = "computed_constant_not_saved";

uint64_t splitmix_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Draw i of a tensor's stream, u in [-1, 1): the (i+1)-th SplitMix64 output, computed directly so that any
// index range can be filled independently (and in parallel).
inline double uniform_draw(uint64_t tensor_seed, uint64_t i) {
    const uint64_t z = splitmix_mix(tensor_seed + (i + 1) * kGoldenGamma);
    return double(z >> 40) * 0x1p-24 * 2.0 - 1.0;
}

// How a rule turns u into a value; every form matches WEIGHTS.md operation for operation, in double.
enum class Form {
    Affine,    // offset + scale * u
    AbsAffine, // offset + scale * abs(u)
    Divide,    // u / divisor
};
struct ValueRule {
    Form form;
    double offset = 0, scale = 1, divisor = 1;
};

// Product of all dims except the first (for ConvTranspose1d (in, out, k) that is out * k).
double fan_in(const Shape &shape) {
    double n = 1;
    for (size_t d = 1; d < shape.size(); ++d) n *= double(shape[d]);
    return n;
}

ValueRule value_rule(const std::string &rule, const Shape &shape) {
    if (rule == "running_mean" || rule == "pos_bias") return {Form::Affine, 0.0, 0.1};
    if (rule == "running_var") return {Form::AbsAffine, 1.0, 0.5};
    if (rule == "hift_conv_post_bias") return {Form::Affine, -3.0, 0.02};
    if (rule == "wn_g" || rule == "snake_alpha" || rule == "norm_weight") return {Form::Affine, 1.0, 0.1};
    if (rule == "embedding") return {Form::Affine, 0.0, 1.0};
    if (rule == "fan_in_relu") return {Form::Affine, 0.0, std::sqrt(6.0 / fan_in(shape))};
    if (rule == "fan_in") return {Form::Divide, 0.0, 1.0, std::sqrt(fan_in(shape))};
    if (rule == "bias") return {Form::Affine, 0.0, 0.02};
    fail("synthetic weights: no value rule '", rule, "'");
}

// One loop per form so the compiler can vectorise each (the draws are independent).
void fill_range(const ValueRule &rule, uint64_t tensor_seed, uint64_t begin, uint64_t end, float *dst) {
    switch (rule.form) {
    case Form::Affine:
        for (uint64_t i = begin; i < end; ++i) dst[i] = float(rule.offset + rule.scale * uniform_draw(tensor_seed, i));
        break;
    case Form::AbsAffine:
        for (uint64_t i = begin; i < end; ++i)
            dst[i] = float(rule.offset + rule.scale * std::fabs(uniform_draw(tensor_seed, i)));
        break;
    case Form::Divide:
        for (uint64_t i = begin; i < end; ++i) dst[i] = float(uniform_draw(tensor_seed, i) / rule.divisor);
        break;
    }
}

// Large tensors are split across the cores; below this many values a thread costs more than it saves.
constexpr uint64_t kValuesPerThread = uint64_t(1) << 18;

void fill_parallel(const ValueRule &rule, uint64_t tensor_seed, uint64_t numel, float *dst) {
    const uint64_t cores = std::max(1u, std::thread::hardware_concurrency());
    const uint64_t parts = std::clamp<uint64_t>(numel / kValuesPerThread, 1, cores);
    std::vector<std::thread> helpers;
    for (uint64_t p = 1; p < parts; ++p)
        helpers.emplace_back(fill_range, std::cref(rule), tensor_seed, numel * p / parts, numel * (p + 1) / parts, dst);
    fill_range(rule, tensor_seed, 0, numel / parts, dst);
    for (auto &t : helpers) t.join();
}

bool starts_with(const std::string &s, std::string_view prefix) { return s.compare(0, prefix.size(), prefix) == 0; }
bool ends_with(const std::string &s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

ggml_type parse_dtype(const std::string &dtype, size_t line) {
    if (dtype == "float32") return GGML_TYPE_F32;
    if (dtype == "int64") return GGML_TYPE_I64;
    fail("official manifest line ", line, ": unknown dtype '", dtype, "'");
}

Shape parse_shape(const std::string &text, size_t line) {
    if (text.size() < 2 || text.front() != '[' || text.back() != ']')
        fail("official manifest line ", line, ": shape '", text, "' is not [d0,d1,...]");
    Shape shape;
    std::istringstream dims(text.substr(1, text.size() - 2));
    for (std::string dim; std::getline(dims, dim, ',');) {
        size_t used = 0;
        int64_t value = -1;
        try {
            value = std::stoll(dim, &used);
        } catch (const std::exception &) {
        }
        if (value < 0 || used != dim.size()) fail("official manifest line ", line, ": bad dimension in '", text, "'");
        shape.push_back(value);
    }
    return shape;
}

std::vector<ManifestCheckpoint> parse_manifest(const char *text) {
    std::vector<ManifestCheckpoint> checkpoints;
    std::istringstream lines(text);
    size_t line_number = 0;
    for (std::string line; std::getline(lines, line);) {
        ++line_number;
        if (line.empty() || line[0] == '#') continue;
        std::istringstream fields(line);
        std::string file, name, shape, dtype, rule, extra;
        if (!(fields >> file >> name >> shape >> dtype >> rule) || (fields >> extra))
            fail("official manifest line ", line_number, ": expected 'file name shape dtype rule', got '", line, "'");
        if (checkpoints.empty() || checkpoints.back().file != file) checkpoints.push_back({file, {}});
        checkpoints.back().tensors.push_back(
            {name, parse_shape(shape, line_number), parse_dtype(dtype, line_number), rule, rule != kNotSaved});
    }
    return checkpoints;
}

} // namespace

uint64_t fnv1a64(std::string_view bytes) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char b : bytes) {
        h ^= b;
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t SplitMix64::next() {
    state += kGoldenGamma;
    return splitmix_mix(state);
}

const std::vector<ManifestCheckpoint> &official_manifest() {
    static const std::vector<ManifestCheckpoint> manifest = parse_manifest(kOfficialManifestText);
    return manifest;
}

std::string rule_for(const std::string &name, const Shape &shape) {
    const size_t dot = name.rfind('.');
    const std::string last = dot == std::string::npos ? name : name.substr(dot + 1);
    static const char *const kEmbeddings[] = {"text_emb.weight",
                                              "speech_emb.weight",
                                              "text_pos_emb.emb.weight",
                                              "speech_pos_emb.emb.weight",
                                              "tfmr.embed_tokens.weight",
                                              "cond_enc.perceiver.pre_attention_query",
                                              "flow.input_embedding.weight"};
    if (last == "num_batches_tracked") return "zero_int64";
    if (last == "running_mean") return "running_mean";
    if (last == "running_var") return "running_var";
    if (name == "mel2wav.conv_post.bias") return "hift_conv_post_bias";
    if (ends_with(name, "parametrizations.weight.original0")) return "wn_g";
    if (std::find(std::begin(kEmbeddings), std::end(kEmbeddings), name) != std::end(kEmbeddings)) return "embedding";
    if (last == "pos_bias_u" || last == "pos_bias_v") return "pos_bias";
    if (last == "alpha") return "snake_alpha";
    if (shape.size() >= 2) return starts_with(name, "speaker_encoder.") ? "fan_in_relu" : "fan_in";
    if (shape.size() == 1 && last == "weight") return "norm_weight";
    return "bias";
}

void fill_tensor(const std::string &name, const Shape &shape, uint64_t seed, void *dst) {
    const uint64_t numel = uint64_t(shape_numel(shape));
    const std::string rule = rule_for(name, shape);
    if (rule == "zero_int64") {
        std::memset(dst, 0, numel * sizeof(int64_t));
        return;
    }
    fill_parallel(value_rule(rule, shape), seed ^ fnv1a64(name), numel, static_cast<float *>(dst));
}

void write_synthetic_model(const std::string &out_dir, uint64_t seed) {
    std::error_code error;
    std::filesystem::create_directories(out_dir, error);
    if (error) fail("cannot create the folder ", out_dir, ": ", error.message());
    for (const ManifestCheckpoint &checkpoint : official_manifest()) {
        std::vector<SafetensorsEntry> entries;
        for (const ManifestTensor &tensor : checkpoint.tensors) {
            if (!tensor.stored) continue;
            // fill_tensor writes int64 exactly for the zero_int64 rule: the buffer type must agree.
            if ((rule_for(tensor.name, tensor.shape) == "zero_int64") != (tensor.type == GGML_TYPE_I64))
                fail("official manifest: ", checkpoint.file, " tensor '", tensor.name, "' has type ",
                     ggml_type_name(tensor.type), ", which disagrees with its rule ", tensor.rule);
            entries.push_back({tensor.name, tensor.type, tensor.shape,
                               [&tensor, seed](void *dst) { fill_tensor(tensor.name, tensor.shape, seed, dst); }});
        }
        write_safetensors((std::filesystem::path(out_dir) / checkpoint.file).string(), std::move(entries));
    }
}

} // namespace chatterbox::synthetic
