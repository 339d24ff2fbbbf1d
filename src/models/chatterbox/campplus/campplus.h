#pragma once
// CAMPPlus speaker encoder (spec campplus.md): the 192-d x-vector S3Gen is conditioned on, from an
// 80-bin mean-subtracted Kaldi fbank. A 2-D front-end (FCM head) over frequency x time, then a
// densely connected TDNN with context-aware masking (CAM), statistics pooling and a dense layer.
//
//   WeightStore store;  store.add_safetensors(dir + "/s3gen.safetensors", "s3gen.");
//   campplus::CampPlus encoder(store, backend);                 // s3gen.speaker_encoder.*
//   std::vector<float> xvector = encoder.embed(fbank, frames);  // fbank: (frames, 80) row-major

#include "core/backend.h"
#include "core/weight_store.h"
#include "models/chatterbox/campplus/blocks.h"
#include "models/chatterbox/campplus/campplus_hparams.h"
#include "modules/conv1d.h"
#include "modules/module_weights.h"
#include "modules/norm.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace chatterbox::campplus {

class CampPlus {
  public:
    // Weights under `prefix` ("s3gen.speaker_encoder." when s3gen.safetensors was added as "s3gen.").
    CampPlus(const WeightStore &store, Backend &backend, const CampPlusHParams &hp,
             const std::string &prefix = "s3gen.speaker_encoder.");
    const CampPlusHParams &hparams() const { return hp_; }
    ~CampPlus();
    CampPlus(const CampPlus &) = delete;
    CampPlus &operator=(const CampPlus &) = delete;

    // fbank: (frames, 80) row-major, already mean-subtracted (the official extract_feature). Returns the
    // x-vector (192). Throws Error for a wrong size, fewer than kMinFrames or more than kMaxFrames frames,
    // or non-finite values.
    // The graph runs on backend (the caller's session).
    std::vector<float> embed(Backend &backend, const std::vector<float> &fbank, int64_t frames) const;

  private:
    CampPlusHParams hp_;
    // x: ggml [T, 80, 1] (fbank transposed) -> ggml [192, 1].
    ggml_tensor *build(ggml_context *ctx, ggml_tensor *x, const SegmentPooling &pooling) const;

    std::unique_ptr<ModuleWeights> weights_;
    FcmHead head_;
    nn::Conv1d tdnn_;
    nn::BatchNorm1d tdnn_bn_;
    std::vector<DenseTdnnBlock> blocks_;
    std::vector<TransitLayer> transits_;
    nn::BatchNorm1d out_bn_;
    nn::Conv1d dense_;
    nn::BatchNorm1d dense_bn_; // affine=False
};

} // namespace chatterbox::campplus
