#pragma once
// Embedding table lookup, PyTorch nn.Embedding.
//
//   nn::Embedding speech_emb(w, "speech_emb", 8194, 1024);
//   speech_emb.check_ids(token_ids);                 // on the host, before set_input
//   ggml_tensor *e = speech_emb(ctx, ids);           // ids: I32 ggml [T, B] -> f32 ggml [1024, T, B]
//
// The table keeps its stored type; rows come out as f32.

#include "modules/module_weights.h"

#include "ggml.h"

#include <cstdint>
#include <string>
#include <vector>

namespace chatterbox::nn {

struct Embedding {
    ggml_tensor *weight = nullptr; // ggml [dim, count] = PyTorch (count, dim)
    int64_t count = 0;
    int64_t dim = 0;

    Embedding() = default;
    // Binds `<prefix>.weight` (count, dim).
    Embedding(ModuleWeights &w, const std::string &prefix, int64_t count, int64_t dim);

    // ids: I32 ggml [T] or [T, B] = PyTorch (B, T) -> f32 ggml [dim, T] or [dim, T, B].
    // ggml does not range-check ids: validate them with check_ids() first.
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *ids) const;
    // Throws when an id is outside [0, count).
    void check_ids(const std::vector<int32_t> &ids) const;
};

} // namespace chatterbox::nn
