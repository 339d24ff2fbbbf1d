// The GPT-2 T3 of Turbo and Nano through the shared session / generation code, on weights drawn by
// the synthetic rule at scaled sizes (synthetic::scaled_manifest of Turbo's checkpoint): a
// Nano-sized T3 (GPT-2 small, 12 x 768) loads and generates; a tiny GPT-2 T3 gives the same logits
// through step-by-step decoding as through one prefill of the whole sequence (positions, cache
// slots and masks agree); the hyper-parameters of both variants are valid data; and the speech
// guards' length bound and repeat stop apply to it through its GuardHParams.

#include "core/backend.h"
#include "core/gguf_file.h"
#include "core/weight_store.h"
#include "models/chatterbox/model_files.h"
#include "models/chatterbox/synthetic_weights.h"
#include "models/chatterbox/t3/embeddings.h"
#include "models/chatterbox/t3/generate.h"
#include "models/chatterbox/variant_spec.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <memory>

using namespace chatterbox;
using namespace chatterbox::t3;

namespace {

// The T3 checkpoint of a GPT-2 T3 with hp's sizes, under "t3.", filled by the WEIGHTS.md rule. The
// tensors the model never reads (tfmr.wte, text_head: 2 x 50276 rows) are left out to save memory.
std::unique_ptr<WeightStore> gpt2_checkpoint(const HParams &hp) {
    ModelHparams model = ModelHparams::for_variant(Variant::english);
    model.t3 = hp;
    auto store = std::make_unique<WeightStore>();
    for (const synthetic::ManifestCheckpoint &checkpoint : synthetic::scaled_manifest(model)) {
        if (checkpoint.file != "t3_turbo_v1.safetensors") continue;
        for (const synthetic::ManifestTensor &t : checkpoint.tensors) {
            if (t.name.rfind("tfmr.wte.", 0) == 0 || t.name.rfind("text_head.", 0) == 0) continue;
            HostTensor tensor("t3." + t.name, t.type, t.shape);
            synthetic::fill_tensor(t.name, t.shape, synthetic::kDefaultSeed, tensor.bytes.data());
            store->add_tensor(std::move(tensor));
        }
    }
    return store;
}

HParams tiny_gpt2() {
    HParams hp = variant_spec(Variant::nano).t3;
    hp.n_layers = 2;
    hp.hidden = 64;
    hp.n_heads = 4;
    hp.head_dim = 16;
    hp.ffn = 256;
    return hp;
}

Conditioning voice(const HParams &hp, int prompt_tokens) {
    Conditioning cond;
    cond.speaker_emb = test::random_values(size_t(hp.speaker_embed), 7, -0.1f, 0.1f);
    for (int i = 0; i < prompt_tokens; ++i) cond.prompt_tokens.push_back((i * 389) % hp.speech_token_limit);
    return cond;
}

const std::vector<int32_t> kText = {5812, 11, 326, 338, 20105, 0, 220, 50258}; // GPT-2 ids of the golden case

RuntimeOptions exact_path() {
    RuntimeOptions o;
    o.attention = nn::AttentionPath::plain;
    o.kv_type = GGML_TYPE_F32;
    o.prefill_bucket = 8;
    o.decode_bucket = 8;
    return o;
}

} // namespace

TEST(T3Gpt2, VariantHyperParametersAreValid) {
    for (const Variant variant : {Variant::turbo, Variant::nano}) {
        const HParams hp = variant_spec(variant).t3;
        EXPECT_NO_THROW(hp.validate()) << variant;
        EXPECT_EQ(hp.backbone_kind(), Backbone::gpt2);
        EXPECT_EQ(hp.cond_length(375), 376) << "speaker + the prompt tokens, no perceiver, no emotion";
        EXPECT_EQ(hp.cond_length(0), 1);
        EXPECT_EQ(variant_spec(variant).t3.sampler.defaults.top_k, 1000);
    }
    const HParams nano = variant_spec(Variant::nano).t3;
    EXPECT_EQ(nano.n_layers, 12);
    EXPECT_EQ(nano.hidden, 768);
    EXPECT_EQ(nano.n_heads, 12);
    EXPECT_EQ(nano.ffn, 3072);
    HParams bad = nano;
    bad.positions = 0;
    test::expect_error([&] { bad.validate(); }, "chatterbox.t3.positions");
    bad = nano;
    bad.backbone = 7;
    test::expect_error([&] { bad.validate(); }, "chatterbox.t3.backbone");
}

TEST(T3Gpt2, HyperParametersRoundTripThroughMetadata) {
    const std::string path = test::temp_dir("t3-gpt2") + "/t3.gguf";
    for (const Variant variant : {Variant::turbo, Variant::nano}) {
        const HParams hp = variant_spec(variant).t3;
        GgufWriter writer;
        write_fields(HParams::fields(), hp, writer);
        writer.write(path);
        HParams got = read_fields(HParams::fields(), GgufFile(path));
        got.variant = variant;
        EXPECT_NO_THROW(got.validate());
        EXPECT_EQ(got.backbone_kind(), Backbone::gpt2);
        EXPECT_EQ(got.positions, hp.positions);
        EXPECT_EQ(got.n_layers, hp.n_layers);
        EXPECT_EQ(got.hidden, hp.hidden);
        EXPECT_EQ(got.framed_text, 0);
        EXPECT_EQ(got.bos_tokens, 1);
        EXPECT_EQ(got.perceiver_queries, 0);
        EXPECT_EQ(got.emotion_token, 0);
        EXPECT_EQ(got.text_positions, 0);
        EXPECT_EQ(got.speech_cond_prompt_len, 375);
    }
}

