#pragma once
// The four feature front ends of the reference pipeline, each matching its Python original
// (spec s3gen.md §2.1, s3tokenizer.md §1, voice_encoder.md §2, campplus.md §1).

#include "audio/matrix.h"

#include <cstdint>
#include <vector>

namespace chatterbox::audio {

// S3Gen reference mel (Matcha/CosyVoice mel_spectrogram) of 24 kHz audio: reflect-pad 720 samples
// each side, STFT n_fft 1920 / hop 480 / Hann 1920 without centring, magnitude
// sqrt(|X|^2 + 1e-9), Slaney mel (80 bins, 0-8 kHz), ln(max(x, 1e-5)). Returns (80, T),
// T = (len + 1440 - 1920)/480 + 1. Needs more than 720 samples.
Matrix s3gen_mel(const std::vector<float> &wav24k);

// S3Tokenizer log-mel of 16 kHz audio: centred reflect-padded STFT n_fft 400 / hop 160, power,
// last frame dropped, Slaney mel (128 bins), log10(max(x, 1e-10)), floor at (clip max - 8),
// (x + 4) / 4. Returns (128, len/160). Needs more than 200 samples.
Matrix s3tokenizer_log_mel(const std::vector<float> &wav16k);
// The filterbank and STFT window s3tokenizer_log_mel uses: librosa's Slaney mel filters (16 kHz,
// n_fft 400, 128 mels, 0-8 kHz; 128 x 201) and the periodic Hann window of 400 points.
Matrix s3tokenizer_mel_filters();
std::vector<float> s3tokenizer_window();

// Samples [begin, end) of a signal.
struct SampleSpan {
    int64_t begin = 0, end = 0;
};

// librosa.effects.trim(wav, top_db, frame_length, hop_length): the span of the frames whose RMS
// (centred, zero-padded frames) is within top_db of the loudest frame (its returned index), and
// trim_silence those samples. An empty signal gives an empty span.
SampleSpan non_silent_span(const std::vector<float> &wav, double top_db = 20.0, int frame_length = 2048,
                           int hop_length = 512);
std::vector<float> trim_silence(const std::vector<float> &wav, double top_db = 20.0, int frame_length = 2048,
                                int hop_length = 512);

// VoiceEncoder input of 16 kHz audio: trim_silence (top_db 20), then a centred reflect-padded
// STFT n_fft 400 / hop 160, power, Slaney mel (40 bins, 0-8 kHz), no log. Returns (T, 40),
// T = 1 + trimmed_len/160. The trimmed signal must be longer than 200 samples.
Matrix voice_encoder_mel(const std::vector<float> &wav16k);

// CAMPPlus input of 16 kHz audio: torchaudio.compliance.kaldi.fbank(wav, num_mel_bins=80) with
// its defaults (25 ms / 10 ms frames, snip_edges, DC removal, pre-emphasis 0.97, Povey window,
// 512-point power spectrum, log with float epsilon floor, no dither, no energy) on the float
// waveform as is (not scaled to int16 range), then the mean over time subtracted from each bin.
// Returns (T, 80), T = 1 + (len - 400)/160. Needs at least 400 samples.
Matrix campplus_fbank(const std::vector<float> &wav16k);

} // namespace chatterbox::audio
