// The synthetic-weights rule of shared/golden/WEIGHTS.md: primitives, test vectors bit for bit, the rule table
// against the manifest, and the compiled-in manifest against tests/data/manifest.json.

#include "models/chatterbox/model_files.h"
#include "models/chatterbox/synthetic_weights.h"
#include "support/synthetic_test_vectors.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>

namespace chatterbox::synthetic {
namespace {

uint32_t float_bits(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return bits;
}

// The golden manifest of a variant; ordered: the checkpoints keep their file order.
nlohmann::ordered_json load_manifest_json(Variant variant = Variant::english) {
    const std::string path = test::data_path(variant == Variant::turbo ? "turbo/manifest.json" : "manifest.json");
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << "cannot open " << path;
    return nlohmann::ordered_json::parse(in);
}

Shape json_shape(const nlohmann::ordered_json &shape) { return shape.get<Shape>(); }

TEST(SyntheticRule, PrimitivesKnownAnswers) {
    EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
    EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
    SplitMix64 rng{0};
    EXPECT_EQ(rng.next(), 0xe220a8397b1dcdafull);
}

TEST(SyntheticRule, TestVectorsBitForBit) {
    std::vector<test::SyntheticTestVector> vectors = test::synthetic_test_vectors();
    vectors.insert(vectors.end(), test::turbo_synthetic_test_vectors().begin(),
                   test::turbo_synthetic_test_vectors().end());
    for (const auto &v : vectors) {
        SCOPED_TRACE(v.name);
        EXPECT_EQ(fnv1a64(v.name), v.fnv);
        EXPECT_EQ(kDefaultSeed ^ v.fnv, v.seed);
        SplitMix64 rng{v.seed};
        EXPECT_EQ(rng.next(), v.first_output);
        EXPECT_EQ(rule_for(v.name, v.shape), v.rule);

        std::vector<float> values(size_t(shape_numel(v.shape)));
        fill_tensor(v.name, v.shape, kDefaultSeed, values.data());
        for (int i = 0; i < 4; ++i) {
            EXPECT_EQ(float_bits(values[i]), v.first_bits[i]) << "value " << i << " = " << values[i];
            EXPECT_EQ(values[i], v.first_values[i]) << "value " << i; // the decimal form names the same float
        }
    }
}

// The whole stream of a tensor big enough to be filled by several threads equals the sequential SplitMix64 stream.
TEST(SyntheticRule, ParallelFillEqualsSequentialStream) {
    const std::string name = "decoder.some_linear.weight";
    const Shape shape = {1536, 1000};
    ASSERT_EQ(rule_for(name, shape), "fan_in");
    std::vector<float> values(size_t(shape_numel(shape)));
    fill_tensor(name, shape, kDefaultSeed, values.data());
    SplitMix64 rng{kDefaultSeed ^ fnv1a64(name)};
    size_t mismatches = 0;
    for (size_t i = 0; i < values.size(); ++i) {
        const double u = double(rng.next() >> 40) / 16777216.0 * 2.0 - 1.0;
        mismatches += float_bits(values[i]) != float_bits(float(u / std::sqrt(1000.0)));
    }
    EXPECT_EQ(mismatches, 0u);
}

TEST(SyntheticRule, ValueRangesPerRule) {
    struct Case {
        std::string name;
        Shape shape;
        double lo, hi;
    };
    const Case cases[] = {
        {"speaker_encoder.head.bn1.running_mean", {32}, -0.1, 0.1},
        {"speaker_encoder.head.bn1.running_var", {32}, 1.0, 1.5},
        {"mel2wav.conv_post.bias", {18}, -3.02, -2.98},
        {"mel2wav.conv_pre.parametrizations.weight.original0", {512, 1, 1}, 0.9, 1.1},
        {"text_emb.weight", {704, 1024}, -1.0, 1.0},
        {"flow.encoder.encoders.0.self_attn.pos_bias_u", {8, 64}, -0.1, 0.1},
        {"mel2wav.resblocks.0.activations1.0.alpha", {256}, 0.9, 1.1},
        {"speaker_encoder.xvector.dense.linear.weight", {192, 512, 1}, -std::sqrt(6.0 / 512), std::sqrt(6.0 / 512)},
        {"flow.decoder.up.weight", {256, 80, 3}, -1 / std::sqrt(240.0), 1 / std::sqrt(240.0)},
        {"tfmr.norm.weight", {1024}, 0.9, 1.1},
        {"similarity_bias", {1}, -0.02, 0.02},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        std::vector<float> values(size_t(shape_numel(c.shape)));
        fill_tensor(c.name, c.shape, kDefaultSeed, values.data());
        double lo = values[0], hi = values[0];
        for (float v : values) lo = std::min(lo, double(v)), hi = std::max(hi, double(v));
        EXPECT_GE(lo, float(c.lo));
        EXPECT_LE(hi, float(c.hi));
        if (values.size() >= 256) {
            EXPECT_GT(hi - lo, 0.9 * (c.hi - c.lo)); // the draws span the range
        }
    }
}

TEST(SyntheticRule, BatchNormCounterIsInt64Zero) {
    const std::string name = "speaker_encoder.head.bn1.num_batches_tracked";
    EXPECT_EQ(rule_for(name, {}), "zero_int64");
    int64_t value = -1;
    fill_tensor(name, {}, kDefaultSeed, &value);
    EXPECT_EQ(value, 0);
}

TEST(SyntheticRule, RuleForAgreesWithManifest) {
    for (const auto &[variant, expected] :
         {std::pair{Variant::english, 16u + 292u + 2488u}, std::pair{Variant::turbo, 16u + 299u + 2491u}}) {
        SCOPED_TRACE(variant_name(variant));
        const nlohmann::ordered_json manifest = load_manifest_json(variant);
        size_t checked = 0;
        for (const auto &[file, checkpoint] : manifest.at("checkpoints").items()) {
            for (const auto &tensor : checkpoint.at("tensors")) {
                const std::string rule = tensor.at("rule");
                if (rule == "computed_constant_not_saved") continue;
                const std::string name = tensor.at("name");
                EXPECT_EQ(rule_for(name, json_shape(tensor.at("shape"))), rule) << file << ": " << name;
                ++checked;
            }
        }
        EXPECT_EQ(checked, expected);
    }
}

// Turbo's checkpoint stores the S3Tokenizer's computed buffers (WEIGHTS.md gives their sums).
TEST(SyntheticRule, ComputedConstantsAreWhatTheModuleComputes) {
    std::vector<float> mel(128 * 201), window(400);
    fill_tensor("tokenizer._mel_filters", {128, 201}, kDefaultSeed, mel.data());
    fill_tensor("tokenizer.window", {400}, kDefaultSeed, window.data());
    double mel_sum = 0, window_sum = 0;
    for (float v : mel) mel_sum += v;
    for (float v : window) window_sum += v;
    EXPECT_NEAR(mel_sum, 3.1909855, 1e-5);
    EXPECT_NEAR(window_sum, 199.99999, 1e-4);
    EXPECT_EQ(window[0], 0.0f);
    EXPECT_THROW(fill_tensor("tokenizer.window", {401}, kDefaultSeed, std::vector<float>(401).data()), Error);
}

TEST(SyntheticRule, EmbeddedManifestEqualsJson) {
    for (Variant variant : {Variant::english, Variant::turbo}) {
        SCOPED_TRACE(variant_name(variant));
        const nlohmann::ordered_json manifest = load_manifest_json(variant);
        const auto &embedded = official_manifest(variant);
        const auto &checkpoints = manifest.at("checkpoints");
        ASSERT_EQ(embedded.size(), checkpoints.size());
        size_t index = 0;
        for (const auto &[file, checkpoint] : checkpoints.items()) {
            const ManifestCheckpoint &ours = embedded[index++];
            SCOPED_TRACE(file);
            EXPECT_EQ(ours.file, file);
            const auto &tensors = checkpoint.at("tensors");
            ASSERT_EQ(ours.tensors.size(), tensors.size());
            size_t stored = 0;
            for (size_t i = 0; i < tensors.size(); ++i) {
                const ManifestTensor &t = ours.tensors[i];
                const auto &expected = tensors[i];
                EXPECT_EQ(t.name, expected.at("name").get<std::string>());
                EXPECT_EQ(t.shape, json_shape(expected.at("shape"))) << t.name;
                EXPECT_EQ(t.type, expected.at("dtype") == "int64" ? GGML_TYPE_I64 : GGML_TYPE_F32) << t.name;
                EXPECT_EQ(t.rule, expected.at("rule").get<std::string>());
                EXPECT_EQ(t.stored, expected.at("rule") != "computed_constant_not_saved") << t.name;
                stored += t.stored;
            }
            EXPECT_EQ(stored, checkpoint.at("n_tensors").get<size_t>());
        }
    }
}

// The official sizes scale the manifest to itself: the tensor list of any size comes from one rule.
TEST(SyntheticRule, ScaledManifestOfTheOfficialSizesIsTheManifest) {
    const auto scaled = scaled_manifest(ModelHparams::for_variant(Variant::english));
    const auto &official = official_manifest();
    ASSERT_EQ(scaled.size(), official.size());
    for (size_t c = 0; c < official.size(); ++c) {
        std::vector<std::pair<std::string, Shape>> want, got;
        for (const ManifestTensor &t : official[c].tensors)
            if (t.stored) want.emplace_back(t.name, t.shape);
        for (const ManifestTensor &t : scaled[c].tensors) got.emplace_back(t.name, t.shape);
        EXPECT_EQ(got, want) << official[c].file;
    }
}

TEST(SyntheticRule, TinyManifestFollowsTheTinyHparams) {
    const ModelHparams tiny = tiny_hparams();
    size_t t3_layers = 0, tokenizer_blocks = 0;
    for (const ManifestCheckpoint &checkpoint : scaled_manifest(tiny))
        for (const ManifestTensor &t : checkpoint.tensors) {
            if (t.name.rfind("tfmr.layers.", 0) == 0 && t.name.find(".input_layernorm.") != std::string::npos) {
                ++t3_layers;
                EXPECT_EQ(t.shape, (Shape{tiny.t3.hidden})) << t.name;
            }
            if (t.name.rfind("tokenizer.encoder.blocks.", 0) == 0 &&
                t.name.find(".attn_ln.weight") != std::string::npos)
                ++tokenizer_blocks;
            if (t.name == "mel2wav.conv_pre.parametrizations.weight.original1") {
                EXPECT_EQ(t.shape, (Shape{tiny.hift.base_channels, tiny.hift.mel_bins, tiny.hift.conv_pre_kernel}));
            }
        }
    EXPECT_EQ(t3_layers, size_t(tiny.t3.n_layers));
    EXPECT_EQ(tokenizer_blocks, size_t(tiny.s3tokenizer.layers));

    ModelHparams too_deep = tiny;
    too_deep.t3.n_layers = 31;
    EXPECT_THROW(scaled_manifest(too_deep), Error);
}

} // namespace
} // namespace chatterbox::synthetic
