// The speech guards (speech_guards.h) on constructed token streams and attention maps: each rule
// fires at the step its definition names, and not one step earlier.

#include "core/error.h"
#include "models/chatterbox/t3/hparams.h"
#include "models/chatterbox/t3/sampler.h"
#include "models/chatterbox/t3/speech_guards.h"
#include "models/chatterbox/variant_spec.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

using namespace chatterbox;
using namespace chatterbox::t3;

namespace {

constexpr int32_t kSilence = 4299;

GuardOptions stops_on() {
    GuardOptions o;
    o.stops = true;
    return o;
}

// Feeds tokens until a stop rule fires: the 1-based count of the token that ended the piece, 0 if none.
int tokens_until_stop(SpeechGuards &guards, const std::vector<int32_t> &tokens, PieceEnd *why = nullptr,
                      std::optional<bool> covered = std::nullopt) {
    for (size_t i = 0; i < tokens.size(); ++i)
        if (const std::optional<PieceEnd> end = guards.after_token(tokens[i], covered)) {
            if (why) *why = *end;
            return int(i) + 1;
        }
    return 0;
}

std::vector<int32_t> run_of(int32_t token, int n) { return std::vector<int32_t>(size_t(n), token); }

std::vector<int32_t> distinct_speech(int n) { // no two neighbours equal, no silence
    std::vector<int32_t> t;
    for (int i = 0; i < n; ++i) t.push_back(100 + i % 7);
    return t;
}

std::vector<int32_t> join(std::vector<int32_t> a, const std::vector<int32_t> &b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

} // namespace

TEST(LengthBound, FloorPlusRatePerTextToken) {
    const GuardHParams en = variant_spec(Variant::english).t3.guards;
    EXPECT_EQ(length_bound(en, 10), en.length_floor + int(en.speech_per_text_token * 10));
    EXPECT_EQ(length_bound(en, 10, 2.5f), en.length_floor + 25);
    EXPECT_EQ(length_bound(en, 0), en.length_floor);
    // Every variant has its rate as data; the sub-word variants grant more per token.
    EXPECT_GT(variant_spec(Variant::multilingual).t3.guards.speech_per_text_token, en.speech_per_text_token);
    EXPECT_GT(variant_spec(Variant::turbo).t3.guards.speech_per_text_token, en.speech_per_text_token);
    EXPECT_TRUE(variant_spec(Variant::turbo).t3.guards.aligned_heads.empty());
    ASSERT_EQ(en.aligned_heads.size(), 3u);
    EXPECT_EQ(en.aligned_heads[0].layer, 12);
    EXPECT_EQ(en.aligned_heads[0].head, 15);
    test::expect_error([&] { length_bound(en, 3, -1.0f); }, "expected >= 0");
}

TEST(SpeechGuards, LengthBoundIsTheStepLimitOnlyWhenLower) {
    const HParams hp = HParams::english();
    GuardOptions o;
    o.length_bound = true;
    SpeechGuards bounded(hp, 4, o, 1000);
    EXPECT_EQ(bounded.step_limit(), length_bound(hp.guards, 4));
    EXPECT_TRUE(bounded.bound_by_text());
    SpeechGuards unbounded(hp, 4, o, 60);
    EXPECT_EQ(unbounded.step_limit(), 60);
    EXPECT_FALSE(unbounded.bound_by_text());
    SpeechGuards off(hp, 4, GuardOptions{}, 1000);
    EXPECT_EQ(off.step_limit(), 1000);
    EXPECT_FALSE(off.bound_by_text());
}

TEST(SpeechGuards, TokenRepeatFiresAtTheThresholdToken) {
    const HParams hp = HParams::english();
    const int n = hp.guards.max_token_repeat;
    SpeechGuards guards(hp, 100, stops_on(), 1000);
    PieceEnd why{};
    // A run one short of the threshold, broken, then a full run: the stop comes on its last token.
    const std::vector<int32_t> tokens = join(join(run_of(7, n - 1), {8}), run_of(7, n + 5));
    EXPECT_EQ(tokens_until_stop(guards, tokens, &why), n - 1 + 1 + n);
    EXPECT_EQ(why, PieceEnd::token_repeat);
}

TEST(SpeechGuards, SilenceTailFiresOnlyAfterTheTextIsCovered) {
    const HParams hp = HParams::english();
    const int tail = hp.guards.max_tail_silence;
    ASSERT_LT(tail, hp.guards.max_token_repeat);
    // 10 text tokens count as covered after 10 speech tokens (1 per text token).
    SpeechGuards guards(hp, 10, stops_on(), 1000);
    PieceEnd why{};
    EXPECT_EQ(tokens_until_stop(guards, join(distinct_speech(12), run_of(kSilence, 100)), &why), 12 + tail);
    EXPECT_EQ(why, PieceEnd::silence_tail);

    // Silence from the first token: the run counts once the text is covered, so it ends at `tail`
    // silence tokens only if they reach past the covered point.
    SpeechGuards early(hp, 40, stops_on(), 1000);
    EXPECT_EQ(tokens_until_stop(early, run_of(kSilence, 100), &why), 40);
    EXPECT_EQ(why, PieceEnd::silence_tail);

    // The analyzer's verdict replaces the count: not covered, silence runs on until the repeat rule.
    SpeechGuards uncovered(hp, 1, stops_on(), 1000);
    EXPECT_EQ(tokens_until_stop(uncovered, run_of(kSilence, 100), &why, false), hp.guards.max_token_repeat);
    EXPECT_EQ(why, PieceEnd::token_repeat);
    SpeechGuards covered(hp, 1000, stops_on(), 1000);
    EXPECT_EQ(tokens_until_stop(covered, run_of(kSilence, 100), &why, true), tail);
}

TEST(SpeechGuards, StopsOffNeverFire) {
    const HParams hp = HParams::english();
    SpeechGuards guards(hp, 1, GuardOptions{}, 1000);
    EXPECT_EQ(tokens_until_stop(guards, run_of(kSilence, 500)), 0);
}

TEST(TailSilenceTrimmer, KeepsInnerSilenceAndANaturalPauseAtTheEnd) {
    TailSilenceTrimmer trim(kSilence, 3);
    std::vector<int32_t> out;
    auto push = [&](int32_t t) {
        const std::vector<int32_t> ready = trim.push(t);
        out.insert(out.end(), ready.begin(), ready.end());
        return ready.size();
    };
    EXPECT_EQ(push(1), 1u);
    EXPECT_EQ(push(kSilence), 0u); // held while it runs
    EXPECT_EQ(push(kSilence), 0u);
    EXPECT_EQ(push(2), 3u); // a speech token releases the inner silence
    for (int i = 0; i < 10; ++i) push(kSilence);
    const std::vector<int32_t> rest = trim.finish();
    out.insert(out.end(), rest.begin(), rest.end());
    EXPECT_EQ(out, (std::vector<int32_t>{1, kSilence, kSilence, 2, kSilence, kSilence, kSilence}));
    EXPECT_EQ(trim.dropped(), 7);

    TailSilenceTrimmer keep_all(kSilence, -1);
    EXPECT_EQ(keep_all.push(kSilence).size(), 1u);
    EXPECT_TRUE(keep_all.finish().empty());
}

// ---- the alignment analyzer on constructed attention maps ----

namespace {

// A text of S = 10 tokens at key positions [3, 13) of 16 keys.
constexpr int kBegin = 3, kS = 10, kKeys = 16, kEos = 6562, kVocab = 8194;

struct AnalyzerRun {
    AlignmentAnalyzer analyzer{kBegin, kBegin + kS, kEos};
    int32_t next_last = 1000; // distinct last tokens: no token repetition unless asked
    std::vector<float> logits;

