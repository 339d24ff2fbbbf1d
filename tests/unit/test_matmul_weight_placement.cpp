// Where the matrix products' weights of T3 and of the S3Gen flow live and what multiplies them: with
// ggml's repacking, every quantised weight a ggml_mul_mat multiplies sits in ggml's CPU_REPACK buffer
// wherever ggml can multiply it in that layout (decided by the same kernels::choose_matmul_kernel
// that binds them); with the engine's int8 tile kernels on (and AVX2 or AVX-512 VNNI), every q4_K or
// q8_0 weight of whole 256-value rows is multiplied by them instead and the rest as with ggml's repacking; with every matmul kernel
// off, every weight stays plain and ggml_mul_mat multiplies it; as shipped, where the CPU has AVX-512
// BF16, the bf16 product takes every weight of the flow (which allows bf16) and none of T3's. The checkpoints are built in memory from the
// official tensor list with fewer layers (and a narrower T3), typed by the converter's q4_k rule: q4_K, q8_0 where a
// row is not whole q4_K blocks, f16 convolution kernels, f32 for the rest.

#include "nn_harness.h"

#include "kernels/ggml_repack.h"
#include "kernels/onednn.h"
#include "kernels/q4k.h"
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

// engine_tiles: the defaults without the bf16 product; defaults: every kernel as shipped.
enum class Layout { plain, ggml_repack, engine_tiles, defaults };

BackendOptions options_for(Layout layout) {
    BackendOptions options{"cpu", 1};
    for (const kernels::MatmulKernel *kernel : kernels::matmul_kernels()) {
        const std::string name = kernel->name();
        if (layout == Layout::plain || (layout == Layout::ggml_repack && name != "ggml_repack") ||
            (layout == Layout::engine_tiles && name == "onednn_bf16"))
            options.kernels.disable.push_back(name);
    }
    return options;
}

bool engine_tiles_or_defaults(Layout layout) { return layout == Layout::engine_tiles || layout == Layout::defaults; }

bool bf16_kernel_runs() { return kernels::onednn_bf16_kernel().runs_here(); }

bool tile_kernels_run() { return kernels::int8_isa_runs(kernels::Int8Isa::avx2); }

