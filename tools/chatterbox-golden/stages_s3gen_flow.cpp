// Golden stage of the S3Gen flow: s3gen_input_tokens, flow_spk_emb, flow_encoder_out, flow_mu,
// flow_estimator_step0_out, flow_cfm_out_full, flow_mel (and for the mean flow
// flow_estimator_step1_out, flow_time_mlp_out, flow_time_emb_mixed) from the computed greedy
// tokens and voice (prompt tokens and mel, x-vector) and the recorded noise.

#include "stages.h"

#include "core/error.h"
#include "models/chatterbox/pipeline_session.h"
#include "models/chatterbox/s3gen/flow.h"
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
    const std::unique_ptr<PipelineModel> engine = load_engine(run, components(Component::flow));
    PipelineSession session_of_run(*engine);
    FlowSession &session = session_of_run.flow();
    const ModelFiles &files = engine->files();
    const FlowHParams &hp = engine->flow().hparams();

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
    const std::vector<float> step0 = graph.velocity(noise, grid[0], grid[1]);
    run.write("flow_estimator_step0_out", NpyArray::from_f32({hp.cfg_rows(), mel, frames}, step0));
    if (hp.mean_flow) {
        // The mean-flow set also records the second step (one row, no CFG) and the time embeddings:
        // time_mlp of t0, r0, t1, r1 and the mixed embedding of each step.
        std::vector<float> time_mlp = graph.time_mlp_output(), mixed = graph.time_embedding();
        std::vector<float> x1 = noise;
        const float dt = grid[1] - grid[0];
        for (size_t i = 0; i < x1.size(); ++i) x1[i] = x1[i] + dt * step0[i];
        run.write("flow_estimator_step1_out",
                  NpyArray::from_f32({1, mel, frames}, graph.velocity(x1, grid[1], grid[2])));
        const std::vector<float> time_mlp1 = graph.time_mlp_output(), mixed1 = graph.time_embedding();
        time_mlp.insert(time_mlp.end(), time_mlp1.begin(), time_mlp1.end());
        mixed.insert(mixed.end(), mixed1.begin(), mixed1.end());
        run.write("flow_time_mlp_out", NpyArray::from_f32({4, hp.time_embed_dim()}, time_mlp));
        run.write("flow_time_emb_mixed", NpyArray::from_f32({2, hp.time_embed_dim()}, mixed));
    }

    const std::vector<float> full = session.solve(encoding, reference, noise);
    run.write("flow_cfm_out_full", NpyArray::from_f32({1, mel, frames}, full));
    const Mel generated = generated_part(full, mel, frames, int64_t(reference.prompt_mel.size()) / mel);
    run.write("flow_mel", NpyArray::from_f32({1, mel, generated.frames}, generated.values));
}

} // namespace

void add_s3gen_flow_stages(std::vector<Stage> &stages) {
    stages.push_back(
        {"s3gen_flow",
         {"s3gen_input_tokens", "flow_spk_emb", "flow_encoder_out", "flow_mu", "flow_estimator_step0_out",
          "flow_estimator_step1_out", "flow_time_mlp_out", "flow_time_emb_mixed", "flow_cfm_out_full", "flow_mel"},
         run_flow});
}

} // namespace chatterbox::golden
