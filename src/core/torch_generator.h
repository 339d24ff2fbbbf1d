#pragma once
// PyTorch's CPU generator, so that a seed means here what torch.manual_seed means in the official
// code: the same MT19937 stream and the same transforms from its words to numbers, draw for draw
// (golden/torch_rng/, tests/data/torch_rng/).
//
//   torch.manual_seed(s)        MT19937 init_genrand(s & 0xffffffff); the cached normal cleared
//   random() / random64()       one 32-bit word / two words, the first the high half
//   rand float32 / float64      24 bits of one word · 2^-24 / 53 bits of random64() · 2^-53
//   exponential_(1) (float)     (float)(-log1p(-u)), u a 53-bit double: one per element, in order
//   multinomial(p, 1)           argmax(p / q), q = exponential_(1) over the whole row (the Gumbel
//                               trick of ATen's one-sample path): 2 words per element of the row
//   randn float32, n >= 16      every uniform drawn first, then Box-Muller on blocks of 16: u1 =
//                               1 - a[j], u2 = a[j + 8], cos into a[j], sin into a[j + 8]; when 16
//                               does not divide n, 16 fresh uniforms replace the last 16 and that
//                               block is transformed again (the tail overlaps the previous block)
//   randn float32, n < 16       normal_distribution<double> per element (two 53-bit uniforms, one
//                               value returned and the other cached in the generator)
//
// The float32 Box-Muller of n >= 16 is the ATen kernel of the CPU capability it dispatches to:
// AVX2 (also chosen on AVX-512 CPUs, which ATen's normal kernel does not dispatch to) computes log,
// sin and cos with the Cephes polynomials of avx_mathfun.h in float; the scalar kernel (CPUs
// without AVX2, or ATEN_CPU_CAPABILITY=default) calls libm in float. NormalKernel picks one;
// avx2 is what torch gives on x86-64 and what the golden set was recorded with; both are checked
// against torch 1.13 (the scalar one with ATEN_CPU_CAPABILITY=default).
//
// MKL: the torch 2.6.0 wheel that chatterbox pins (Python 3.10-3.13) draws exponential_ on ATen's
// own path, reproduced here: after manual_seed(42) and rand(5), its exponential_ row reads 1.6459,
// 0.4294, 0.0677, 1.3809, 0.7803 (pytorch#150538, the stable 2.6.0 wheel), which this generator
// draws (unit.test_torch_generator). From the 2.7 nightlies (pytorch 738ebb4, Feb 2025) x86 wheels
// built with MKL draw exponential_ from a separate MKL VSL generator instead; chatterbox takes
// torch >= 2.9 on Python 3.14, so its multinomial draws there differ and are not reproduced.
// normal_ (randn) and uniform_ have no MKL path.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace chatterbox {

enum class NormalKernel { avx2, scalar };

class TorchGenerator {
  public:
    // torch's default seed (c10::detail::default_rng_seed_val) when none is given.
    static constexpr uint64_t kDefaultSeed = 67280421310721ull;

    explicit TorchGenerator(uint64_t seed = kDefaultSeed, NormalKernel normal_kernel = NormalKernel::avx2);

    // torch.manual_seed(seed): only the low 32 bits seed MT19937, as in ATen.
    void manual_seed(uint64_t seed);

    uint32_t random() { // the next 32-bit word
        if (next_ == kStateWords) refill();
        return block_[next_++];
    }
    uint64_t random64(); // two words, the first the high half
    float uniform_float();
    double uniform_double();
    // at::normal_distribution<double>(0, 1): Box-Muller on two 53-bit uniforms, the second value
    // kept for the next call.
    double normal_double();

    void rand(float *out, size_t n);        // torch.rand(n)
    void rand(double *out, size_t n);       // torch.rand(n, dtype=torch.float64)
    void randn(float *out, size_t n);       // torch.randn(n), contiguous float32
    void exponential(float *out, size_t n); // torch.empty(n).exponential_(1)

    std::vector<float> rand(size_t n);
    std::vector<float> randn(size_t n);

    // torch.multinomial(probs[:n], 1): argmax(probs / q) with q = exponential_(1) over the row, in
    // element order (2 words per element). The first index wins ties, as torch.argmax; a NaN
    // quotient (0 / 0: a removed token whose q is 0) wins, as with torch.argmax.
    int multinomial_one(const float *probs, size_t n);

  private:
    static constexpr size_t kStateWords = 624;
    void refill(); // the next 624 words: MT19937's twist, then its tempering over the whole block

    // MT19937 (at::mt19937, std::mt19937) generated a block at a time, so that the tempering runs
    // as one vector loop: a multinomial row takes 2 words per vocabulary entry.
    uint32_t state_[kStateWords];
    uint32_t block_[kStateWords];
    size_t next_ = kStateWords;
    std::optional<double> next_double_normal_;
    NormalKernel normal_kernel_;
};

} // namespace chatterbox
