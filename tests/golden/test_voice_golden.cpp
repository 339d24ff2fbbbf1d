// needs: synthetic-weights
// Voice conditionals (VoiceBuilder, builtin_voice, voice files) with full-size synthetic weights: the
// golden reference against the official prepare_conditionals, bit-identical save/load, damaged and
// foreign voice files, the built-in voice, and references a user can hand in that are not usable speech.

#include "audio/audio_file.h"
#include "core/backend.h"
#include "core/error.h"
#include "core/gguf_file.h"
#include "core/npy.h"
#include "models/chatterbox/model_files.h"
#include "models/chatterbox/voice.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <sndfile.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>

using namespace chatterbox;
using namespace chatterbox::test;
namespace fs = std::filesystem;

namespace {

constexpr double kPi = 3.14159265358979323846;

// A voiced-speech-like test signal: a 140 Hz harmonic series under a 4 Hz syllable envelope.
std::vector<float> speech_like(size_t n, int sample_rate) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) {
        const double t = double(i) / sample_rate;
        double v = 0;
        for (int h = 1; h <= 8; ++h) v += std::sin(2 * kPi * 140.0 * h * t + h) / h;
        x[i] = float(0.2 * v * (0.6 + 0.4 * std::sin(2 * kPi * 4.0 * t)));
    }
    return x;
}

std::vector<int32_t> golden_tokens(const std::string &name) {
    const std::vector<int64_t> values = read_npy(golden_path(name + ".npy")).i64();
    return {values.begin(), values.end()};
}

void expect_same_voice(const VoiceConditionals &a, const VoiceConditionals &b) {
    EXPECT_EQ(a.t3.speaker_emb, b.t3.speaker_emb);
    EXPECT_EQ(a.t3.prompt_tokens, b.t3.prompt_tokens);
    EXPECT_EQ(std::memcmp(&a.t3.exaggeration, &b.t3.exaggeration, sizeof(float)), 0);
    EXPECT_EQ(a.s3gen.prompt_tokens, b.s3gen.prompt_tokens);
    EXPECT_EQ(a.s3gen.prompt_mel, b.s3gen.prompt_mel);
    EXPECT_EQ(a.s3gen.xvector, b.s3gen.xvector);
}

class VoiceGolden : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        files_ = std::make_unique<ModelFiles>(ModelFiles::open(synthetic_dir()));
        backend_ = std::make_unique<Backend>(test_backend_options(2));
        builder_ = std::make_unique<VoiceBuilder>(*files_, *backend_);
        taps_ = std::make_unique<VoiceTaps>();
        voice_ = std::make_unique<VoiceConditionals>(
            builder_->from_file(*backend_, golden_path("ref_voice.wav"), 0.5f, taps_.get()));
    }
    static void TearDownTestSuite() {
        voice_.reset();
        taps_.reset();
        builder_.reset();
        backend_.reset();
        files_.reset();
    }
    static std::unique_ptr<ModelFiles> files_;
    static std::unique_ptr<Backend> backend_;
    static std::unique_ptr<VoiceBuilder> builder_;
    static std::unique_ptr<VoiceTaps> taps_;
    static std::unique_ptr<VoiceConditionals> voice_;
};

std::unique_ptr<ModelFiles> VoiceGolden::files_;
std::unique_ptr<Backend> VoiceGolden::backend_;
std::unique_ptr<VoiceBuilder> VoiceGolden::builder_;
std::unique_ptr<VoiceTaps> VoiceGolden::taps_;
std::unique_ptr<VoiceConditionals> VoiceGolden::voice_;

