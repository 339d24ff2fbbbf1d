#include "models/chatterbox/convert.h"

#include "core/error.h"
#include "core/gguf_file.h"
#include "core/string_match.h"
#include "models/chatterbox/model_files.h"
#include "models/chatterbox/t3/backbone_gpt2.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace chatterbox {

namespace {

constexpr int64_t kMinMatrixElements = 4096;

struct MatrixTypeName {
    const char *name;
    ggml_type type;
};
constexpr MatrixTypeName kMatrixTypes[] = {
    {"f32", GGML_TYPE_F32},
    {"f16", GGML_TYPE_F16},
    {"q8_0", GGML_TYPE_Q8_0},
    {"q4_k", GGML_TYPE_Q4_K},
};

bool contains(const std::string &s, const char *part) { return s.find(part) != std::string::npos; }

bool is_float_type(ggml_type t) {
    return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16 || ggml_is_quantized(t);
}

// The next wider type when a matrix's rows are not whole blocks of `t`.
ggml_type fallback_of(ggml_type t) {
    switch (t) {
    case GGML_TYPE_Q4_K:
        return GGML_TYPE_Q8_0;
    case GGML_TYPE_Q8_0:
        return GGML_TYPE_F16;
    default:
        return GGML_TYPE_F32;
    }
}

// Writes the values of `src` as `dst_type` into dst (tensor_nbytes(dst_type, src.shape) bytes).
void convert_tensor(const TensorView &src, ggml_type dst_type, void *dst, size_t dst_bytes) {
    if (src.type == dst_type) {
        if (src.nbytes != dst_bytes) fail("tensor ", src.name, ": ", src.nbytes, " bytes, expected ", dst_bytes);
        if (dst_bytes) std::memcpy(dst, src.data, dst_bytes);
        return;
    }
    const std::vector<float> values = to_f32(src);
    if (dst_type == GGML_TYPE_F32) {
        std::memcpy(dst, values.data(), values.size() * sizeof(float));
        return;
    }
    const int64_t n_per_row = src.shape.empty() ? 1 : src.shape.back();
    if (n_per_row == 0 || values.empty()) return;
    const int64_t n_rows = int64_t(values.size()) / n_per_row;
    const size_t written = ggml_quantize_chunk(dst_type, values.data(), dst, 0, n_rows, n_per_row, nullptr);
    if (written != dst_bytes)
        fail("tensor ", src.name, ": ", ggml_type_name(dst_type), " conversion wrote ", written, " bytes, expected ",
             dst_bytes);
}

std::string mib(size_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", double(bytes) / (1024.0 * 1024.0));
    return text;
}

} // namespace

ggml_type parse_matrix_type(const std::string &name) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    for (const auto &t : kMatrixTypes)
        if (lower == t.name) return t.type;
    fail("unknown weight type \"", name, "\" (choose f32, f16, q8_0 or q4_k)");
}

std::string matrix_type_name(ggml_type type) {
    for (const auto &t : kMatrixTypes)
        if (t.type == type) return t.name;
    fail("weight type ", ggml_type_name(type), " is not one the converter writes (f32, f16, q8_0, q4_k)");
}

bool is_matrix_weight(const std::string &name, const Shape &shape) {
    if (shape.size() < 2 || shape_numel(shape) < kMinMatrixElements) return false;
    const size_t last_dot = name.rfind('.');
    const std::string last = last_dot == std::string::npos ? name : name.substr(last_dot + 1);
    if (last != "weight" && last != "original1" && last != "weight_v" && last != t3::kTransposedConv1dWeight)
        return false;
    // Embeddings are looked up by row, not multiplied.
    if (ends_with(name, "_emb.weight") || contains(name, "embed_tokens") || contains(name, "input_embedding") ||
        contains(name, "pos_emb") || contains(name, "pre_attention_query") || contains(name, "pos_bias_"))
        return false;
    // Norm parameters, wherever their module sits.
    const std::string modules = last_dot == std::string::npos ? std::string() : name.substr(0, last_dot);
    return !contains(modules, "norm");
}

ggml_type converted_type(const std::string &name, ggml_type source_type, const Shape &shape, ggml_type matrix_type) {
    if (!is_float_type(source_type)) return source_type;
    if (matrix_type == GGML_TYPE_F32 || !is_matrix_weight(name, shape)) return GGML_TYPE_F32;
    ggml_type t = matrix_type;
    while (shape.back() % ggml_blck_size(t) != 0) t = fallback_of(t);
    return t;
}

