#pragma once
// Weight normalisation (torch.nn.utils.weight_norm and its parametrizations form), folded into a
// plain weight once at load time: W = g * v / ||v||, the norm taken over every dimension except
// `dim`. Both checkpoint spellings are accepted:
//   <prefix>.weight_g / <prefix>.weight_v                                        (older PyTorch)
//   <prefix>.parametrizations.weight.original0 / ...original1                   (g / v, newer)
//
//   ggml_tensor *w_pre = nn::weight_norm(w, "mel2wav.conv_pre", {512, 80, 7});  // f32, PyTorch (512, 80, 7)
//
// Conv1d / ConvTranspose1d do this themselves when bound with ConvOptions::with_weight_norm().

#include "modules/module_weights.h"

#include <string>
#include <vector>

namespace chatterbox::nn {

// The folded weight values (row-major over `shape`), computed in double precision.
// g is expected with shape ones everywhere except shape[dim] (PyTorch keeps its rank).
std::vector<float> weight_norm_values(ModuleWeights &w, const std::string &prefix, const Shape &shape, int dim = 0);

// The folded weight as a derived f32 tensor named `<prefix>.weight`; for WeightUse::matmul bound as
// the matrix (shape[0], the rest) that a convolution multiplies.
ggml_tensor *weight_norm(ModuleWeights &w, const std::string &prefix, const Shape &shape, int dim = 0,
                         WeightUse use = WeightUse::f32);

} // namespace chatterbox::nn
