#pragma once
// Converting a Chatterbox model (the official folder, or a GGUF) into one GGUF file, with a chosen
// precision for the weight matrices.
//
// Precision rule (which tensors take the requested type):
//   * only weight matrices used by matrix products: 2 or more dimensions, last name part `weight`
//     (or the weight-norm direction `original1` / `weight_v`), at least 4096 elements;
//   * never embeddings (`*_emb.weight`, `embed_tokens`, `input_embedding`, positional embeddings),
//     norms (a module name containing "norm"), `pos_bias_*`, the perceiver query;
//   * a matrix whose innermost (last PyTorch) dimension is not a whole number of blocks falls back:
//     q4_k (256) -> q8_0 (32) -> f16, so e.g. convolution kernels (innermost = kernel size) become f16;
//   * every other float tensor is stored as f32; integer tensors keep their type.
// Sources may be f32, f16, bf16 (or quantised, from a GGUF); values go through f32 and are
// quantised with ggml_quantize_chunk. A tensor already of the target type is copied bit for bit.
//
// The GGUF holds: tensors under their full store names ("t3.*", "s3gen.*", "ve.*", "conds.*"),
// ModelHparams metadata, "chatterbox.components", "chatterbox.matrix_type",
// "general.architecture" = "chatterbox", the tokenizer JSON ("tokenizer.huggingface.json") and, for a
// variant with several T3 checkpoints, the one converted ("chatterbox.t3_model").

#include "core/tensor.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace chatterbox {

class GgufWriter;
struct ModelHparams;

// "f32", "f16", "q8_0", "q4_k" (case-insensitive) -> ggml type; throws Error listing the choices.
ggml_type parse_matrix_type(const std::string &name);
std::string matrix_type_name(ggml_type type); // "f32", "f16", "q8_0", "q4_k"

// True for the weight matrices the precision rule converts (see above).
bool is_matrix_weight(const std::string &name, const Shape &shape);
// The type a tensor is stored with when `matrix_type` is requested (the rule above, with fallbacks).
ggml_type converted_type(const std::string &name, ggml_type source_type, const Shape &shape, ggml_type matrix_type);

struct ConvertOptions {
    ggml_type matrix_type = GGML_TYPE_F32;
    std::vector<std::string> components; // subset of {"ve", "t3", "s3gen"}; empty = all in the input
    std::string t3_model;                // which T3 of an official folder that has several (ModelOpenOptions)
    // Called before each tensor is written: (index from 0, count, full name).
    std::function<void(size_t, size_t, const std::string &)> progress;
};

struct ConvertSummary {
    struct Total {
        size_t tensors = 0;
        size_t bytes = 0;
    };
    std::map<ggml_type, Total> by_type;
    size_t fallbacks = 0;     // matrices stored in a wider type than requested (block size)
    std::string text() const; // "q8_0: 412 tensors, 251.3 MiB\n..."
};

// The metadata every Chatterbox GGUF carries: architecture, hyper-parameters, components, matrix
// type and, when the model has one, the tokenizer JSON (tokenizer_json may be null).
void write_model_metadata(GgufWriter &writer, const ModelHparams &hparams, const std::vector<std::string> &components,
                          ggml_type matrix_type, const std::string *tokenizer_json);

// Converts `input` (the official folder or a GGUF) into the GGUF file `output`.
// Throws Error for unknown components, a missing tokenizer when T3 is included, output == input, ...
ConvertSummary convert_model(const std::string &input, const std::string &output, const ConvertOptions &options);

} // namespace chatterbox
