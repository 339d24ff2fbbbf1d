#include "core/torch_generator.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace chatterbox {

namespace {

uint32_t float_bits(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return bits;
}

float bits_float(uint32_t bits) {
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
}

// The Cephes single-precision log, sin and cos as ATen's AVX2 normal kernel evaluates them
// (avx_mathfun.h, after Pommier's sse_mathfun): every step one float operation in the same order,
// so each lane's result is reproduced to the bit. ATen's build (GCC, -mfma) fuses a product into
// the addition that is its only use; those are the std::fma here, found against torch's draws. Any
// other fusion would round differently, so this file is built with -ffp-contract=off.
namespace cephes {

constexpr float kSqrtHalf = 0.707106781186547524f;
constexpr float kLogP[9] = {7.0376836292E-2f,  -1.1514610310E-1f, 1.1676998740E-1f,
                            -1.2420140846E-1f, +1.4249322787E-1f, -1.6668057665E-1f,
                            +2.0000714765E-1f, -2.4999993993E-1f, +3.3333331174E-1f};
constexpr float kLogQ1 = -2.12194440e-4f;
constexpr float kLogQ2 = 0.693359375f;

// x in (0, 1]: the only arguments Box-Muller gives it.
float log(float x) {
    x = std::max(x, 0x1p-126f); // denormals cut off to the smallest normal
    const uint32_t bits = float_bits(x);
    float e = float(int32_t(bits >> 23) - 0x7f) + 1.0f;
    float m = bits_float((bits & ~0x7f800000u) | float_bits(0.5f)); // [0.5, 1)
    const bool below = m < kSqrtHalf;
    const float doubled = below ? m : 0.0f;
    m = m - 1.0f;
    e = e - (below ? 1.0f : 0.0f);
    m = m + doubled;
    const float z = m * m;
    float y = kLogP[0];
    for (int k = 1; k < 9; ++k) y = std::fma(y, m, kLogP[k]);
    y = y * m;
    y = std::fma(y, z, e * kLogQ1);
    y = std::fma(-z, 0.5f, y);
    m = m + y;
    return std::fma(e, kLogQ2, m);
}

constexpr float kFourOverPi = 1.27323954473516f;
constexpr float kMinusDp[3] = {-0.78515625f, -2.4187564849853515625e-4f, -3.77489497744594108e-8f};
constexpr float kSinP[3] = {-1.9515295891E-4f, 8.3321608736E-3f, -1.6666654611E-1f};
constexpr float kCosP[3] = {2.443315711809948E-005f, -1.388731625493765E-003f, 4.166664568298827E-002f};

float flip_sign(float v, bool flip) { return flip ? bits_float(float_bits(v) ^ 0x80000000u) : v; }

void sincos(float x, float &sin_out, float &cos_out) {
    const bool negative = std::signbit(x);
    x = std::fabs(x);
    int32_t j = int32_t(x * kFourOverPi); // truncation, as cvttps
    j = (j + 1) & ~1;
    const float y = float(j);
    const bool sin_swap = (j & 4) != 0;
    const bool cos_poly_is_sin = (j & 2) != 0; // the lane's polynomial choice
    const bool cos_flip = ((~(j - 2)) & 4) != 0;
    x = std::fma(y, kMinusDp[0], x);
    x = std::fma(y, kMinusDp[1], x);
    x = std::fma(y, kMinusDp[2], x);
    const float z = x * x;
    float c = kCosP[0];
    c = std::fma(c, z, kCosP[1]);
    c = std::fma(c, z, kCosP[2]);
    c = c * z;
    c = std::fma(c, z, -(z * 0.5f));
    c = c + 1.0f;
    float s = kSinP[0];
    s = std::fma(s, z, kSinP[1]);
    s = std::fma(s, z, kSinP[2]);
    s = s * z;
    s = std::fma(s, x, x);
    // The kernel selects with masks and adds the other polynomial's zeroed lane (+0 or x - x), so
    // a -0 result becomes +0 exactly as there.
    const float sin_from_sin = cos_poly_is_sin ? 0.0f : s, sin_from_cos = cos_poly_is_sin ? c : 0.0f;
    const float cos_rest_sin = s - sin_from_sin, cos_rest_cos = c - sin_from_cos;
    sin_out = flip_sign(sin_from_cos + sin_from_sin, negative != sin_swap);
    cos_out = flip_sign(cos_rest_cos + cos_rest_sin, cos_flip);
}

} // namespace cephes

constexpr double kPi = 3.14159265358979323846;

// One block of 16 uniforms in place -> 16 normals (ATen's normal_fill_16, mean 0, std 1).
void box_muller_16(float *data, NormalKernel kernel) {
    for (int j = 0; j < 8; ++j) {
        const float u1 = 1.0f - data[j]; // [0, 1) -> (0, 1] for the log
        const float u2 = data[j + 8];
        if (kernel == NormalKernel::avx2) {
            const float radius = std::sqrt(-2.0f * cephes::log(u1));
            float sin_theta = 0, cos_theta = 0;
            cephes::sincos(float(2.0 * kPi) * u2, sin_theta, cos_theta);
            // The kernel's fmadd(n, std 1, mean 0): exact, but -0 becomes +0.
            data[j] = radius * cos_theta + 0.0f;
            data[j + 8] = radius * sin_theta + 0.0f;
        } else {
            // normal_fill_16<float>: float throughout, theta rounded to float before libm.
            const float radius = std::sqrt(-2.0f * std::log(u1));
            const float theta = float(2.0f * kPi * u2);
            data[j] = radius * std::cos(theta) * 1.0f + 0.0f;
            data[j + 8] = radius * std::sin(theta) * 1.0f + 0.0f;
        }
    }
}

} // namespace

