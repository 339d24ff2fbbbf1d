// Golden stage of the S3Gen flow: s3gen_input_tokens, flow_spk_emb, flow_encoder_out, flow_mu,
// flow_estimator_step0_out, flow_cfm_out_full, flow_mel from the computed greedy tokens and voice
// (prompt tokens and mel, x-vector) and the recorded noise.

#include "stages.h"

#include "core/error.h"
#include "models/chatterbox/s3gen/flow.h"
#include "models/chatterbox/session.h"
#include "models/chatterbox/t3/generate.h"
#include "models/chatterbox/t3/hparams.h"

#include <limits>

namespace chatterbox::golden {

namespace {

std::vector<int32_t> token_ids(const NpyArray &array, const char *name) {
    std::vector<int32_t> ids;
    for (int64_t id : array.i64()) {
        if (id < std::numeric_limits<int32_t>::min() || id > std::numeric_limits<int32_t>::max())
            fail(name, ": token id ", id, " does not fit 32 bits");
        ids.push_back(int32_t(id));
    }
    return ids;
}

void run_flow(GoldenRun &run) {
    using namespace s3gen;
    const Engine engine({run.model_path(), BackendOptions{"cpu", run.threads()}, components(Component::flow)});
    Session session_of_run(engine);
    FlowSession &session = session_of_run.flow();
    const ModelFiles &files = engine.files();
    const FlowHParams &hp = engine.flow().hparams();

    FlowReference reference;
    reference.prompt_tokens = token_ids(run.computed("s3gen_prompt_tokens"), "s3gen_prompt_tokens");
    reference.prompt_mel = run.computed("s3gen_prompt_feat").f32();
    reference.xvector = run.computed("campplus_xvector").f32();
    // What tts.py hands S3Gen: the greedy tokens after drop_invalid_tokens (and, for Turbo, the
    // trailing silence tokens).
    const std::vector<int32_t> tokens = flow_input_tokens(
        t3::drop_invalid_tokens(token_ids(run.computed("t3_greedy_tokens"), "t3_greedy_tokens"), files.hparams().t3),
        hp);
    run.write("s3gen_input_tokens", NpyArray::from_i64({int64_t(tokens.size())}, {tokens.begin(), tokens.end()}));
    const std::vector<float> noise = run.input("flow_noise").f32();

    const FlowEncoding encoding = session.encode(tokens, reference);
    const int64_t frames = encoding.frames, mel = hp.mel_bins;
    run.write("flow_spk_emb", NpyArray::from_f32({1, mel}, encoding.speaker));
    run.write("flow_encoder_out", NpyArray::from_f32({1, frames, hp.encoder_dim}, encoding.hidden));
    run.write("flow_mu", NpyArray::from_f32({1, mel, frames}, encoding.mu));

    EstimatorGraph &graph = session.estimator_graph(frames);
    graph.set_conditioning(encoding.mu, encoding.speaker, session.prompt_condition(reference, frames));
    const std::vector<float> grid = cfm_time_grid(hp);
    run.write("flow_estimator_step0_out",
              NpyArray::from_f32({hp.cfg_rows(), mel, frames}, graph.velocity(noise, grid[0], grid[1])));

    const std::vector<float> full = session.solve(encoding, reference, noise);
    run.write("flow_cfm_out_full", NpyArray::from_f32({1, mel, frames}, full));
    const Mel generated = generated_part(full, mel, frames, int64_t(reference.prompt_mel.size()) / mel);
    run.write("flow_mel", NpyArray::from_f32({1, mel, generated.frames}, generated.values));
}

} // namespace

void add_s3gen_flow_stages(std::vector<Stage> &stages) {
    stages.push_back({"s3gen_flow",
                      {"s3gen_input_tokens", "flow_spk_emb", "flow_encoder_out", "flow_mu", "flow_estimator_step0_out",
                       "flow_cfm_out_full", "flow_mel"},
                      run_flow});
}

} // namespace chatterbox::golden