TEST(T3Gpt2, NanoSizedModelLoadsAndGenerates) {
    const std::unique_ptr<WeightStore> store = gpt2_checkpoint(variant_spec(Variant::nano).t3);
    const HParams hp = HParams::from_checkpoint(*store, "t3.", variant_spec(Variant::nano).t3);
    EXPECT_EQ(hp.n_layers, 12);
    EXPECT_EQ(hp.hidden, 768);
    EXPECT_EQ(hp.ffn, 3072);
    EXPECT_EQ(hp.positions, 8196);
    test::expect_error([&] { HParams::from_checkpoint(*store, "t3.", variant_spec(Variant::english).t3); },
                       "GPT-2 backbone");

    Backend backend(BackendOptions{"cpu", 2});
    const T3Model model(*store, backend, hp);
    T3Session session(model, backend);
    SamplingParams params = variant_spec(Variant::nano).t3.sampler.defaults;
    params.max_new_tokens = 6;
    params.ignore_eos = true; // random weights may end at once
    params.seed = 3;
    const CondEmbeddings cond = encode_conditioning(model, backend, voice(hp, 20));
    EXPECT_EQ(cond.length, 21);
    const GenerationResult first = generate(session, cond, kText, params);
    ASSERT_EQ(first.tokens.size(), 6u);
    for (int32_t token : first.tokens) {
        EXPECT_GE(token, 0);
        EXPECT_LT(token, hp.speech_vocab);
        EXPECT_NE(token, hp.stop_speech_token);
    }
    EXPECT_EQ(session.n_rows(), 1);
    EXPECT_EQ(generate(session, cond, kText, params).tokens, first.tokens); // same seed, same tokens
}

TEST(T3Gpt2, DecodingStepByStepEqualsOnePrefill) {
    const HParams hp = tiny_gpt2();
    const std::unique_ptr<WeightStore> store = gpt2_checkpoint(hp);
    Backend backend(BackendOptions{"cpu", 2});
    const T3Model model(*store, backend, hp); // 4 heads: not a head count any checkpoint shape gives
    const CondEmbeddings cond = encode_conditioning(model, backend, voice(hp, 5));

    // Generation teacher-forced through prefill + decode steps.
    const std::vector<int32_t> forced = {17, 4000, 17, 6561, 250};
    SamplingParams params = variant_spec(Variant::nano).t3.sampler.defaults;
    GenerationHooks hooks;
    hooks.forced_tokens = forced;
    std::vector<std::vector<float>> stepped;
    hooks.on_step = [&](const StepRecord &step) {
        stepped.push_back(*step.raw);
        return true;
    };
    T3Session decoding(model, backend, exact_path());
    ASSERT_EQ(generate(decoding, cond, kText, params, hooks).tokens, forced);
    ASSERT_EQ(stepped.size(), forced.size());

    // Step k's logits again from one prefill of the prefix and the first k forced tokens.
    const std::vector<float> prefix = prefill_embeddings(model, cond, kText, 1);
    const int prefix_length = prefill_length(model.hparams(), cond, kText);
    const size_t hidden = size_t(hp.hidden);
    for (size_t k = 0; k < forced.size(); ++k) {
        std::vector<float> embeds = prefix;
        for (size_t j = 0; j < k; ++j) {
            const std::vector<float> e = speech_token_embedding(model, forced[j], int(j) + 1);
            embeds.insert(embeds.end(), e.begin(), e.end());
        }
        T3Session whole(model, backend, exact_path());
        const std::vector<float> logits = whole.prefill(embeds, 1, prefix_length + int(k), 0);
        ASSERT_EQ(embeds.size(), size_t(prefix_length + int(k)) * hidden);
        const test::Diff d = test::compare(stepped[k], logits);
        EXPECT_LE(d.max_abs, 1e-4) << "step " << k;
    }
}

// The length bound and stop rules reach the GPT-2 T3 through its hyper-parameters (Turbo/Nano's
// rate per BPE token); the alignment analyzer does not exist for it.
TEST(T3Gpt2, SpeechGuardsApplyThroughTheVariantsData) {
    const HParams hp = tiny_gpt2();
    const std::unique_ptr<WeightStore> store = gpt2_checkpoint(hp);
    Backend backend(BackendOptions{"cpu", 2});
    const T3Model model(*store, backend, hp);
    T3Session session(model, backend, exact_path());
    const CondEmbeddings cond = encode_conditioning(model, backend, voice(hp, 10));
    SamplingParams params = SamplingParams::guarded();
    params.max_new_tokens = 400;
    GenerationHooks hooks; // distinct speech units, never EOS
    for (int i = 0; i < params.max_new_tokens; ++i) hooks.forced_tokens.push_back((i * 97) % 4000);
    const GenerationResult bounded = generate(session, cond, kText, params, hooks);
    const int bound = length_bound(hp.guards, int(kText.size())); // Nano's text is not framed
    EXPECT_EQ(bound, hp.guards.length_floor + int(hp.guards.speech_per_text_token) * int(kText.size()));
    EXPECT_EQ(int(bounded.tokens.size()), bound);
    EXPECT_EQ(bounded.end, PieceEnd::length_bound);

    hooks.forced_tokens.assign(size_t(params.max_new_tokens), 123); // one unit over and over
    const GenerationResult repeated = generate(session, cond, kText, params, hooks);
    EXPECT_EQ(int(repeated.tokens.size()), hp.guards.max_token_repeat);
    EXPECT_EQ(repeated.end, PieceEnd::token_repeat);

    params.guards.alignment = true;
    test::expect_error([&] { generate(session, cond, kText, params, hooks); }, "no alignment analyzer");
}