std::string ConvertSummary::text() const {
    std::string out;
    size_t tensors = 0, bytes = 0;
    for (const auto &[type, total] : by_type) {
        char line[96];
        std::snprintf(line, sizeof line, "  %-5s %6zu tensors %12s\n", ggml_type_name(type), total.tensors,
                      mib(total.bytes).c_str());
        out += line;
        tensors += total.tensors;
        bytes += total.bytes;
    }
    char line[96];
    std::snprintf(line, sizeof line, "  total %6zu tensors %12s\n", tensors, mib(bytes).c_str());
    out += line;
    if (fallbacks)
        out += concat("  ", fallbacks, " matri", fallbacks == 1 ? "x" : "ces",
                      " kept a wider type: innermost dimension not a whole number of blocks\n");
    return out;
}

void write_model_metadata(GgufWriter &writer, const ModelHparams &hparams, const std::vector<std::string> &components,
                          ggml_type matrix_type, const std::string *tokenizer_json) {
    writer.set_string("general.architecture", "chatterbox");
    hparams.write_metadata(writer);
    writer.set_string_array(model_keys::kComponents, components);
    writer.set_string("chatterbox.matrix_type", matrix_type_name(matrix_type));
    if (tokenizer_json) writer.set_string(model_keys::kTokenizerJson, *tokenizer_json);
}

ConvertSummary convert_model(const std::string &input, const std::string &output, const ConvertOptions &options) {
    matrix_type_name(options.matrix_type); // validates the requested type
    std::error_code ec;
    if (std::filesystem::exists(output, ec) && std::filesystem::equivalent(input, output, ec))
        fail("the output ", output, " is the input model; write to another file");

    const ModelFiles model = ModelFiles::open(input, ModelOpenOptions{options.t3_model});
    std::vector<std::string> components;
    for (const ModelComponent &c : model_components()) {
        const bool wanted =
            options.components.empty() || std::count(options.components.begin(), options.components.end(), c.name) > 0;
        if (wanted && model.has_component(c.name)) components.push_back(c.name);
    }
    for (const std::string &name : options.components) {
        const auto &known = model_components();
        if (std::none_of(known.begin(), known.end(), [&](const ModelComponent &c) { return name == c.name; }))
            fail("unknown component \"", name, "\" (choose among ve, t3, s3gen)");
        if (!model.has_component(name)) fail(input, ": the model has no component ", name);
    }
    const bool with_t3 = std::count(components.begin(), components.end(), "t3") > 0;
    if (with_t3 && !model.has_tokenizer())
        fail(input, ": no tokenizer.json, which the t3 component needs (put the official tokenizer.json next to the "
                    "weights)");

    GgufWriter writer;
    write_model_metadata(writer, model.hparams(), components, options.matrix_type,
                         model.has_tokenizer() ? &model.tokenizer_json() : nullptr);
    if (with_t3 && model.cangjie_json()) writer.set_string(model_keys::kCangjieJson, *model.cangjie_json());
    if (with_t3 && !model.t3_model().empty()) writer.set_string(model_keys::kT3Model, model.t3_model());

    std::vector<std::string> names;
    for (const ModelComponent &c : model_components())
        if (std::count(components.begin(), components.end(), c.name)) {
            auto part = model.weights().names_with_prefix(c.prefix);
            names.insert(names.end(), part.begin(), part.end());
        }
    const auto voice = model.weights().names_with_prefix("conds.");
    names.insert(names.end(), voice.begin(), voice.end());

    ConvertSummary summary;
    const size_t count = names.size();
    for (size_t i = 0; i < count; ++i) {
        const TensorView *src = &model.weights().get(names[i]);
        // GPT-2's Conv1D weights go in transposed, so that their rows are output rows as a Linear's
        // are and the precision rule quantises them along the input (backbone_gpt2.h).
        const bool transpose = t3::is_conv1d_weight(src->name) && src->shape.size() == 2;
        const std::string name = transpose ? t3::transposed_conv1d_name(src->name) : src->name;
        const Shape shape = transpose ? Shape{src->shape[1], src->shape[0]} : src->shape;
        const ggml_type type = converted_type(name, src->type, shape, options.matrix_type);
        const size_t nbytes = tensor_nbytes(type, shape);
        auto &total = summary.by_type[type];
        total.tensors++;
        total.bytes += nbytes;
        if (ggml_is_quantized(options.matrix_type) && type != options.matrix_type && is_float_type(src->type) &&
            is_matrix_weight(name, shape))
            summary.fallbacks++;
        if (type != GGML_TYPE_F32 && type != src->type) ggml_quantize_init(type);
        writer.add_tensor(name, type, shape,
                          [src, name, shape, transpose, type, nbytes, i, count, &options](void *dst) {
                              if (options.progress) options.progress(i, count, name);
                              if (!transpose) return convert_tensor(*src, type, dst, nbytes);
                              const std::vector<float> values = transposed(to_f32(*src), src->shape[0], src->shape[1]);
                              convert_tensor(HostTensor::from_f32(name, shape, values).view(), type, dst, nbytes);
                          });
    }
    writer.write(output);
    return summary;
}

} // namespace chatterbox
