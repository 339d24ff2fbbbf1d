// Where the matrix products' weights of T3 and of the S3Gen flow live: with repacking on, every
// quantised weight a ggml_mul_mat multiplies sits in ggml's CPU_REPACK buffer wherever ggml can
// multiply it in that layout (decided by the same Backend::matmul_weight_buffer_type probe); with
// repacking off, none does. The checkpoints are built in memory from the official tensor list with
// fewer layers (and a narrower T3), typed by the converter's q4_k rule: q4_K, q8_0 where a row is
// not whole q4_K blocks, f16 convolution kernels, f32 for the rest.

#include "nn_harness.h"

#include "models/chatterbox/convert.h"
#include "models/chatterbox/s3gen/flow.h"
#include "models/chatterbox/synthetic_weights.h"
#include "models/chatterbox/t3/backbone.h"


#include <functional>
#include <map>
#include <regex>
#include <set>

namespace chatterbox {
namespace {

using test::NnHarness;

// False for a tensor of a repeated block whose index (the first group of `block`) is count or more.
bool in_first_blocks(const std::string &name, const std::regex &block, int count) {
    std::smatch match;
    return !std::regex_search(name, match, block) || std::stoi(match[1].str()) < count;
}

// The stored tensors of the official `file` that `keep` accepts, under `store_prefix`, every
// dimension found in `resize` replaced, typed as a q4_k conversion would.
void add_checkpoint(NnHarness &h, const std::string &file, const std::string &store_prefix,
                    const std::function<bool(const std::string &)> &keep, const std::map<int64_t, int64_t> &resize) {
    for (const synthetic::ManifestCheckpoint &checkpoint : synthetic::official_manifest()) {
        if (checkpoint.file != file) continue;
        for (const synthetic::ManifestTensor &t : checkpoint.tensors) {
            if (!t.stored || !keep(t.name)) continue;
            ASSERT_EQ(t.type, GGML_TYPE_F32) << t.name;
            Shape shape = t.shape;
            for (int64_t &d : shape)
                if (auto it = resize.find(d); it != resize.end()) d = it->second;
            const std::string name = store_prefix + t.name;
            h.add(name, shape, converted_type(name, t.type, shape, GGML_TYPE_Q4_K), -0.1f, 0.1f);
        }
    }
}

bool is_repacked(const ggml_tensor *t) {
    return t->buffer && std::string(ggml_backend_buft_name(ggml_backend_buffer_get_type(t->buffer))) == "CPU_REPACK";
}

// The weights (tensors of a weight buffer, or views of one) that the products in the graph of
// `outputs` multiply. Only the graph's structure is built: nothing is computed.
std::set<const ggml_tensor *> multiplied_weights(ggml_context *ctx, const std::vector<ggml_tensor *> &outputs) {
    constexpr size_t kMaxNodes = 8192;
    ggml_cgraph *graph = ggml_new_graph_custom(ctx, kMaxNodes, false);
    for (ggml_tensor *out : outputs) ggml_build_forward_expand(graph, out);
    std::set<const ggml_tensor *> weights;
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
        const ggml_tensor *node = ggml_graph_node(graph, i);
        if (node->op != GGML_OP_MUL_MAT) continue;
        const ggml_tensor *w = node->src[0]->view_src ? node->src[0]->view_src : node->src[0];
        if (w->buffer && ggml_backend_buffer_get_usage(w->buffer) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS)
            weights.insert(w);
    }
    return weights;
}

// A no_alloc context for graphs whose structure alone is inspected.
struct GraphScratch {
    ggml_context *ctx;
    GraphScratch() {
        constexpr size_t kTensors = 16384;
        ggml_init_params params{ggml_tensor_overhead() * kTensors + ggml_graph_overhead_custom(8192, false), nullptr,
                                /*no_alloc=*/true};
        ctx = ggml_init(params);
    }
    ~GraphScratch() { ggml_free(ctx); }
};

// Checks every multiplied weight; returns how many of them are repacked.
int expect_placement(const std::set<const ggml_tensor *> &weights, const Backend &probe, bool repack) {
    int repacked = 0, quantised = 0;
    for (const ggml_tensor *w : weights) {
        quantised += ggml_is_quantized(w->type);
        const bool repackable = ggml_is_quantized(w->type) && probe.matmul_weight_buffer_type(w) != nullptr;
        EXPECT_EQ(is_repacked(w), repack && repackable)
            << ggml_get_name(w) << " " << ggml_type_name(w->type) << " in "
            << ggml_backend_buft_name(ggml_backend_buffer_get_type(w->buffer));
        repacked += is_repacked(w);
    }
    EXPECT_GT(quantised, 0) << "the checkpoint has quantised matrices";
    return repacked;
}

// A narrow two-layer T3 (head_dim 64 as the real one; a speech vocabulary that, like the real
// 8194, is not a multiple of the 8 rows ggml interleaves, so the head stays plain).
t3::HParams small_t3() {
    t3::HParams hp;
    hp.n_layers = 2;
    hp.hidden = 256;
    hp.n_heads = 4;
    hp.ffn = 512;
    hp.speech_vocab = 514;
    hp.text_positions = 66;
    hp.speech_positions = 132;
    return hp;
}

class MatmulWeightPlacement : public ::testing::TestWithParam<bool> {};

TEST_P(MatmulWeightPlacement, T3) {
    const bool repack = GetParam();
    const t3::HParams hp = small_t3();
    NnHarness h(BackendOptions{"cpu", 1, repack});
    const std::regex layer(R"(^tfmr\.layers\.(\d+)\.)");
    add_checkpoint(h, "t3_cfg.safetensors", "t3.",
                   [&](const std::string &name) { return in_first_blocks(name, layer, hp.n_layers); },
                   {{1024, hp.hidden},
                    {4096, hp.ffn},
                    {8194, hp.speech_vocab},
                    {2050, hp.text_positions},
                    {4100, hp.speech_positions}});
    const t3::Model model(h.store(), h.backend(), hp);
    const t3::KvCache cache(h.backend(), hp, /*n_rows=*/2, /*capacity=*/8, GGML_TYPE_F16);

    GraphScratch scratch;
    ggml_context *ctx = scratch.ctx;
    t3::BackboneInputs in;
    in.n_tokens = 2;
    in.n_kv = cache.capacity();
    in.embeds = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, hp.hidden, in.n_tokens, cache.n_rows());
    in.positions = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, in.n_tokens);
    in.cache_slots = ggml_new_tensor_1d(ctx, GGML_TYPE_I64, in.n_tokens);
    in.mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, in.n_kv, in.n_tokens);
    ggml_tensor *logits =
        t3::build_speech_logits(ctx, model, t3::build_decoder_layers(ctx, model, cache, in, nn::AttentionPath::flash));
    // The conditioning encoder's products: speaker projection and perceiver attention.
    ggml_tensor *speaker = model.speaker_proj()(ctx, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, hp.speaker_embed));
    ggml_tensor *prompt = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, hp.hidden, 8);
    ggml_tensor *resampled = model.perceiver().attn(ctx, prompt, prompt, nn::AttentionOptions{});
    const auto weights = multiplied_weights(ctx, {logits, speaker, resampled});
    EXPECT_EQ(weights.size(), size_t(7 * hp.n_layers + 1 + 1 + 4)) << "layer matrices, head, speaker, perceiver";

    const Backend probe(BackendOptions{"cpu", 1, /*repack_weights=*/true});
    const int repacked = expect_placement(weights, probe, repack);
    if (!repack) return;
    // So that the check above cannot hold vacuously: ggml repacks q4_K wherever it has AVX2.
    int repacked_layer_matrices = 0;
    for (const t3::LayerWeights &l : std::get<t3::LlamaBackbone>(model.backbone()).layers)
        for (const nn::Linear *m : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.mlp.gate, &l.mlp.up, &l.mlp.down}) {
            EXPECT_EQ(m->weight->type, GGML_TYPE_Q4_K) << ggml_get_name(m->weight);
            repacked_layer_matrices += is_repacked(m->weight);
        }
    if (Backend::cpu_has_feature("AVX2")) {
        EXPECT_EQ(repacked_layer_matrices, 7 * hp.n_layers);
        EXPECT_FALSE(is_repacked(model.speech_head().weight)) << "8194-like rows do not interleave by 8";
    }
    EXPECT_GE(repacked, repacked_layer_matrices);
}

