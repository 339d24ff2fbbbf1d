#pragma once
// The host-side STFT ends of HiFT (spec hift.md §4 steps 1, 6–8), on audio/stft.h:
//   source_stft:     s (480 T) -> (18, 120 T + 1): torch.stft(n_fft 16, hop 4, Hann, center, reflect)
//                    real parts in channels 0..8, imaginary parts in 9..17
//   heads_to_wave:   conv_post output (18, F) -> magnitude = min(exp(x[0:9]), 100), phase = sin(x[9:18]),
//                    torch.istft(n_fft 16, hop 4, Hann, center) -> clamp to +-0.99 -> 4 (F - 1) samples

#include "models/chatterbox/hift/hift_hparams.h"

#include <cstdint>
#include <vector>

namespace chatterbox::hift {

std::vector<float> source_stft(const std::vector<float> &source, const HiftHParams &hp);

// heads: (18, frames) channel-major, as conv_post writes them.
std::vector<float> heads_to_wave(const std::vector<float> &heads, int64_t frames, const HiftHParams &hp);

} // namespace chatterbox::hift
