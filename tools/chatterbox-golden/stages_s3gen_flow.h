#pragma once
// Golden stage of the S3Gen flow: flow_spk_emb, flow_encoder_out, flow_mu, flow_estimator_step0_out,
// flow_cfm_out_full, flow_mel from the recorded tokens, prompt, x-vector and noise.

#include "golden_run.h"

namespace chatterbox::golden {

Stage s3gen_flow_stage();

} // namespace chatterbox::golden
