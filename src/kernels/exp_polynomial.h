#pragma once
// exp(x) = 2^j · p(r), j = round(x·log2 e), r = x − j·ln 2 (ln 2 in two parts), p the Cephes expf
// polynomial (relative error ~1e-7): the constants the vector exponentiations share.

namespace chatterbox::kernels::exp_polynomial {

constexpr float kLog2e = 1.44269504088896341f, kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f;
// p(r) = 1 + r + r²·(c0·r⁵ + c1·r⁴ + … + c5), Horner from c0.
constexpr float kCoefficients[] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                   4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
constexpr float kLowest = -87.0f; // below it 2^j leaves the normal floats

} // namespace chatterbox::kernels::exp_polynomial
