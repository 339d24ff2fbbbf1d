// needs: tiny-model
// The whole engine through the public C API on the tiny synthetic model: text to audio,
// determinism, voice cloning and saved voices, voice conversion, long text, streaming, cancelling
// and the error paths. Synthetic weights give noise-like speech, so the checks are about shape,
// range, lengths and equalities, not sound. Short requests keep the run small.

#include "audio/audio_file.h"
#include "chatterbox/chatterbox.h"
#include "chatterbox/chatterbox.hpp"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace chatterbox;

namespace {

constexpr int kSampleRate = 24000;
constexpr size_t kSamplesPerToken = 960; // 2 mel frames x 480 samples

std::vector<float> samples_of(const chatterbox_audio &audio) {
    return std::vector<float>(audio.samples, audio.samples + audio.n_samples);
}

void expect_valid_audio(const chatterbox_audio &audio) {
    ASSERT_GT(audio.n_samples, 0u);
    EXPECT_EQ(audio.sample_rate, kSampleRate);
    for (size_t i = 0; i < audio.n_samples; ++i) {
        ASSERT_TRUE(std::isfinite(audio.samples[i])) << "sample " << i;
        ASSERT_LE(std::fabs(audio.samples[i]), 1.0f) << "sample " << i;
    }
    EXPECT_GT(test::max_magnitude(samples_of(audio)), 1e-3) << "silent output";
}

class Pipeline : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        chatterbox_engine_params ep = chatterbox_engine_default_params();
        const std::string model = test::tiny_model_path(), device = test::test_device();
        ep.model_path = model.c_str();
        ep.backend = device.c_str(); // the CPU, or the GPU of the gpu-labelled entry
        ASSERT_EQ(chatterbox_engine_load(&ep, &engine), CHATTERBOX_OK) << chatterbox_last_error();
        // Most tests use the first 3 s of the reference: the flow's cost grows with the voice prompt.
        audio::AudioBuffer reference = audio::read_audio(test::golden_path("ref_voice.wav"));
        reference.samples.resize(size_t(3 * reference.sample_rate));
        const std::string path = (fs::path(test::temp_dir("pipeline_voice")) / "short_ref.wav").string();
        audio::write_audio(path, reference.samples, reference.sample_rate, {audio::WavEncoding::float32});
        ASSERT_EQ(chatterbox_voice_from_audio_file(engine, path.c_str(), 0.5f, &voice), CHATTERBOX_OK)
            << chatterbox_last_error();
    }
    static void TearDownTestSuite() {
        chatterbox_voice_free(voice);
        chatterbox_engine_free(engine);
    }

    static chatterbox_synthesis_params short_params(uint64_t seed, int max_new_tokens = 20) {
        chatterbox_synthesis_params p = chatterbox_synthesis_default_params();
        p.seed = seed;
        p.max_new_tokens = max_new_tokens;
        return p;
    }

    // Synthesises and expects success.
    static std::vector<float> speak(const char *text, const chatterbox_voice *v, const chatterbox_synthesis_params &p,
                                    chatterbox_audio *keep = nullptr) {
        chatterbox_audio audio;
        EXPECT_EQ(chatterbox_synthesize(engine, text, v, &p, &audio), CHATTERBOX_OK) << chatterbox_last_error();
        std::vector<float> out = samples_of(audio);
        if (keep)
            *keep = audio;
        else
            chatterbox_audio_free(&audio);
        return out;
    }

    // "Hello there." with seed 7 in the reference voice, made once for the tests that compare with it.
    static const std::vector<float> &hello_audio() {
        if (hello.empty()) hello = speak("Hello there.", voice, short_params(7));
        return hello;
    }

    static chatterbox_engine *engine;
    static chatterbox_voice *voice;
    static std::vector<float> hello;
};

chatterbox_engine *Pipeline::engine = nullptr;
chatterbox_voice *Pipeline::voice = nullptr;
std::vector<float> Pipeline::hello;

TEST_F(Pipeline, TextToAudioHasTheLengthOfItsTokensAndDependsOnlyOnTheSeed) {
    const chatterbox_synthesis_params p = short_params(7);
    chatterbox_audio audio;
    const std::vector<float> first = speak("Hello there.", voice, p, &audio);
    hello = first;
    expect_valid_audio(audio);
    // One piece, the reference voice's prompt mel is 2 x its tokens: 960 samples per speech token.
    EXPECT_GT(audio.speech_tokens, 0);
    EXPECT_LE(audio.speech_tokens, p.max_new_tokens);
    EXPECT_EQ(audio.n_samples, size_t(audio.speech_tokens) * kSamplesPerToken);
    // trim_fade: the first 20 ms are zero.
    EXPECT_EQ(test::max_magnitude(std::vector<float>(first.begin(), first.begin() + 480)), 0.0);
    std::printf("short sentence: %.2f s of audio in %.2f s\n", double(audio.n_samples) / kSampleRate,
                audio.seconds_total);
    chatterbox_audio_free(&audio);

    EXPECT_EQ(speak("Hello there.", voice, p), first) << "same seed, same audio";
    EXPECT_NE(speak("Hello there.", voice, short_params(8)), first) << "another seed, other audio";
}