TorchGenerator::TorchGenerator(uint64_t seed, NormalKernel normal_kernel) : normal_kernel_(normal_kernel) {
    manual_seed(seed);
}

void TorchGenerator::manual_seed(uint64_t seed) {
    // MT19937's init_genrand on the low 32 bits, as at::mt19937.
    state_[0] = uint32_t(seed & 0xffffffffu);
    for (size_t i = 1; i < kStateWords; ++i)
        state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + uint32_t(i);
    next_ = kStateWords;
    next_double_normal_.reset();
}

void TorchGenerator::refill() {
    constexpr size_t n = kStateWords, m = 397;
    auto mixed = [](uint32_t upper, uint32_t lower, uint32_t far) {
        const uint32_t y = (upper & 0x80000000u) | (lower & 0x7fffffffu);
        return far ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    };
    // In three runs, so that each reads only words of the same generation (the first two vectorise).
    for (size_t i = 0; i < n - m; ++i) state_[i] = mixed(state_[i], state_[i + 1], state_[i + m]);
    for (size_t i = n - m; i < n - 1; ++i) state_[i] = mixed(state_[i], state_[i + 1], state_[i + m - n]);
    state_[n - 1] = mixed(state_[n - 1], state_[0], state_[m - 1]);
    for (size_t i = 0; i < n; ++i) {
        uint32_t y = state_[i];
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c5680u;
        y ^= (y << 15) & 0xefc60000u;
        block_[i] = y ^ (y >> 18);
    }
    next_ = 0;
}

uint64_t TorchGenerator::random64() {
    const uint64_t high = random();
    return (high << 32) | random();
}

float TorchGenerator::uniform_float() { return float(random() & ((1u << 24) - 1)) * 0x1.0p-24f; }

double TorchGenerator::uniform_double() { return double(random64() & ((1ull << 53) - 1)) * 0x1.0p-53; }

double TorchGenerator::normal_double() {
    if (next_double_normal_) {
        const double cached = *next_double_normal_;
        next_double_normal_.reset();
        return cached;
    }
    const double u1 = uniform_double();
    const double u2 = uniform_double();
    const double radius = std::sqrt(-2.0 * std::log1p(-u2));
    const double theta = 2.0 * kPi * u1;
    next_double_normal_ = radius * std::sin(theta);
    return radius * std::cos(theta);
}

void TorchGenerator::rand(float *out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = uniform_float();
}

void TorchGenerator::rand(double *out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = uniform_double();
}

void TorchGenerator::randn(float *out, size_t n) {
    if (n < 16) {
        for (size_t i = 0; i < n; ++i) out[i] = float(normal_double());
        return;
    }
    rand(out, n);
    for (size_t i = 0; i + 16 <= n; i += 16) box_muller_16(out + i, normal_kernel_);
    if (n % 16 != 0) {
        float *tail = out + n - 16;
        rand(tail, 16);
        box_muller_16(tail, normal_kernel_);
    }
}

void TorchGenerator::exponential(float *out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = float(-std::log1p(-uniform_double()));
}

std::vector<float> TorchGenerator::rand(size_t n) {
    std::vector<float> out(n);
    rand(out.data(), n);
    return out;
}

std::vector<float> TorchGenerator::randn(size_t n) {
    std::vector<float> out(n);
    randn(out.data(), n);
    return out;
}

int TorchGenerator::multinomial_one(const float *probs, size_t n) {
    // argmax(p / q) with q_i = (float)(-log1p(-u_i)). A removed token (p = 0) has ratio 0 whatever
    // q is, unless q = 0 (u = 0: 0 / 0 is NaN, which torch.argmax takes), so its log1p is skipped;
    // its two words are drawn all the same. After min-p most of the row is removed, so the row
    // costs little more than its MT19937 words.
    int best = 0;
    float best_ratio = -INFINITY;
    for (size_t i = 0; i < n; ++i) {
        const double u = uniform_double();
        float ratio;
        if (probs[i] == 0.0f) {
            if (u == 0.0) return int(i);
            ratio = 0.0f;
        } else {
            ratio = probs[i] / float(-std::log1p(-u));
            if (std::isnan(ratio)) return int(i);
        }
        if (ratio > best_ratio) {
            best_ratio = ratio;
            best = int(i);
        }
    }
    return best;
}

} // namespace chatterbox
