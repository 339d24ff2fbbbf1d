#pragma once
// Products of q4_K weights with f32 activations on x86 CPUs with AVX2 or AVX-512 VNNI, as ggml
// custom ops: the engine's replacement for ggml's repacked q4_K kernels there.
//
// Why: a batched T3 step multiplies every weight with 2 rows per request. ggml's repacked q4_K gemm
// (0.22) unpacks each weight block once per 4 rows with maddubs/madd, so 16 rows cost 3.6× two
// (bench/README.md, "T3 continuous batching"), and that was 72 % of an 8-request step. Here a block
// of the weight (16 columns × 4 K with AVX-512, 8 columns × 4 K with AVX2) is unpacked once into one
// register and multiplied into up to 8 (AVX2: 4) rows, the rows' activations broadcast from memory:
// with `vpdpbusd` (64 multiply-adds per instruction), or with AVX2's `vpmaddubsw` pair sums added in
// 16 bits over a sub-block. The layout of the packed weights is the same for both.
//
// Numbers: activations are quantised per row to 8 bits per 256 values (scale max|x|/127, round to
// nearest even, like ggml's q8_K), the block sums are exact integers, and each output adds its 256-
// value blocks in order in f32. A row's result therefore depends on that row alone: the same bits
// in any batch, tile, column split or thread count (so a batched request gets the logits it gets
// alone). It equals ggml's own q4_K product up to that summation order.
//
//   Q4kWeights packed;                           // the owner of a module's packed weights
//   packed.add(weight);                          // a bound q4_K tensor ggml [K, M] in host memory
//   ggml_tensor *y = q4k_matmul(ctx, weight, x); // nullptr when `weight` was not packed

#include "ggml-backend.h"
#include "ggml.h"

#include <cstddef>
#include <memory>
#include <vector>

namespace chatterbox::kernels {

// Built for x86-64 and running on a CPU with AVX2 (with FMA and F16C) or AVX-512 F/BW/VL/DQ and VNNI.
bool q4k_available();

// The instruction sets the kernels come in; on either a row's result is the same bits.
enum class Q4kIsa { avx2, avx512_vnni };
// Those this CPU runs, narrowest first (empty where q4k_available() is false).
std::vector<Q4kIsa> q4k_isas();
// The set the kernels use: by default the widest this CPU runs. Tests and benchmarks that compare
// them switch it (one of q4k_isas(), else an error); process-wide, switched while no graph runs.
void q4k_use_isa(Q4kIsa isa);
Q4kIsa q4k_isa();
const char *q4k_isa_name(Q4kIsa isa);

// Rows multiplied into each unpacked weight register, at most the set's own limit (AVX2 4, AVX-512
// VNNI 8); a row's result is the same bits for any. By default 4 on AMD CPUs, else the limit: the
// AVX-512 pass of 8 rows × 2 column groups keeps 32 sums, all the zmm registers, and spills some,
// which costs Zen 4 (512-bit operations in two halves) more than unpacking each chunk for 4 rows,
// while on the Intel VM 8 × 2 beat every other shape tried (bench/README.md, "Huge pages, and the
// q4_K pass on Zen 4"). Tests and benchmarks switch it (1 .. 8; 0: the default); process-wide,
// switched while no graph runs. q4k_rows_per_pass() is what the set in use takes.
void q4k_use_rows_per_pass(int rows);
int q4k_rows_per_pass();

// Whether a weight has the shape the kernels take: q4_K, 2-D, rows of whole 256-value blocks.
bool q4k_packable(const ggml_tensor *weight);

// Copies of q4_K weights in the kernels' layout (16 columns interleaved per 256-value block, the 6-bit
// scales and mins unpacked), made at load time, in huge pages where the system gives them
// (core/huge_pages.h). The owner of the weights keeps one; it must outlive
// every graph built on them (graphs of concurrent sessions may share it). The ggml tensors stay as
// they are (in place in the model file where they can), but only these copies are read.
class Q4kWeights {
  public:
    Q4kWeights();
    ~Q4kWeights();
    Q4kWeights(const Q4kWeights &) = delete;
    Q4kWeights &operator=(const Q4kWeights &) = delete;

    // Packs `weight` (q4k_packable, data in host memory, bound to its buffer) and registers the
    // copy under the tensor's buffer and data for q4k_matmul to find.
    void add(const ggml_tensor *weight);
    size_t bytes() const; // of all copies

    struct State;

  private:
    std::unique_ptr<State> state_;
};

// weight ggml [K, M] × x f32 ggml [K, ...] -> f32 ggml [M, ...] through the packed copy of `weight`
// (or of the tensor it views), or nullptr when no Q4kWeights holds one (ggml_mul_mat then).
ggml_tensor *q4k_matmul(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x);

// The FLOPs (2 per multiply-add) of a product node made by q4k_matmul, recognised by its name;
// 0 for any other node. For FLOP counts over a graph.
double q4k_matmul_flops(const ggml_tensor *node);

} // namespace chatterbox::kernels
