// Writes the binary seed corpora of tests/fuzz/corpus/ with the project's own writers: tiny GGUF,
// safetensors, npy, voice and audio files (the text-based seeds are committed as written). The
// fuzzers grow their corpora from these; rerun after a format change:
//   build-fuzz/tests/fuzz/make_fuzz_seeds tests/fuzz/corpus
#include "audio/audio_file.h"
#include "core/gguf_file.h"
#include "core/npy.h"
#include "core/safetensors.h"
#include "models/chatterbox/voice.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace chatterbox;

namespace {

template <class T> std::function<void(void *)> copy_of(std::vector<T> values) {
    return [values](void *dst) { std::memcpy(dst, values.data(), values.size() * sizeof(T)); };
}

std::vector<float> ramp(size_t n, float scale = 0.01f) {
    std::vector<float> values(n);
    for (size_t i = 0; i < n; ++i) values[i] = scale * float(i % 97) - 0.3f;
    return values;
}

void write_gguf_seeds(const std::string &dir) {
    GgufWriter writer;
    writer.set_string("general.architecture", "chatterbox");
    writer.set_int("chatterbox.version", 3);
    writer.set_float("chatterbox.rate", 24000.5);
    writer.set_string_array("chatterbox.strings", {"a", "", "ünï"});
    writer.set_int_array("chatterbox.ints", {1, -2, 3});
    writer.add_tensor("small", GGML_TYPE_F32, {2, 3}, copy_of(ramp(6)));
    writer.add_tensor("ids", GGML_TYPE_I32, {4}, copy_of(std::vector<int32_t>{1, 2, 3, 4}));
    // Longer than GGUF's 63 bytes: stored shortened, the full name in chatterbox.tensor_names.
    writer.add_tensor(std::string(80, 'n') + ".weight", GGML_TYPE_F16, {1, 4},
                      copy_of(std::vector<uint16_t>(4, 0x3C00)));
    writer.write(dir + "/gguf/small.gguf");
}

void write_safetensors_seeds(const std::string &dir) {
    std::vector<SafetensorsEntry> entries;
    entries.push_back({"w", GGML_TYPE_F32, {2, 2}, copy_of(ramp(4))});
    entries.push_back({"ids", GGML_TYPE_I64, {3}, copy_of(std::vector<int64_t>{7, 8, 9})});
    entries.push_back({"half", GGML_TYPE_F16, {2}, copy_of(std::vector<uint16_t>{0x3C00, 0xBC00})});
    entries.push_back({"scalar", GGML_TYPE_BF16, {}, copy_of(std::vector<uint16_t>{0x3F80})});
    write_safetensors(dir + "/safetensors/small.safetensors", std::move(entries), {{"format", "pt"}});
}

void write_npy_seeds(const std::string &dir) {
    write_npy(dir + "/npy/f32.npy", NpyArray::from_f32({2, 3}, ramp(6)));
    write_npy(dir + "/npy/i64.npy", NpyArray::from_i64({4}, {1, -1, 1 << 20, 0}));
    write_npy(dir + "/npy/i32.npy", NpyArray::from_i32({1, 2}, {5, 6}));
    write_npy(dir + "/npy/scalar.npy", NpyArray::from_f32({}, {1.5f}));
}

void write_voice_seeds(const std::string &dir) {
    VoiceConditionals voice;
    voice.t3.speaker_emb = ramp(256, 0.001f);
    voice.t3.prompt_tokens = {1, 2, 3, 4};
    voice.s3gen.prompt_tokens = {5, 6};
    voice.s3gen.prompt_mel = ramp(4 * 80);
    voice.s3gen.xvector = ramp(192, 0.002f);
    save_voice(voice, dir + "/voice/small.voice");
    voice.t3.prompt_tokens.clear();
    save_voice(voice, dir + "/voice/no_prompt.voice");
}

void write_audio_seeds(const std::string &dir) {
    std::vector<float> tone(800);
    for (size_t i = 0; i < tone.size(); ++i) tone[i] = 0.5f * std::sin(float(i) * 0.2f);
    audio::write_audio(dir + "/audio/pcm16.wav", tone, 16000);
    audio::WriteOptions float_wav;
    float_wav.wav_encoding = audio::WavEncoding::float32;
    audio::write_audio(dir + "/audio/float.wav", std::vector<float>(tone.begin(), tone.begin() + 200), 8000, float_wav);
    audio::write_audio(dir + "/audio/tone.flac", tone, 16000);
    audio::write_audio(dir + "/audio/tone.ogg", tone, 16000);
    audio::write_audio(dir + "/audio/tone.mp3", tone, 16000);
}

} // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];
    try {
        write_gguf_seeds(dir);
        write_safetensors_seeds(dir);
        write_npy_seeds(dir);
        write_voice_seeds(dir);
        write_audio_seeds(dir);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "make_fuzz_seeds: %s\n", e.what());
        return 1;
    }
    return 0;
}