TEST_P(MatmulWeightPlacement, Flow) {
    const bool repack = GetParam();
    s3gen::FlowHParams hp;
    hp.encoder_blocks = 1;
    hp.encoder_up_blocks = 1;
    hp.decoder_mid_blocks = 1;
    hp.decoder_transformer_blocks = 1;
    NnHarness h(BackendOptions{"cpu", 1, repack});
    const std::regex stage(R"(\.(?:encoders|up_encoders|mid_blocks)\.(\d+)\.)");
    const std::regex transformer(R"(_blocks\.\d+\.1\.(\d+)\.)");
    add_checkpoint(h, "s3gen.safetensors", "s3gen.",
                   [&](const std::string &name) {
                       return name.rfind("flow.", 0) == 0 && in_first_blocks(name, stage, 1) &&
                              in_first_blocks(name, transformer, 1);
                   },
                   {});
    const s3gen::FlowModel model(h.store(), h.backend(), hp);

    GraphScratch scratch;
    ggml_context *ctx = scratch.ctx;
    const int64_t tokens = 8, frames = tokens * hp.token_mel_ratio, dim = hp.encoder_dim, rows = 2;
    ggml_tensor *ids = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, tokens);
    ggml_tensor *token_positions = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, dim, 2 * tokens - 1);
    ggml_tensor *frame_positions = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, dim, 2 * frames - 1);
    ggml_tensor *hidden = model.encoder()(ctx, model.token_embedding()(ctx, ids), token_positions, frame_positions);
    ggml_tensor *mu = model.encoder_projection()(ctx, hidden);
    ggml_tensor *speaker = model.speaker_projection()(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, hp.speaker_dim, 1));
    ggml_tensor *velocity =
        model.estimator()(ctx, ggml_new_tensor_3d(ctx, GGML_TYPE_F32, hp.mel_bins, frames, rows),
                          ggml_new_tensor_3d(ctx, GGML_TYPE_F32, hp.conditioning_channels(), frames, rows),
                          ggml_new_tensor_2d(ctx, GGML_TYPE_F32, hp.time_sinusoid_dim(), 1), nn::AttentionPath::flash);
    const auto weights = multiplied_weights(ctx, {mu, speaker, velocity});

    const Backend probe(BackendOptions{"cpu", 1, /*repack_weights=*/true});
    const int repacked = expect_placement(weights, probe, repack);
    if (repack && Backend::cpu_has_feature("AVX2")) {
        EXPECT_GT(repacked, 0);
    }
}

INSTANTIATE_TEST_SUITE_P(Repack, MatmulWeightPlacement, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) { return info.param ? "on" : "off"; });

} // namespace
} // namespace chatterbox