TEST_F(Pipeline, ClonesTheWholeReferenceRecording) {
    chatterbox_voice *cloned = nullptr;
    ASSERT_EQ(chatterbox_voice_open(engine, test::golden_path("ref_voice.wav").c_str(), 0.5f, &cloned), CHATTERBOX_OK)
        << chatterbox_last_error();
    chatterbox_audio audio;
    const std::vector<float> wave = speak("Hello there.", cloned, short_params(7, 12), &audio);
    expect_valid_audio(audio);
    EXPECT_EQ(audio.n_samples, size_t(audio.speech_tokens) * kSamplesPerToken);
    EXPECT_NE(wave, hello_audio()) << "another voice, other audio";
    chatterbox_audio_free(&audio);
    chatterbox_voice_free(cloned);
}

TEST_F(Pipeline, SavedVoiceGivesTheSameAudio) {
    const std::string path = (fs::path(test::temp_dir("pipeline_saved_voice")) / "ref.voice").string();
    ASSERT_EQ(chatterbox_voice_save(voice, path.c_str()), CHATTERBOX_OK) << chatterbox_last_error();
    chatterbox_voice *loaded = nullptr;
    ASSERT_EQ(chatterbox_voice_open(engine, path.c_str(), 0.5f, &loaded), CHATTERBOX_OK) << chatterbox_last_error();
    EXPECT_EQ(speak("Hello there.", loaded, short_params(7)), hello_audio());
    chatterbox_voice_free(loaded);
}

TEST_F(Pipeline, VoiceConversionKeepsTheSourceDuration) {
    // Two seconds of the reference recording as the source.
    audio::AudioBuffer source = audio::read_audio(test::golden_path("ref_voice.wav"));
    source.samples.resize(size_t(2 * source.sample_rate));
    const std::string path = (fs::path(test::temp_dir("pipeline_vc")) / "source.wav").string();
    audio::write_audio(path, source.samples, source.sample_rate, {audio::WavEncoding::float32});

    const chatterbox_synthesis_params p = short_params(3);
    chatterbox_audio out;
    ASSERT_EQ(chatterbox_convert_voice(engine, path.c_str(), voice, &p, &out), CHATTERBOX_OK)
        << chatterbox_last_error();
    expect_valid_audio(out);
    EXPECT_NEAR(double(out.speech_tokens), 50.0, 2.0) << "S3 tokens run at 25 per second";
    EXPECT_EQ(out.n_samples, size_t(out.speech_tokens) * kSamplesPerToken);
    chatterbox_audio_free(&out);
}

TEST_F(Pipeline, LongTextIsSpokenSentenceBySentenceWithPauses) {
    const char *text = "The first sentence. The second one! Is this the third? Dr. Smith wrote the fourth. And "
                       "that is the fifth.";
    const chatterbox_synthesis_params p = short_params(5, 8);
    chatterbox_audio audio;
    const std::vector<float> wave = speak(text, voice, p, &audio);
    expect_valid_audio(audio);
    // Five pieces of 960 samples per token, four sentence pauses of 0.25 s between them.
    const size_t pause = size_t(0.25 * kSampleRate);
    EXPECT_EQ(audio.n_samples, size_t(audio.speech_tokens) * kSamplesPerToken + 4 * pause);
    EXPECT_LE(audio.speech_tokens, 5 * p.max_new_tokens);
    // Each pause is a run of exact zeros, entered from a faded tail (no click) and left into the
    // next piece's trim_fade (20 ms of zeros, then a fade-in).
    size_t zero_runs = 0;
    for (size_t i = 0; i < wave.size();) {
        size_t j = i;
        while (j < wave.size() && wave[j] == 0.0f) ++j;
        if (j - i >= pause) {
            ++zero_runs;
            EXPECT_LT(std::fabs(wave[i - 1]), 0.01f) << "a piece ends abruptly at sample " << i;
        }
        i = j + 1;
    }
    EXPECT_EQ(zero_runs, 4u);
    chatterbox_audio_free(&audio);
}

