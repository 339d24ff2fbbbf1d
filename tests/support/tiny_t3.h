#pragma once
// A tiny model's T3 loaded alone, with a backend to compute on and its built-in voice's
// conditioning: what the T3 batch and prefix tests run requests on.

#include "core/backend.h"
#include "models/chatterbox/pipeline_model.h"
#include "models/chatterbox/t3/cond_encoder.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace chatterbox::test {

struct TinyT3 {
    std::unique_ptr<PipelineModel> engine;
    std::unique_ptr<Backend> backend; // for one thread at a time
    t3::CondEmbeddings cond;          // the built-in voice, exaggeration 0.5

    explicit TinyT3(const std::string &model_path);
    const t3::T3Model &model() const { return engine->t3(); }
    const t3::HParams &hp() const { return engine->t3().hparams(); }
    // n_ids text ids, framed as the model takes them.
    std::vector<int32_t> text(int n_ids) const;
};

} // namespace chatterbox::test