TEST_F(VoiceGolden, ReferenceMatchesTheOfficialConditionals) {
    const VoiceConditionals &v = *voice_;
    EXPECT_EQ(taps_->ve_partials, 8);
    expect_matches_golden(taps_->ve_partial_embeds, "ve_partial_embeds");
    expect_matches_golden(v.t3.speaker_emb, "ve_speaker_emb");
    expect_matches_golden(v.s3gen.xvector, "campplus_xvector");
    expect_matches_golden(taps_->s3tok_projection_t3prompt, "s3tok_fsq_projection_t3prompt");
    expect_matches_golden(taps_->s3tok_projection_s3genprompt, "s3tok_fsq_projection_s3genprompt");
    EXPECT_EQ(taps_->s3tok_tokens_t3prompt, golden_tokens("s3tok_tokens_t3prompt"));
    EXPECT_EQ(taps_->s3tok_tokens_s3genprompt, golden_tokens("s3tok_tokens_s3genprompt"));
    EXPECT_EQ(v.t3.prompt_tokens, golden_tokens("t3_cond_prompt_tokens"));
    EXPECT_EQ(v.s3gen.prompt_tokens, golden_tokens("s3gen_prompt_tokens"));
    expect_matches_golden(v.s3gen.prompt_mel, "s3gen_prompt_feat");
    EXPECT_EQ(v.t3.exaggeration, 0.5f);
    // The front end the models saw.
    expect_matches_golden(taps_->ve_mel.values, "ve_mel");
    expect_matches_golden(taps_->campplus_fbank.values, "campplus_fbank");
}

TEST_F(VoiceGolden, SavedVoiceReloadsBitIdentical) {
    const std::string dir = temp_dir("voice");
    const std::string path = dir + "/ref.voice"; // no .gguf: voice files are known by content
    save_voice(*voice_, path);
    EXPECT_TRUE(is_voice_file(path));
    EXPECT_LT(fs::file_size(path), 200u * 1024);
    expect_same_voice(load_voice(path), *voice_);

    // An empty prompt survives too.
    VoiceConditionals bare = *voice_;
    bare.t3.prompt_tokens.clear();
    save_voice(bare, dir + "/bare.voice");
    expect_same_voice(load_voice(dir + "/bare.voice"), bare);
}

TEST_F(VoiceGolden, DamagedAndForeignVoiceFilesAreRefused) {
    const std::string dir = temp_dir("voice");
    const std::string good = dir + "/good.voice";
    save_voice(*voice_, good);
    const auto size = fs::file_size(good);

    const std::string truncated = dir + "/truncated.voice";
    fs::copy_file(good, truncated);
    fs::resize_file(truncated, size / 2);
    expect_error([&] { load_voice(truncated); }, {truncated});

    // One byte of the prompt mel changed: the values stay plausible, the checksum does not.
    const std::string flipped = dir + "/flipped.voice";
    fs::copy_file(good, flipped);
    {
        std::fstream patch(flipped, std::ios::in | std::ios::out | std::ios::binary);
        patch.seekg(-1000, std::ios::end);
        char byte = 0;
        patch.read(&byte, 1);
        patch.seekp(-1000, std::ios::end);
        byte ^= 0x10;
        patch.write(&byte, 1);
    }
    EXPECT_TRUE(is_voice_file(flipped));
    expect_error([&] { load_voice(flipped); }, {flipped, "checksum", "damaged"});

    const std::string wav = golden_path("ref_voice.wav");
    EXPECT_FALSE(is_voice_file(wav));
    expect_error([&] { load_voice(wav); }, {wav});
    EXPECT_FALSE(is_voice_file(dir + "/absent.voice"));
    expect_error([&] { load_voice(dir + "/absent.voice"); }, {dir + "/absent.voice"});

    // A GGUF that is not a voice, and a voice from a future version.
    const std::string other = dir + "/other.gguf";
    GgufWriter model;
    model.set_string("general.architecture", "llama");
    model.add_tensor("w", GGML_TYPE_F32, {2}, [](void *dst) { std::memset(dst, 0, 8); });
    model.write(other);
    EXPECT_FALSE(is_voice_file(other));
    expect_error([&] { load_voice(other); }, {other, "not a Chatterbox voice"});

    const std::string future = dir + "/future.voice";
    GgufWriter next;
    next.set_string("chatterbox.voice.format", "chatterbox-voice");
    next.set_int("chatterbox.voice.version", 99);
    next.write(future);
    EXPECT_TRUE(is_voice_file(future));
    expect_error([&] { load_voice(future); }, {future, "version 99"});

    // Values a voice cannot hold are refused before anything is written.
    VoiceConditionals bad = *voice_;
    bad.s3gen.prompt_tokens[3] = 6561;
    expect_error([&] { save_voice(bad, dir + "/bad.voice"); }, {"S3Gen prompt token 3", "6561"});
    bad = *voice_;
    bad.t3.speaker_emb[7] = std::numeric_limits<float>::quiet_NaN();
    expect_error([&] { save_voice(bad, dir + "/bad.voice"); }, {"speaker embedding value 7"});
    bad = *voice_;
    bad.s3gen.xvector.pop_back();
    expect_error([&] { save_voice(bad, dir + "/bad.voice"); }, {"x-vector has 191 values"});
    EXPECT_FALSE(fs::exists(dir + "/bad.voice"));
}