TEST_F(Pipeline, WithoutSplittingTheTextIsOnePiece) {
    const char *text = "The first sentence. The second one!";
    chatterbox_synthesis_params p = short_params(5, 8);
    chatterbox_audio split;
    const std::vector<float> split_wave = speak(text, voice, p, &split);
    const size_t pause = size_t(0.25 * kSampleRate);
    EXPECT_EQ(split.n_samples, size_t(split.speech_tokens) * kSamplesPerToken + pause) << "two pieces, one pause";

    p.split_text = 0;
    chatterbox_audio whole;
    const std::vector<float> whole_wave = speak(text, voice, p, &whole);
    expect_valid_audio(whole);
    EXPECT_EQ(whole.n_samples, size_t(whole.speech_tokens) * kSamplesPerToken) << "one piece, no pause";
    EXPECT_LE(whole.speech_tokens, p.max_new_tokens) << "more than one T3 pass";
    EXPECT_NE(whole_wave, split_wave);
    chatterbox_audio_free(&whole);
    chatterbox_audio_free(&split);
}

// The last T3 progress fraction: the share of max_new_tokens that T3 made (one piece).
void keep_t3_fraction(const char *stage, float fraction, void *user) {
    if (std::string(stage) == "t3") *static_cast<float *>(user) = fraction;
}

TEST_F(Pipeline, IgnoringEosMakesMaxNewTokens) {
    // Nearly uniform sampling that draws end-of-speech early for this text and seed in the
    // built-in voice (test_t3_session: IgnoreEosRunsEveryStepAndReportsWhereItWouldHaveEnded).
    chatterbox_synthesis_params p = short_params(279, 30);
    p.temperature = 5;
    p.min_p = 0;
    p.cfg_weight = 0;
    float t3_done = 0;
    p.on_progress = keep_t3_fraction;
    p.user_data = &t3_done;
    chatterbox_audio ended;
    speak("Hello there.", nullptr, p, &ended);
    ASSERT_LT(t3_done, 0.5f) << "seed 279 no longer ends early: choose a seed that does";

    p.ignore_eos = 1;
    chatterbox_audio full;
    speak("Hello there.", nullptr, p, &full);
    expect_valid_audio(full);
    EXPECT_EQ(t3_done, 1.0f) << "T3 stopped before max_new_tokens";
    EXPECT_GT(full.speech_tokens, ended.speech_tokens);
    chatterbox_audio_free(&full);
    chatterbox_audio_free(&ended);
}

struct Collected {
    std::vector<float> samples;
    std::vector<size_t> joins; // where a chunk starts (after the first)
};

int collect_chunk(const float *samples, size_t n, void *user) {
    auto *c = static_cast<Collected *>(user);
    if (!c->samples.empty()) c->joins.push_back(c->samples.size());
    c->samples.insert(c->samples.end(), samples, samples + n);
    return 0;
}

TEST_F(Pipeline, StreamedChunksAreTheReturnedWave) {
    chatterbox_synthesis_params p = short_params(21, 45);
    p.stream = 1;
    Collected collected;
    p.on_chunk = collect_chunk;
    p.user_data = &collected;
    chatterbox_audio audio;
    const char *text = "Streaming speech arrives in pieces.";
    const std::vector<float> wave = speak(text, voice, p, &audio);
    expect_valid_audio(audio);
    EXPECT_EQ(collected.samples, wave);
    EXPECT_EQ(audio.n_samples, size_t(audio.speech_tokens) * kSamplesPerToken);
    // The first chunk needs 20 tokens + 3 of look-ahead; with more, audio arrives before T3 is done.
    ASSERT_GT(audio.speech_tokens, 23) << "too few tokens to stream in chunks";
    EXPECT_GE(collected.joins.size(), 1u);
    EXPECT_LT(audio.seconds_to_first_audio, audio.seconds_total);

    // Where chunks meet, the wave steps no more than it usually does (cross-faded, no clicks).
    std::vector<float> steps;
    for (size_t i = 1; i < wave.size(); ++i) steps.push_back(std::fabs(wave[i] - wave[i - 1]));
    std::vector<float> sorted = steps;
    std::nth_element(sorted.begin(), sorted.begin() + std::ptrdiff_t(sorted.size() * 99 / 100), sorted.end());
    const float typical = sorted[sorted.size() * 99 / 100];
    for (size_t join : collected.joins) EXPECT_LE(steps[join - 1], 2 * typical) << "a step at the join " << join;

    // T3 does not depend on how the audio is made: the offline run has the same tokens and length.
    p.stream = 0;
    chatterbox_audio offline;
    const std::vector<float> offline_wave = speak(text, voice, p, &offline);
    EXPECT_EQ(offline.speech_tokens, audio.speech_tokens);
    ASSERT_EQ(offline_wave.size(), wave.size());
    double signal = 0, difference = 0;
    for (size_t i = 0; i < wave.size(); ++i) {
        signal += double(offline_wave[i]) * offline_wave[i];
        difference += double(wave[i] - offline_wave[i]) * (wave[i] - offline_wave[i]);
    }
    std::printf("streaming: %zu chunks, %d tokens (%.2f s of audio), first audio after %.2f s, total %.2f s; "
                "offline total %.2f s; streamed vs offline SNR %.1f dB\n",
                collected.joins.size() + 1, audio.speech_tokens, double(audio.n_samples) / kSampleRate,
                audio.seconds_to_first_audio, audio.seconds_total, offline.seconds_total,
                10 * std::log10(signal / std::max(difference, 1e-30)));
    chatterbox_audio_free(&offline);
    chatterbox_audio_free(&audio);
}

