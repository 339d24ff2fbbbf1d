// needs: tiny-model tiny-turbo-model
// Voice prefix reuse (t3/prefix_cache.h, Session::prefill with a KvPrefix), on the tiny Llama (CFG
// rows) and GPT-2 (Turbo's long prompt prefix) models: a prefill that takes the conditioning's
// keys/values from a prefix gives the logits of the whole prefill, then decoding goes on as from it
// (bit for bit on the exact path) and sampled generation takes the same tokens; the cache computes a voice once, tells
// voices and KV types apart and drops the least recently used; a prefix is refused while heads are watched or when it
// leaves nothing to compute.

#include "core/backend.h"
#include "models/chatterbox/engine.h"
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

// The exact path (plain attention, f32 cache) gives the whole prefill's logits bit for bit; flash
// attention with an f16 cache rounds apart with the number of queries it takes at once (measured 3.4e-4).
float tolerance(nn::AttentionPath attention) { return attention == nn::AttentionPath::plain ? 0.0f : 1e-3f; }

RuntimeOptions exact_runtime() {
    RuntimeOptions runtime;
    runtime.attention = nn::AttentionPath::plain;
    runtime.kv_type = GGML_TYPE_F32;
    return runtime;
}

TEST_P(T3Prefix, APrefilledPrefixGivesTheLogitsOfTheWholePrefill) {
    TinyT3 &m = t3();
    const int n_rows = m.hp().variant == Variant::turbo ? 1 : 2;
    const std::vector<int32_t> ids = m.text(20);
    const int length = prefill_length(m.hp(), m.cond, ids);
    const std::vector<float> embeds = prefill_embeddings(m.model(), m.cond, ids, n_rows);
    for (const auto &[attention, kv_type] :
         {std::pair{nn::AttentionPath::plain, GGML_TYPE_F32}, std::pair{nn::AttentionPath::flash, GGML_TYPE_F16}}) {
        RuntimeOptions runtime;
        runtime.attention = attention;
        runtime.kv_type = kv_type;
        Session whole(m.model(), *m.backend, runtime), prefixed(m.model(), *m.backend, runtime);
        Session voice(m.model(), *m.backend, runtime);
        voice.prefill(m.cond.values, 1, m.cond.length, 0);
        const KvPrefix prefix = voice.export_prefix(m.cond.length);
        EXPECT_EQ(prefix.length, m.cond.length);
        EXPECT_LE(max_difference(prefixed.prefill(embeds, n_rows, length, 40, &prefix),
                                 whole.prefill(embeds, n_rows, length, 40)),
                  tolerance(attention));
        for (int step = 0; step < 40; ++step) {
            const std::vector<float> next = speech_token_embedding(m.model(), (step * 97) % 6000, step + 1);
            ASSERT_LE(max_difference(prefixed.decode(next), whole.decode(next)), tolerance(attention))
                << "step " << step;
        }
    }
}

TEST_P(T3Prefix, GenerationFromACachedVoiceTakesTheSameTokens) {
    TinyT3 &m = t3();
    PrefixCache cache(4);
    SamplingParams params;
    params.max_new_tokens = 60;
    params.temperature = 1.5f;
    for (uint64_t seed : {1, 2, 3}) {
        params.seed = seed;
        Session alone(m.model(), *m.backend, exact_runtime()), cached(m.model(), *m.backend, exact_runtime());
        const std::shared_ptr<const KvPrefix> prefix = cache.get(cached, m.cond);
        EXPECT_EQ(generate(cached, m.cond, m.text(15), params, {}, prefix.get()).tokens,
                  generate(alone, m.cond, m.text(15), params).tokens)
            << "seed " << seed;
    }
    EXPECT_EQ(cache.misses(), 1u);
    EXPECT_EQ(cache.hits(), 2u);
}

TEST_P(T3Prefix, TheCacheTellsVoicesAndTypesApartAndDropsTheLeastRecentlyUsed) {
    TinyT3 &m = t3();
    PrefixCache cache(2);
    RuntimeOptions f32;
    f32.kv_type = GGML_TYPE_F32;
    Session f16_session(m.model(), *m.backend), f32_session(m.model(), *m.backend, f32);
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
    Session voice(m.model(), *m.backend);
    voice.prefill(m.cond.values, 1, m.cond.length, 0);
    const KvPrefix prefix = voice.export_prefix(m.cond.length);
    EXPECT_THROW(voice.export_prefix(m.cond.length + 1), Error);
    Session session(m.model(), *m.backend);
    EXPECT_THROW(session.prefill(m.cond.values, 1, m.cond.length, 0, &prefix), Error) << "nothing left to compute";
    const std::vector<int32_t> ids = m.text(5);
    const int length = prefill_length(m.hp(), m.cond, ids);
    const std::vector<float> embeds = prefill_embeddings(m.model(), m.cond, ids, 1);
    RuntimeOptions f32;
    f32.kv_type = GGML_TYPE_F32;
    Session other_type(m.model(), *m.backend, f32);
    EXPECT_THROW(other_type.prefill(embeds, 1, length, 4, &prefix), Error);
    session.watch_heads({{0, 0}});
    EXPECT_THROW(session.prefill(embeds, 1, length, 4, &prefix), Error);
}

INSTANTIATE_TEST_SUITE_P(Backbones, T3Prefix, ::testing::Values("llama", "gpt2"));

} // namespace