// The weights (tensors of a weight buffer, or views of one) that the products in the graph of
// `outputs` multiply, each with whether the engine's int8 tile kernels multiply it (else ggml_mul_mat).
// Only the graph's structure is built: nothing is computed.
std::map<const ggml_tensor *, bool> multiplied_weights(ggml_context *ctx, const std::vector<ggml_tensor *> &outputs) {
    constexpr size_t kMaxNodes = 8192;
    ggml_cgraph *graph = ggml_new_graph_custom(ctx, kMaxNodes, false);
    for (ggml_tensor *out : outputs) ggml_build_forward_expand(graph, out);
    std::map<const ggml_tensor *, bool> weights;
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
        const ggml_tensor *node = ggml_graph_node(graph, i);
        const bool engine = kernels::kernel_node_flops(node) > 0;
        if (node->op != GGML_OP_MUL_MAT && !engine) continue;
        const ggml_tensor *operand = engine ? node->src[1] : node->src[0];
        const ggml_tensor *w = operand->view_src ? operand->view_src : operand;
        if (w->buffer && ggml_backend_buffer_get_usage(w->buffer) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS)
            weights[w] = engine;
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

struct Placed {
    int repacked = 0; // in ggml's CPU_REPACK buffer
    int engine = 0;   // multiplied by one of the engine's kernels
    int bf16 = 0;     // of which by the bf16 product
};

// Checks every multiplied weight against what a backend with the same options decides for it, for a
// component whose products may be as coarse as `coarsest`.
Placed expect_placement(const std::map<const ggml_tensor *, bool> &weights, Layout layout,
                        kernels::ProductPrecision coarsest) {
    const KernelSelection selection = options_for(layout).kernels;
    Placed placed;
    int quantised = 0;
    for (const auto &[w, by_engine] : weights) {
        quantised += ggml_is_quantized(w->type);
        const kernels::MatmulKernel *chosen = kernels::choose_matmul_kernel(w, selection, coarsest);
        const bool engine = chosen && chosen != &kernels::ggml_repack_kernel();
        const bool repackable = chosen == &kernels::ggml_repack_kernel();
        const std::string where = std::string(ggml_get_name(w)) + " " + ggml_type_name(w->type) + " in " +
                                  ggml_backend_buft_name(ggml_backend_buffer_get_type(w->buffer));
        EXPECT_EQ(by_engine, engine) << where;
        EXPECT_EQ(is_repacked(w), repackable) << where;
        EXPECT_FALSE(engine && repackable) << where;
        placed.repacked += is_repacked(w);
        placed.engine += by_engine;
        placed.bf16 += chosen == &kernels::onednn_bf16_kernel();
    }
    EXPECT_GT(quantised, 0) << "the checkpoint has quantised matrices";
    if (layout == Layout::plain) {
        EXPECT_EQ(placed.repacked + placed.engine, 0);
    }
    if (!engine_tiles_or_defaults(layout)) {
        EXPECT_EQ(placed.engine, 0);
    }
    if (layout != Layout::defaults || coarsest == kernels::ProductPrecision::f32) {
        EXPECT_EQ(placed.bf16, 0);
    }
    return placed;
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

class MatmulWeightPlacement : public ::testing::TestWithParam<Layout> {};

TEST_P(MatmulWeightPlacement, T3) {
    const Layout layout = GetParam();
    const t3::HParams hp = small_t3();
    NnHarness h(options_for(layout));
    const std::regex layer(R"(^tfmr\.layers\.(\d+)\.)");
    add_checkpoint(h, "t3_cfg.safetensors", "t3.",
                   [&](const std::string &name) { return in_first_blocks(name, layer, hp.n_layers); },
                   {{1024, hp.hidden},
                    {4096, hp.ffn},
                    {8194, hp.speech_vocab},
                    {2050, hp.text_positions},
                    {4100, hp.speech_positions}});
    const t3::T3Model model(h.store(), h.backend(), hp);
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

    expect_placement(weights, layout, kernels::ProductPrecision::f32);
    // So that the checks above cannot hold vacuously: ggml repacks every layer's q4_K matrix wherever
    // it has AVX2 (not the head: 8194-like rows do not interleave by 8); the engine's kernels take
    // every one of them and the head wherever the CPU runs them (kernels::int8_isa_runs).
    const bool engine = engine_tiles_or_defaults(layout) && tile_kernels_run();
    const bool repacking = !engine && layout != Layout::plain && Backend::cpu_has_feature("AVX2");
    int repacked_layer_matrices = 0, engine_layer_matrices = 0, layer_matrices = 0;
    for (const t3::LayerWeights &l : std::get<t3::LlamaBackbone>(model.backbone()).layers)
        for (const nn::Linear *m : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.mlp.gate, &l.mlp.up, &l.mlp.down}) {
            EXPECT_EQ(m->weight->type, GGML_TYPE_Q4_K) << ggml_get_name(m->weight);
            ++layer_matrices;
            repacked_layer_matrices += is_repacked(m->weight);
            engine_layer_matrices += weights.at(m->weight);
        }
    if (engine) {
        EXPECT_EQ(engine_layer_matrices, layer_matrices);
        EXPECT_TRUE(weights.at(model.speech_head().weight)) << "the head too: any column count";
    } else if (repacking) {
        EXPECT_EQ(repacked_layer_matrices, layer_matrices);
        EXPECT_FALSE(is_repacked(model.speech_head().weight)) << "8194-like rows do not interleave by 8";
    }
}

TEST_P(MatmulWeightPlacement, Flow) {
    const Layout layout = GetParam();
    s3gen::FlowHParams hp;
    hp.encoder_blocks = 1;
    hp.encoder_up_blocks = 1;
    hp.decoder_mid_blocks = 1;
    hp.decoder_transformer_blocks = 1;
    NnHarness h(options_for(layout));
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

    const Placed placed = expect_placement(weights, layout, kernels::ProductPrecision::bf16);
    if (layout == Layout::defaults && bf16_kernel_runs()) {
        EXPECT_EQ(placed.bf16, int(weights.size())) << "the bf16 product takes every float weight of the flow";
    } else if (engine_tiles_or_defaults(layout) && tile_kernels_run()) {
        EXPECT_GT(placed.engine, 0);
    } else if (layout != Layout::plain && Backend::cpu_has_feature("AVX2")) {
        EXPECT_GT(placed.repacked, 0);
    }
}

std::string layout_name(const ::testing::TestParamInfo<Layout> &info) {
    switch (info.param) {
    case Layout::plain:
        return "plain";
    case Layout::ggml_repack:
        return "ggml_repack";
    case Layout::engine_tiles:
        return "engine_tiles";
    default:
        return "defaults";
    }
}

INSTANTIATE_TEST_SUITE_P(Layouts, MatmulWeightPlacement,
                         ::testing::Values(Layout::plain, Layout::ggml_repack, Layout::engine_tiles, Layout::defaults),
                         layout_name);

} // namespace
} // namespace chatterbox
