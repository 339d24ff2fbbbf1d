#pragma once
// The two resamplers the reference pipeline uses: librosa's default (libsoxr, 'soxr_hq') and
// torchaudio's windowed-sinc Resample. They differ by up to ~1e-2 on speech, so each stage must use
// the one the reference used (spec overview.md §2.2).

#include <vector>

namespace chatterbox::audio {

// librosa.resample(x, orig_sr=sr_in, target_sr=sr_out, res_type='soxr_hq'): libsoxr, HQ recipe,
// linear phase, float32, streamed in blocks as python-soxr does; the output is then cut or
// zero-padded to ceil(len * sr_out / sr_in) (librosa's fix_length). Equal rates return x.
std::vector<float> resample_soxr_hq(const std::vector<float> &x, int sr_in, int sr_out);

// torchaudio.functional.resample(x, sr_in, sr_out) with its defaults (sinc_interp_hann,
// lowpass_filter_width 6, rolloff 0.99): rates reduced by their gcd, a polyphase windowed-sinc
// kernel computed in double and rounded to float32 as torchaudio does, zero padding of `width`
// samples before and `width + sr_in/gcd` after, output length ceil(len * sr_out / sr_in).
std::vector<float> resample_torchaudio(const std::vector<float> &x, int sr_in, int sr_out);

} // namespace chatterbox::audio