    // One step whose every row (2 at step 0) puts the given mass on text columns; returns whether EOS was forced.
    bool step(const std::vector<std::pair<int, float>> &mass, int32_t last_token = -1) {
        const int rows = analyzer.frames() == 0 ? 2 : 1;
        std::vector<float> map(size_t(rows) * kKeys, 0.0f);
        for (int r = 0; r < rows; ++r)
            for (const auto &[column, value] : mass) map[size_t(r) * kKeys + size_t(kBegin + column)] = value;
        logits.assign(kVocab, 0.5f);
        return analyzer.step(map.data(), rows, kKeys, last_token >= 0 ? last_token : next_last++, logits);
    }
    bool eos_suppressed() const { return logits[kEos] == AlignmentAnalyzer::kSuppressed && logits[0] == 0.5f; }
    bool eos_forced() const {
        return logits[kEos] == AlignmentAnalyzer::kForced && logits[0] == AlignmentAnalyzer::kSuppressed;
    }
};

// Attention walking the text one column per step up to `column` (steps 0 .. column).
void walk_to(AnalyzerRun &run, int column) {
    for (int c = 0; c <= column; ++c) ASSERT_FALSE(run.step({{c, 1.0f}}));
}

} // namespace

TEST(AlignmentAnalyzer, StepZeroTakesTheBosRowsAndMasksLaterColumns) {
    AnalyzerRun run;
    EXPECT_FALSE(run.step({{0, 0.25f}, {1, 1.0f}})); // column 1 is just past the monotonic mask at step 0
    EXPECT_EQ(run.analyzer.frames(), 2);
    EXPECT_EQ(run.analyzer.text_position(), 0);
    EXPECT_TRUE(run.eos_suppressed()); // position 0 < S - 3 and S > 5
    EXPECT_FALSE(run.analyzer.complete());
    EXPECT_FALSE(run.step({{1, 0.5f}, {2, 1.0f}})); // step 1 sees columns 0 and 1, not 2
    EXPECT_EQ(run.analyzer.frames(), 3);
    EXPECT_EQ(run.analyzer.text_position(), 1);
}

TEST(AlignmentAnalyzer, CompleteLatchesAtSMinus3AndEosIsFreeFromThere) {
    AnalyzerRun run;
    walk_to(run, kS - 4); // position 6
    EXPECT_FALSE(run.analyzer.complete());
    EXPECT_TRUE(run.eos_suppressed());
    EXPECT_FALSE(run.step({{kS - 3, 1.0f}})); // position 7 = S - 3
    EXPECT_TRUE(run.analyzer.complete());
    EXPECT_EQ(run.logits[kEos], 0.5f); // neither suppressed nor forced
}

TEST(AlignmentAnalyzer, DiscontinuityKeepsThePosition) {
    AnalyzerRun run;
    walk_to(run, 1);
    for (int i = 0; i < 6; ++i) run.step({{1, 1.0f}}); // steps 2 .. 7
    run.step({{8, 1.0f}});                             // step 8: 8 - 1 = 7 is too far
    EXPECT_TRUE(run.analyzer.discontinuity());
    EXPECT_EQ(run.analyzer.text_position(), 1);
    run.step({{7, 1.0f}}); // 7 - 1 = 6: accepted
    EXPECT_FALSE(run.analyzer.discontinuity());
    EXPECT_EQ(run.analyzer.text_position(), 7);
}

TEST(AlignmentAnalyzer, LongTailForcesEosWhenTheLastColumnsHoldFiveFrames) {
    AnalyzerRun run;
    walk_to(run, kS - 3); // complete at step 7; its own rows do not count
    ASSERT_TRUE(run.analyzer.complete());
    EXPECT_FALSE(run.step({{kS - 2, 1.0f}})); // column 8: 1 frame
    for (int frame = 1; frame <= 4; ++frame) {
        EXPECT_FALSE(run.step({{kS - 1, 1.0f}})) << frame; // column 9: 1 .. 4 frames
        EXPECT_FALSE(run.analyzer.long_tail());
    }
    EXPECT_TRUE(run.step({{kS - 1, 1.0f}})); // the 5th frame on column 9
    EXPECT_TRUE(run.analyzer.long_tail());
    EXPECT_TRUE(run.eos_forced());
}

TEST(AlignmentAnalyzer, AlignmentRepetitionNeedsMoreThanFiveFramesOfEarlierText) {
    AnalyzerRun run;
    walk_to(run, kS - 3);
    // 0.625 on column 0 per frame: 8 frames are exactly 5 (not more), the 9th exceeds it.
    for (int frame = 1; frame <= 8; ++frame) {
        EXPECT_FALSE(run.step({{0, 0.625f}})) << frame;
        EXPECT_TRUE(run.analyzer.discontinuity()); // 0 is far behind: the position stays
    }
    EXPECT_TRUE(run.step({{0, 0.625f}}));
    EXPECT_TRUE(run.analyzer.alignment_repetition());
    EXPECT_FALSE(run.analyzer.long_tail());
    EXPECT_TRUE(run.eos_forced());
}

TEST(AlignmentAnalyzer, TokenRepetitionIsTwoEqualLastTokensOfThreeRecorded) {
    AnalyzerRun run;
    EXPECT_FALSE(run.step({{0, 1.0f}}, 6561)); // the BOS
    EXPECT_FALSE(run.step({{1, 1.0f}}, 42));
    EXPECT_TRUE(run.step({{2, 1.0f}}, 42));
    EXPECT_TRUE(run.analyzer.token_repetition());
    EXPECT_TRUE(run.eos_forced());
    AnalyzerRun two;
    EXPECT_FALSE(two.step({{0, 1.0f}}, 42));
    EXPECT_FALSE(two.step({{1, 1.0f}}, 42)); // only 2 recorded
}

TEST(AlignmentAnalyzer, ShortTextIsNeverSuppressed) {
    AlignmentAnalyzer analyzer(3, 6, kEos); // S = 3: complete at once
    std::vector<float> map(2 * 8, 0.0f), logits(kVocab, 0.5f);
    map[3] = map[8 + 3] = 1.0f;
    EXPECT_FALSE(analyzer.step(map.data(), 2, 8, 6561, logits));
    EXPECT_TRUE(analyzer.complete());
    EXPECT_EQ(logits[kEos], 0.5f);
    test::expect_error([&] { analyzer.step(map.data(), 1, 5, 1, logits); }, "do not reach the text end");
}

TEST(SamplingParams, GuardedTurnsOnTheBoundAndStopsOnly) {
    const SamplingParams plain, guarded = SamplingParams::guarded();
    EXPECT_FALSE(plain.guards.length_bound || plain.guards.stops || plain.guards.alignment);
    EXPECT_TRUE(guarded.guards.length_bound && guarded.guards.stops);
    EXPECT_FALSE(guarded.guards.alignment);
    SamplingParams bad = guarded;
    bad.guards.speech_per_text_token = -2;
    test::expect_error([&] { bad.validate(4096); }, "speech tokens per text token");
}

TEST(PieceEnd, EveryEndHasItsName) {
    const std::vector<std::pair<PieceEnd, std::string>> names = {{PieceEnd::eos, "eos"},
                                                                 {PieceEnd::max_tokens, "max_tokens"},
                                                                 {PieceEnd::length_bound, "length_bound"},
                                                                 {PieceEnd::token_repeat, "token_repeat"},
                                                                 {PieceEnd::silence_tail, "silence_tail"},
                                                                 {PieceEnd::alignment, "alignment"},
                                                                 {PieceEnd::stopped, "stopped"}};
    for (const auto &[end, name] : names) EXPECT_EQ(piece_end_name(end), name);
}