TEST_F(VoiceGolden, BuiltinVoiceComesFromConds) {
    expect_error([&] { builtin_voice(*files_); }, {synthetic_dir(), "no built-in voice"});

    // The synthetic weights with the conds.pt fixture (tests/data/pt/make_pt_fixtures.py).
    const std::string dir = temp_dir("voice_model");
    for (const char *file : {"ve.safetensors", "t3_cfg.safetensors", "s3gen.safetensors"})
        fs::create_symlink(fs::absolute(synthetic_dir() + "/" + file), dir + "/" + file);
    fs::copy_file(data_path("pt/conds.pt"), dir + "/conds.pt");
    const VoiceConditionals builtin = builtin_voice(ModelFiles::open(dir));
    ASSERT_EQ(builtin.t3.speaker_emb.size(), 256u);
    EXPECT_EQ(builtin.t3.speaker_emb[0], -2.0f);
    ASSERT_EQ(builtin.t3.prompt_tokens.size(), 150u);
    EXPECT_EQ(builtin.t3.prompt_tokens[149], (149 * 37) % 6561);
    EXPECT_EQ(builtin.t3.exaggeration, 0.5f);
    ASSERT_EQ(builtin.s3gen.prompt_tokens.size(), 12u);
    EXPECT_EQ(builtin.s3gen.prompt_tokens[11], (11 * 101) % 6561);
    ASSERT_EQ(builtin.s3gen.prompt_mel.size(), 24u * 80);
    EXPECT_EQ(builtin.s3gen.prompt_mel[80 + 2], (2 - 40) / 8.0f + 1 / 32.0f); // frame 1, bin 2
    ASSERT_EQ(builtin.s3gen.xvector.size(), 192u);
    EXPECT_EQ(builtin.s3gen.xvector[5], (5 % 13 - 6) / 4.0f);

    save_voice(builtin, dir + "/builtin.voice");
    expect_same_voice(load_voice(dir + "/builtin.voice"), builtin);
}

TEST_F(VoiceGolden, UnusableReferencesAreRefusedNamingTheFile) {
    const std::string dir = temp_dir("voice_audio");

    std::ofstream(dir + "/zero_bytes.wav").close();
    expect_error([&] { builder_->from_file(*backend_, dir + "/zero_bytes.wav"); }, {dir + "/zero_bytes.wav", "empty"});

    { // A WAV header with no frames.
        SF_INFO info{};
        info.samplerate = 24000;
        info.channels = 1;
        info.format = SF_FORMAT_WAV | SF_FORMAT_PCM_16;
        sf_close(sf_open((dir + "/no_frames.wav").c_str(), SFM_WRITE, &info));
    }
    expect_error([&] { builder_->from_file(*backend_, dir + "/no_frames.wav"); }, {dir + "/no_frames.wav", "no audio samples"});

    audio::write_audio(dir + "/silent.wav", std::vector<float>(24000, 0.0f), 24000);
    expect_error([&] { builder_->from_file(*backend_, dir + "/silent.wav"); }, {dir + "/silent.wav", "silent"});

    audio::write_audio(dir + "/one_ms.wav", speech_like(24, 24000), 24000);
    expect_error([&] { builder_->from_file(*backend_, dir + "/one_ms.wav"); }, {dir + "/one_ms.wav", "at least 0.1 s are needed"});

    std::ofstream(dir + "/notes.wav") << "not audio at all\n";
    expect_error([&] { builder_->from_file(*backend_, dir + "/notes.wav"); }, {dir + "/notes.wav", "not an audio file"});

    // An hour (at 1 kHz, so the file stays 7 MB): refused from the header, before decoding.
    audio::write_audio(dir + "/hour.wav", std::vector<float>(3600 * 1000, 0.1f), 1000);
    expect_error([&] { builder_->from_file(*backend_, dir + "/hour.wav"); }, {dir + "/hour.wav", "limit is 600 s"});
    expect_error([&] { builder_->from_audio(*backend_, {std::vector<float>(3600 * 1000, 0.1f), 1000}); }, {"limit is 600 s"});

    expect_error([&] { builder_->from_audio(*backend_, {speech_like(100, 500), 500}); }, {"500 Hz"});
    expect_error([&] { builder_->from_audio(*backend_, {speech_like(24000, 24000), 24000}, std::nanf("")); }, {"exaggeration"});
}