// discard_samples: the offline run's samples reach on_chunk a piece (and a pause) at a time, and the
// result holds none; streaming, the chunks are the streamed wave.
TEST_F(Pipeline, DiscardedSamplesGoOnlyToTheChunkCallback) {
    const char *text = "The first sentence. The second one!";
    chatterbox_synthesis_params p = short_params(5, 8);
    for (int stream : {0, 1}) {
        p.stream = stream;
        p.discard_samples = 0;
        chatterbox_audio kept;
        const std::vector<float> wave = speak(text, voice, p, &kept);
        Collected collected;
        p.discard_samples = 1;
        p.on_chunk = collect_chunk;
        p.user_data = &collected;
        chatterbox_audio discarded;
        ASSERT_EQ(chatterbox_synthesize(engine, text, voice, &p, &discarded), CHATTERBOX_OK) << chatterbox_last_error();
        EXPECT_EQ(discarded.samples, nullptr) << "stream " << stream;
        EXPECT_EQ(discarded.n_samples, 0u) << "stream " << stream;
        EXPECT_EQ(discarded.speech_tokens, kept.speech_tokens) << "stream " << stream;
        EXPECT_EQ(collected.samples, wave) << "stream " << stream;
        if (!stream) {
            EXPECT_EQ(collected.joins.size(), 2u) << "piece, pause, piece";
        }
        chatterbox_audio_free(&discarded);
        chatterbox_audio_free(&kept);
        p.on_chunk = nullptr;
        p.user_data = nullptr;
    }
}

// Raises the cancel flag once T3 has taken its first step.
void cancel_during_t3(const char *stage, float fraction, void *user) {
    if (std::string(stage) == "t3" && fraction > 0) *static_cast<volatile int *>(user) = 1;
}

TEST_F(Pipeline, CancelFlagAndChunkCallbackStopTheRequest) {
    volatile int cancel = 0;
    chatterbox_synthesis_params p = short_params(1, 200);
    p.cancel = &cancel;
    p.on_progress = cancel_during_t3;
    p.user_data = const_cast<int *>(&cancel);
    chatterbox_audio audio;
    EXPECT_EQ(chatterbox_synthesize(engine, "This will not finish.", voice, &p, &audio), CHATTERBOX_ERROR_CANCELLED);
    EXPECT_EQ(audio.n_samples, 0u);
    EXPECT_EQ(audio.samples, nullptr);

    chatterbox_synthesis_params q = short_params(1, 30);
    q.stream = 1;
    q.on_chunk = [](const float *, size_t, void *) { return 1; };
    EXPECT_EQ(chatterbox_synthesize(engine, "Stop at the first chunk.", voice, &q, &audio), CHATTERBOX_ERROR_CANCELLED);
    EXPECT_NE(std::string(chatterbox_last_error()).find("cancelled"), std::string::npos);
}

// Expects `status` and a message containing `words`.
void expect_failure(chatterbox_status got, chatterbox_status expected, const std::string &words) {
    EXPECT_EQ(got, expected) << chatterbox_status_name(got) << ": " << chatterbox_last_error();
    EXPECT_NE(std::string(chatterbox_last_error()).find(words), std::string::npos)
        << "message '" << chatterbox_last_error() << "' does not mention '" << words << "'";
}

