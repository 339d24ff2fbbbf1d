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

// WEIGHTS.md's Turbo section: the rules and names the Turbo checkpoints add.
inline const std::vector<SyntheticTestVector> &turbo_synthetic_test_vectors() {
    static const std::vector<SyntheticTestVector> vectors = {
        {"t3_turbo_v1.safetensors",
         "tfmr.h.0.attn.c_attn.weight",
         {1024, 3072},
         "fan_in_conv1d",
         0x2afd1939043bac76,
         0x2afd19395ad66ca8,
         0x6848168c15724053,
         {-0.00579062849f, 0.00155938044f, -0.010369271f, 0.00188500807f},
         {0xbbbdbf50, 0x3acc6420, 0xbc29e3e0, 0x3af71260}},
        {"t3_turbo_v1.safetensors",
         "tfmr.h.23.mlp.c_proj.weight",
         {4096, 1024},
         "fan_in_conv1d",
         0x540a395ceb0423f5,
         0x540a395cb5e9e32b,
         0xae1cc60cc06bcf52,
         {0.00562895462f, 0.0125405155f, 0.0117065776f, -0.00929931365f},
         {0x3bb87318, 0x3c4d76bc, 0x3c3fccf2, 0xbc185c26}},
        {"t3_turbo_v1.safetensors",
         "tfmr.wpe.weight",
         {8196, 1024},
         "embedding",
         0x13f7909e69d0be86,
         0x13f7909e373d7e58,
         0xa0df91b846921280,
         {0.256822705f, -0.913877249f, 0.143298626f, 0.457721233f},
         {0x3e837e44, 0xbf69f3dc, 0x3e12bce0, 0x3eea5a70}},
        {"t3_turbo_v1.safetensors",
         "tfmr.wte.weight",
         {50276, 1024},
         "embedding",
         0x24777caf84137402,
         0x24777cafdafeb4dc,
         0xf013d64c3e8ff394,
         {0.875605345f, -0.832877398f, 0.958254814f, 0.823986769f},
         {0x3f6027ac, 0xbf553774, 0x3f755030, 0x3f52f0cc}},
        {"t3_turbo_v1.safetensors",
         "speech_head.bias",
         {6563},
         "bias",
         0x9bbbbae5fab5cac1,
         0x9bbbbae5a4580a1f,
         0xec41cd478cf96f92,
         {0.0169151612f, -0.0132117365f, -0.0146736717f, -0.0142068891f},
         {0x3c8a91aa, 0xbc58760a, 0xbc7069d7, 0xbc68c403}},
        {"t3_turbo_v1.safetensors",
         "tfmr.h.0.ln_1.weight",
         {1024},
         "norm_weight",
         0xf910ef1d1bea14fe,
         0xf910ef1d4507d420,
         0xea351f3978e9f661,
         {1.08297467f, 0.933888674f, 0.96657759f, 0.981529415f},
         {0x3f8a9eea, 0x3f6f1354, 0x3f7771a1, 0x3f7b4583}},
        {"s3gen_meanflow.safetensors",
         "flow.decoder.estimator.time_embed_mixer.weight",
         {1024, 2048},
         "fan_in",
         0x709db043f6aea994,
         0x709db043a843694a,
         0xa1468c29ea7e28f8,
         {0.00574447867f, 0.013335092f, -0.0147906383f, -0.0200460237f},
         {0x3bbc3c2e, 0x3c5a7b6e, 0xbc72546f, 0xbca4378f}},
    };
    return vectors;
}

} // namespace chatterbox::test