TEST_F(VoiceGolden, LowRatesChannelsAndShortReferencesWork) {
    const std::string dir = temp_dir("voice_audio");
    // 8 kHz: resampled to 24 kHz like librosa.load; one second gives 25 tokens and 50 mel frames.
    audio::write_audio(dir + "/low.wav", speech_like(8000, 8000), 8000);
    const VoiceConditionals low = builder_->from_file(*backend_, dir + "/low.wav");
    EXPECT_EQ(low.t3.prompt_tokens.size(), 25u);
    EXPECT_EQ(low.s3gen.prompt_tokens.size(), 25u);
    EXPECT_EQ(low.s3gen.prompt_mel.size(), 50u * 80);
    double norm = 0;
    for (float v : low.t3.speaker_emb) norm += double(v) * v;
    EXPECT_NEAR(norm, 1.0, 1e-5);

    // Six channels are averaged (librosa's mono mix): the same voice as the mixed-down mono file.
    const size_t frames = 8000;
    std::vector<float> interleaved(frames * 6), mono(frames);
    const std::vector<float> base = speech_like(frames, 16000);
    for (size_t f = 0; f < frames; ++f) {
        float sum = 0;
        for (int c = 0; c < 6; ++c) sum += interleaved[f * 6 + size_t(c)] = base[f] * float(c + 1) / 6.0f;
        mono[f] = sum / 6.0f;
    }
    {
        SF_INFO info{};
        info.samplerate = 16000;
        info.channels = 6;
        info.format = SF_FORMAT_WAV | SF_FORMAT_FLOAT;
        SNDFILE *file = sf_open((dir + "/six.wav").c_str(), SFM_WRITE, &info);
        ASSERT_NE(file, nullptr) << sf_strerror(nullptr);
        ASSERT_EQ(sf_writef_float(file, interleaved.data(), sf_count_t(frames)), sf_count_t(frames));
        sf_close(file);
    }
    expect_same_voice(builder_->from_file(*backend_, dir + "/six.wav"), builder_->from_audio(*backend_, {mono, 16000}));

    // The shortest accepted reference: 0.1 s is 5 mel frames, so the 3 tokens are cut to 2.
    const VoiceConditionals shortest = builder_->from_audio(*backend_, {speech_like(2400, 24000), 24000});
    EXPECT_EQ(shortest.s3gen.prompt_tokens.size(), 2u);
    EXPECT_EQ(shortest.s3gen.prompt_mel.size(), 5u * 80);
    EXPECT_EQ(shortest.t3.prompt_tokens.size(), 3u);
    expect_error([&] { builder_->from_audio(*backend_, {speech_like(2399, 24000), 24000}); }, {"at least 0.1 s are needed"});
}

TEST_F(VoiceGolden, SpeechTokensOfAWholeRecording) {
    // 32 s: longer than one 30 s tokenizer window (two windows merged), and no 6 s / 10 s cut.
    const std::vector<int32_t> tokens = builder_->speech_tokens(*backend_, {speech_like(32 * 16000, 16000), 16000});
    EXPECT_EQ(tokens.size(), 800u);
    for (int32_t t : tokens) ASSERT_TRUE(t >= 0 && t < 6561) << t;
}

TEST(VoiceBuilderModel, NeedsTheVoiceModels) {
    const std::string dir = temp_dir("voice_model");
    for (const char *file : {"ve.safetensors", "t3_cfg.safetensors", "s3gen.safetensors"})
        fs::create_symlink(fs::absolute(synthetic_dir() + "/" + file), dir + "/" + file);
    // The T3 weights where the voice encoder should be.
    fs::remove(dir + "/ve.safetensors");
    fs::create_symlink(fs::absolute(synthetic_dir() + "/t3_cfg.safetensors"), dir + "/ve.safetensors");
    const ModelFiles files = ModelFiles::open(dir);
    Backend backend(BackendOptions{"cpu", 1});
    expect_error([&] { VoiceBuilder builder(files, backend); }, {dir, "cannot load the voice models"});
}

} // namespace
