// The variants' records (models/chatterbox/variant_spec.h): one per variant, each consistent with
// itself, and what a loaded model's hyper-parameters take from them.

#include "models/chatterbox/model_files.h"
#include "models/chatterbox/variant_spec.h"

#include <gtest/gtest.h>

#include <set>

using namespace chatterbox;

TEST(VariantSpec, OneRecordPerVariantInVariantOrder) {
    const std::vector<const VariantSpec *> &specs = variant_specs();
    ASSERT_EQ(specs.size(), 4u);
    std::set<Variant> seen;
    for (size_t i = 0; i < specs.size(); ++i) {
        const VariantSpec &spec = *specs[i];
        SCOPED_TRACE(variant_name(spec.variant));
        EXPECT_EQ(int(spec.variant), int(i));
        EXPECT_TRUE(seen.insert(spec.variant).second);
        EXPECT_EQ(&variant_spec(spec.variant), &spec);
        EXPECT_EQ(spec.t3.variant, spec.variant) << "T3's hyper-parameters name their variant";
        ASSERT_FALSE(spec.folders.empty());
        for (const OfficialFolder &folder : spec.folders) {
            EXPECT_EQ(folder.variant, spec.variant);
            EXPECT_EQ(folder.files.size(), model_components().size());
            EXPECT_FALSE(folder.tokenizer.empty());
        }
        EXPECT_EQ(spec.folders.size() > 1, spec.folders.front().t3_model != nullptr)
            << "a variant with several T3s names each";
        EXPECT_NO_THROW(spec.t3.validate());
        EXPECT_NO_THROW(spec.flow.validate());
        EXPECT_GT(spec.t3.guards.speech_per_text_token, 0.0f);
        // The GPT-2 T3s draw without CFG and have no alignment analyzer (the official code has neither).
        const bool gpt2 = spec.t3.backbone_kind() == t3::Backbone::gpt2;
        EXPECT_EQ(spec.t3.sampler.guidance, !gpt2);
        EXPECT_EQ(spec.t3.guards.aligned_heads.empty(), gpt2);
    }
    EXPECT_EQ(official_folders().size(), 5u) << "English, multilingual v2 and v3, Turbo, Nano";
}

TEST(VariantSpec, ModelHparamsTakeTheRecordsBehaviour) {
    for (const VariantSpec *spec : variant_specs()) {
        SCOPED_TRACE(variant_name(spec->variant));
        const ModelHparams h = ModelHparams::for_variant(spec->variant);
        EXPECT_EQ(h.variant, spec->variant);
        EXPECT_EQ(h.t3.backbone, spec->t3.backbone);
        EXPECT_EQ(h.t3.text_vocab, spec->t3.text_vocab);
        EXPECT_EQ(h.t3.guards.speech_per_text_token, spec->t3.guards.speech_per_text_token);
        EXPECT_EQ(h.t3.sampler.stages, spec->t3.sampler.stages);
        EXPECT_EQ(h.t3.sampler.defaults.top_k, spec->t3.sampler.defaults.top_k);
        EXPECT_EQ(h.flow.cfm_steps, spec->flow.cfm_steps);
        EXPECT_EQ(h.flow.trim_last_token, spec->flow.trim_last_token);
        EXPECT_EQ(h.flow.trailing_silence_tokens, spec->flow.trailing_silence_tokens);
    }
    // What differs between the records, as the official loaders have it.
    EXPECT_TRUE(variant_spec(Variant::multilingual).flow.trim_last_token);
    EXPECT_FALSE(variant_spec(Variant::english).flow.trim_last_token);
    EXPECT_EQ(variant_spec(Variant::multilingual).t3.text_vocab, 2454);
    EXPECT_EQ(variant_spec(Variant::turbo).t3.n_layers, 24);
    EXPECT_EQ(variant_spec(Variant::nano).t3.n_layers, 12);
    EXPECT_EQ(variant_spec(Variant::turbo).flow.cfm_steps, 2);
    EXPECT_EQ(variant_spec(Variant::turbo).reference.loudness_lufs, -27.0);
    EXPECT_FALSE(variant_spec(Variant::english).reference.loudness_lufs.has_value());
    EXPECT_EQ(variant_spec(Variant::nano).t3.sampler.defaults.top_k, 1000);
}
