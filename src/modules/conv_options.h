#pragma once
// Options shared by Conv1d and ConvTranspose1d, set fluently:
//
//   nn::ConvOptions().with_stride(2).with_padding(1)
//   nn::ConvOptions().with_causal_padding().with_dilation(3).without_bias()
//   nn::ConvOptions().with_weight_norm()           // `<prefix>.weight_g/_v` or `.parametrizations.weight.*`

namespace chatterbox::nn {

struct ConvOptions {
    int stride = 1;
    int dilation = 1;         // Conv1d only
    int pad_left = 0;         // Conv1d: zeros before the input; ConvTranspose1d: PyTorch `padding`
    int pad_right = 0;        // Conv1d: zeros after the input
    bool causal = false;      // Conv1d: pad_left = dilation * (kernel - 1), pad_right = 0
    int output_padding = 0;   // ConvTranspose1d only: extra samples at the end of the output
    int groups = 1;           // Conv1d: 1, or the channel count (depthwise)
    bool bias = true;         // `<prefix>.bias`
    bool weight_norm = false; // fold g * v / ||v|| at load (dim 0 of the stored weight)

    // clang-format off
    ConvOptions &with_stride(int s) { stride = s; return *this; }
    ConvOptions &with_dilation(int d) { dilation = d; return *this; }
    ConvOptions &with_padding(int p) { pad_left = pad_right = p; return *this; } // PyTorch padding=p
    ConvOptions &with_padding(int left, int right) { pad_left = left; pad_right = right; return *this; }
    ConvOptions &with_causal_padding() { causal = true; return *this; }
    ConvOptions &with_output_padding(int p) { output_padding = p; return *this; }
    ConvOptions &with_groups(int g) { groups = g; return *this; }
    ConvOptions &without_bias() { bias = false; return *this; }
    ConvOptions &with_weight_norm() { weight_norm = true; return *this; }
    // clang-format on
};

} // namespace chatterbox::nn