TEST_F(Pipeline, BadArgumentsGiveTheirStatusAndMessage) {
    chatterbox_synthesis_params p = short_params(1);
    chatterbox_audio audio;
    expect_failure(chatterbox_synthesize(engine, nullptr, voice, &p, &audio), CHATTERBOX_ERROR_INVALID_ARGUMENT,
                   "text is NULL");
    expect_failure(chatterbox_synthesize(nullptr, "Hi.", voice, &p, &audio), CHATTERBOX_ERROR_INVALID_ARGUMENT,
                   "engine is NULL");
    expect_failure(chatterbox_synthesize(engine, "", voice, &p, &audio), CHATTERBOX_ERROR_INVALID_ARGUMENT, "empty");
    expect_failure(chatterbox_synthesize(engine, " \n\t ", voice, &p, &audio), CHATTERBOX_ERROR_INVALID_ARGUMENT,
                   "empty");
    expect_failure(chatterbox_synthesize(engine, "Bad \xff byte.", voice, &p, &audio),
                   CHATTERBOX_ERROR_INVALID_ARGUMENT, "UTF-8");
    // Control and format characters (a bell, zero-width space and joiner, word joiner, a bidi mark)
    // and punctuation alone: nothing to say either.
    const char *nothing_to_say[] = {"\a\x01 \xe2\x80\x8b\xe2\x80\x8d\xe2\x81\xa0\xe2\x80\x8f", "?! ... --"};
    for (const char *text : nothing_to_say)
        expect_failure(chatterbox_synthesize(engine, text, voice, &p, &audio), CHATTERBOX_ERROR_INVALID_ARGUMENT,
                       "nothing to say");
    p.split_text = 0; // the text in one piece is checked the same way
    expect_failure(chatterbox_synthesize(engine, " \n\t ", voice, &p, &audio), CHATTERBOX_ERROR_INVALID_ARGUMENT,
                   "empty");
    for (const char *text : nothing_to_say)
        expect_failure(chatterbox_synthesize(engine, text, voice, &p, &audio), CHATTERBOX_ERROR_INVALID_ARGUMENT,
                       "nothing to say");
    expect_failure(chatterbox_synthesize(engine, "Bad \xff byte.", voice, &p, &audio),
                   CHATTERBOX_ERROR_INVALID_ARGUMENT, "UTF-8");
    std::string too_long;
    for (int i = 0; i < 2100; ++i) too_long += "word ";
    expect_failure(chatterbox_synthesize(engine, too_long.c_str(), voice, &p, &audio),
                   CHATTERBOX_ERROR_INVALID_ARGUMENT, "more than T3 reads in one pass");
    p.split_text = 2;
    expect_failure(chatterbox_synthesize(engine, "Hi.", voice, &p, &audio), CHATTERBOX_ERROR_INVALID_ARGUMENT,
                   "split_text");
    p = short_params(1);
    p.temperature = -1.0f;
    expect_failure(chatterbox_synthesize(engine, "Hi.", voice, &p, &audio), CHATTERBOX_ERROR_INVALID_ARGUMENT,
                   "temperature");
    p = short_params(1, 0);
    expect_failure(chatterbox_synthesize(engine, "Hi.", voice, &p, &audio), CHATTERBOX_ERROR_INVALID_ARGUMENT,
                   "max_new_tokens");

    chatterbox_voice *v = nullptr;
    expect_failure(chatterbox_voice_from_audio_file(engine, "/no/such/voice.wav", 0.5f, &v), CHATTERBOX_ERROR_IO,
                   "does not exist");
    expect_failure(chatterbox_voice_load(test::golden_path("tokenizer.json").c_str(), &v), CHATTERBOX_ERROR_IO, "");
    expect_failure(chatterbox_voice_from_audio_file(engine, test::golden_path("tokenizer.json").c_str(), 0.5f, &v),
                   CHATTERBOX_ERROR_AUDIO, "tokenizer.json");
    expect_failure(chatterbox_voice_with_exaggeration(voice, NAN, &v), CHATTERBOX_ERROR_INVALID_ARGUMENT,
                   "exaggeration");
    EXPECT_EQ(v, nullptr);
    expect_failure(chatterbox_convert_voice(engine, "/no/such/source.wav", voice, &p, &audio), CHATTERBOX_ERROR_IO,
                   "does not exist");
}

TEST(PipelineCpp, ExceptionsCarryTheStatus) {
    try {
        api::Engine engine("/no/such/model", "cpu");
        FAIL() << "loaded a missing model";
    } catch (const api::Exception &e) {
        EXPECT_EQ(e.status(), CHATTERBOX_ERROR_MODEL);
        EXPECT_NE(std::string(e.what()).find("/no/such/model"), std::string::npos);
    }
}

} // namespace
