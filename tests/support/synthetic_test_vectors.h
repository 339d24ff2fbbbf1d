#pragma once
// The test vectors of shared/golden/WEIGHTS.md ("Test vectors"): the first values of a few synthetic tensors,
// as the official generator produced them. Shared by the rule unit test and the synthetic-files golden test.

#include <cstdint>
#include <vector>

namespace chatterbox::test {

struct SyntheticTestVector {
    const char *file;
    const char *name;
    std::vector<int64_t> shape;
    const char *rule;
    uint64_t fnv;          // FNV-1a-64 of the name
    uint64_t seed;         // 0x5EEDC0DE ^ fnv
    uint64_t first_output; // first SplitMix64 output
    float first_values[4];
    uint32_t first_bits[4]; // float32 bit patterns of first_values
};

inline const std::vector<SyntheticTestVector> &synthetic_test_vectors() {
    static const std::vector<SyntheticTestVector> vectors = {
        {"t3_cfg.safetensors",
         "tfmr.layers.0.self_attn.q_proj.weight",
         {1024, 1024},
         "fan_in",
         0x7a8b332ff7cc6bb5,
         0x7a8b332fa921ab6b,
         0x25fdbb783451b45d,
         {-0.0219748206f, -0.00750148296f, 0.0259170048f, -0.00951865688f},
         {0xbcb4048a, 0xbbf5cf00, 0x3cd44fe6, 0xbc1bf424}},
        {"s3gen.safetensors",
         "flow.input_embedding.weight",
         {6561, 512},
         "embedding",
         0x37e85c689cd1a105,
         0x37e85c68c23c61db,
         0x56790d5f948f408f,
         {-0.324430823f, 0.37630868f, 0.72340405f, -0.915378451f},
         {0xbea61bcc, 0x3ec0ab88, 0x3f393102, 0xbf6a563e}},
        {"s3gen.safetensors",
         "speaker_encoder.xvector.tdnn.nonlinear.batchnorm.running_var",
         {128},
         "running_var",
         0x29beec8bd20d3ad1,
         0x29beec8b8ce0fa0f,
         0x17126c2b721923a6,
         {1.40987515f, 1.27452874f, 1.14791632f, 1.20420766f},
         {0x3fb476ca, 0x3fa323c2, 0x3f92eeec, 0x3f9a237a}},
        {"s3gen.safetensors",
         "mel2wav.conv_post.bias",
         {18},
         "hift_conv_post_bias",
         0x51e592e9f32a804d,
         0x51e592e9adc74093,
         0x95f8dfdc3e2ed1e9,
         {-2.99656677f, -3.00441003f, -3.0056231f, -2.98022962f},
         {0xc03fc7c0, 0xc0404841, 0xc0405c21, 0xc03ebc15}},
        {"s3gen.safetensors",
         "speaker_encoder.xvector.tdnn.linear.weight",
         {128, 320, 5},
         "fan_in_relu",
         0x2d2fb24df12cc791,
         0x2d2fb24dafc1074f,
         0x7265cc025a5de57b,
         {-0.00650758436f, 0.0383968316f, 0.0538817234f, -0.0592383966f},
         {0xbbd53d93, 0x3d1d45ff, 0x3d5cb315, 0xbd72a3f6}},
        {"ve.safetensors",
         "lstm.weight_ih_l0",
         {1024, 40},
         "fan_in",
         0xaaf6a1446cce0782,
         0xaaf6a1443223c75c,
         0xd1e93f8a70c597a4,
         {0.101181909f, -0.0553984456f, 0.134452447f, 0.0623081699f},
         {0x3dcf3876, 0xbd62e97b, 0x3e09ade7, 0x3d7f36da}},
    };
    return vectors;
}

} // namespace chatterbox::test
