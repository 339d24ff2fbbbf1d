// needs: tiny-model tiny-turbo-model
// Prefills that do not compute every position at once, on the tiny Llama (CFG rows) and GPT-2
// (Turbo's long prompt prefix) models. Voice prefix reuse (t3/prefix_cache.h, T3Session::prefill with a
// KvPrefix): a prefill that takes the conditioning's keys/values from a prefix gives the logits of the
// whole prefill, then decoding goes on as from it (bit for bit, both attention paths) and sampled generation
// takes the same tokens; the cache computes a voice once, tells voices and KV types apart and drops the
// least recently used; a prefix is refused while heads are watched or when it leaves nothing to compute.
// A prefill in parts (T3Session::begin_prefill / prefill_part, as the T3 batch interleaves a newcomer's
// with its steps), with or without a prefix, gives the whole prefill's logits and decoding, and is
// refused where it cannot serve.

#include "core/backend.h"
#include "models/chatterbox/pipeline_model.h"
#include "models/chatterbox/t3/embeddings.h"
#include "models/chatterbox/t3/generate.h"
#include "models/chatterbox/t3/prefix_cache.h"
#include "support/test_support.h"
#include "support/tiny_t3.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace chatterbox;
using namespace chatterbox::t3;

namespace {

using test::TinyT3;

// Another voice: another emotion, and another speaker for Turbo's sake (it has no emotion token).
CondEmbeddings other_voice(const TinyT3 &m) {
    Conditioning other = m.engine->builtin_voice(0.9f).t3;
    for (float &x : other.speaker_emb) x *= 0.5f;
    return encode_conditioning(m.model(), *m.backend, other);
}

class T3Prefix : public ::testing::TestWithParam<const char *> {
  protected:
    static TinyT3 &t3() {
        static TinyT3 llama(test::tiny_model_path()), gpt2(test::tiny_turbo_model_path());
        return std::string(GetParam()) == "llama" ? llama : gpt2;
    }
};

float max_difference(const std::vector<float> &a, const std::vector<float> &b) {
    EXPECT_EQ(a.size(), b.size());
    float worst = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    return worst;
}

RuntimeOptions exact_runtime() {
    RuntimeOptions runtime;
    runtime.attention = nn::AttentionPath::plain;
    runtime.kv_type = GGML_TYPE_F32;
    return runtime;
}

// The prefill of 20 text ids in the built-in voice, with the model's rows (CFG pair or one).
struct Prefill {
    int n_rows, length;
    std::vector<float> embeds;
    explicit Prefill(const TinyT3 &m) : n_rows(m.hp().variant == Variant::turbo ? 1 : 2) {
        const std::vector<int32_t> ids = m.text(20);
        length = prefill_length(m.hp(), m.cond, ids);
        embeds = prefill_embeddings(m.model(), m.cond, ids, n_rows);
    }
};

std::vector<float> token_embedding(const TinyT3 &m, int step) {
    return speech_token_embedding(m.model(), (step * 97) % 6000, step + 1);
}

// The exact path (plain attention, f32 cache) and the default one (flash attention, f16 cache). Both
// give the whole prefill's logits bit for bit: flash pads a prefill's queries to ggml's query tile
// on the CPU (t3/session.cpp).
const std::vector<RuntimeOptions> kBothPaths{exact_runtime(), RuntimeOptions{}};

KvPrefix voice_prefix(const TinyT3 &m, const RuntimeOptions &runtime) {
    T3Session voice(m.model(), *m.backend, runtime);
    voice.prefill(m.cond.values, 1, m.cond.length, 0);
    return voice.export_prefix(m.cond.length);
}

TEST_P(T3Prefix, APrefilledPrefixGivesTheLogitsOfTheWholePrefill) {
    TinyT3 &m = t3();
    const Prefill p(m);
    for (const RuntimeOptions &runtime : kBothPaths) {
        SCOPED_TRACE(attention_path_name(runtime.attention));
        T3Session whole(m.model(), *m.backend, runtime), prefixed(m.model(), *m.backend, runtime);
        const KvPrefix prefix = voice_prefix(m, runtime);
        EXPECT_EQ(prefix.length, m.cond.length);
        EXPECT_EQ(max_difference(prefixed.prefill(p.embeds, p.n_rows, p.length, 40, &prefix),
                                 whole.prefill(p.embeds, p.n_rows, p.length, 40)),
                  0.0f);
        for (int step = 0; step < 40; ++step)
            ASSERT_EQ(max_difference(prefixed.decode(token_embedding(m, step)), whole.decode(token_embedding(m, step))),
                      0.0f)
                << "step " << step;
    }
}

TEST_P(T3Prefix, APrefillInPartsGivesTheLogitsOfTheWholePrefill) {
    TinyT3 &m = t3();
    const Prefill p(m);
    for (const RuntimeOptions &runtime : kBothPaths) {
        T3Session whole(m.model(), *m.backend, runtime);
        const std::vector<float> whole_logits = whole.prefill(p.embeds, p.n_rows, p.length, 12);
        std::vector<std::vector<float>> whole_steps;
        for (int step = 0; step < 12; ++step) whole_steps.push_back(whole.decode(token_embedding(m, step)));
        const KvPrefix prefix = voice_prefix(m, runtime);
        for (const KvPrefix *from : {static_cast<const KvPrefix *>(nullptr), &prefix})
            for (int part : {1, 3, 8, p.length}) {
                SCOPED_TRACE(testing::Message() << attention_path_name(runtime.attention) << ", part " << part
                                                << (from ? ", with the prefix" : ""));
                T3Session parts(m.model(), *m.backend, runtime);
                parts.begin_prefill(p.n_rows, p.length, 12, from);
                const int first = from ? from->length : 0;
                std::vector<float> logits;
                int computed = 0;
                while (parts.prefilling()) {
                    EXPECT_TRUE(logits.empty()) << "logits only from the part that completes the prefill";
                    EXPECT_THROW(parts.decode(token_embedding(m, 0)), Error)
                        << "no decode before the prefill is complete";
                    logits = parts.prefill_part(p.embeds, part);
                    ++computed;
                }
                EXPECT_EQ(computed, (p.length - first + part - 1) / part);
                EXPECT_EQ(parts.length(), p.length);
                // A part of fewer than 4 rows takes ggml's row-by-row products (the tiny model's
                // weights are f32), which round apart from the block products of the whole prefill
                // (measured 3.6e-7).
                const float allowed = part * p.n_rows < 4 ? 1e-6f : 0.0f;
                ASSERT_LE(max_difference(logits, whole_logits), allowed);
                for (int step = 0; step < 12; ++step)
                    ASSERT_LE(max_difference(parts.decode(token_embedding(m, step)), whole_steps[size_t(step)]),
                              allowed)
                        << "step " << step;
            }
    }
}

TEST_P(T3Prefix, APrefillInPartsIsRefusedWhereItCannotServe) {
    TinyT3 &m = t3();
    const std::vector<int32_t> ids = m.text(5);
    const int length = prefill_length(m.hp(), m.cond, ids);
    const std::vector<float> embeds = prefill_embeddings(m.model(), m.cond, ids, 1);
    T3Session session(m.model(), *m.backend);
    EXPECT_THROW(session.prefill_part(embeds, 4), Error) << "no prefill begun";
    session.begin_prefill(1, length, 4);
    EXPECT_THROW(session.prefill_part(embeds, 0), Error);
    EXPECT_THROW(session.prefill_part(std::vector<float>(embeds.begin(), embeds.end() - 1), 4), Error);
    session.watch_heads({{0, 0}});
    session.begin_prefill(1, length, 4);
    EXPECT_THROW(session.prefill_part(embeds, length - 1), Error) << "watched heads need the whole prefill at once";
    EXPECT_FALSE(session.prefill_part(embeds, length).empty());
    EXPECT_THROW(session.prefill_part(embeds, 4), Error) << "the prefill is complete";
}

TEST_P(T3Prefix, GenerationFromACachedVoiceTakesTheSameTokens) {
    TinyT3 &m = t3();
    PrefixCache cache(4);
    SamplingParams params;
    params.max_new_tokens = 60;
    params.temperature = 1.5f;
    for (const RuntimeOptions &runtime : kBothPaths)
        for (uint64_t seed : {1, 2, 3}) {
            params.seed = seed;
            T3Session alone(m.model(), *m.backend, runtime), cached(m.model(), *m.backend, runtime);
            const std::shared_ptr<const KvPrefix> prefix = cache.get(cached, m.cond);
            EXPECT_EQ(generate(cached, m.cond, m.text(15), params, {}, prefix.get()).tokens,
                      generate(alone, m.cond, m.text(15), params).tokens)
                << "seed " << seed << ", " << attention_path_name(runtime.attention);
        }
    EXPECT_EQ(cache.misses(), 2u); // the voice once per KV type
    EXPECT_EQ(cache.hits(), 4u);
}

TEST_P(T3Prefix, TheCacheTellsVoicesAndTypesApartAndDropsTheLeastRecentlyUsed) {
    TinyT3 &m = t3();
    PrefixCache cache(2);
    RuntimeOptions f32;
    f32.kv_type = GGML_TYPE_F32;
    T3Session f16_session(m.model(), *m.backend), f32_session(m.model(), *m.backend, f32);
    const auto first = cache.get(f16_session, m.cond);
    EXPECT_EQ(cache.get(f16_session, m.cond), first); // a hit: the same entry
    const auto other = cache.get(f16_session, other_voice(m));
    EXPECT_NE(other, first);
    EXPECT_NE(other->k[0], first->k[0]) << "another voice gives other keys";
    const auto as_f32 = cache.get(f32_session, m.cond); // the f16 entry of cond is now the least recent
    EXPECT_EQ(as_f32->type, GGML_TYPE_F32);
    EXPECT_EQ(cache.entries(), 2u);
    EXPECT_EQ(cache.misses(), 3u);
    EXPECT_NE(cache.get(f16_session, m.cond), first) << "dropped, so computed again";
    EXPECT_EQ(cache.misses(), 4u);
    EXPECT_EQ(cache.hits(), 1u);
}

TEST_P(T3Prefix, APrefixIsRefusedWhereItCannotServe) {
    TinyT3 &m = t3();
    T3Session voice(m.model(), *m.backend);
    voice.prefill(m.cond.values, 1, m.cond.length, 0);
    const KvPrefix prefix = voice.export_prefix(m.cond.length);
    EXPECT_THROW(voice.export_prefix(m.cond.length + 1), Error);
    T3Session session(m.model(), *m.backend);
    EXPECT_THROW(session.prefill(m.cond.values, 1, m.cond.length, 0, &prefix), Error) << "nothing left to compute";
    const std::vector<int32_t> ids = m.text(5);
    const int length = prefill_length(m.hp(), m.cond, ids);
    const std::vector<float> embeds = prefill_embeddings(m.model(), m.cond, ids, 1);
    RuntimeOptions f32;
    f32.kv_type = GGML_TYPE_F32;
    T3Session other_type(m.model(), *m.backend, f32);
    EXPECT_THROW(other_type.prefill(embeds, 1, length, 4, &prefix), Error);
    session.watch_heads({{0, 0}});
    EXPECT_THROW(session.prefill(embeds, 1, length, 4, &prefix), Error);
}

INSTANTIATE_TEST_SUITE_P(Backbones, T3Prefix, ::testing::Values("llama", "gpt2"));

} // namespace
