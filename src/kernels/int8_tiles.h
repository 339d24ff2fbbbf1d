#pragma once
// Products of quantised weights with f32 activations on x86 CPUs with AVX2 or AVX-512 VNNI, as ggml
// custom ops: the engine's replacement for ggml's own kernels of those weight types there. One driver
// (int8_tiles.cpp) for every weight format; a format (kernels/q4k.h, kernels/q8_0.h) brings its tile
// layout, its packing, its activations' quantisation and its register-blocked passes.
//
// Why: a batched T3 step multiplies every weight with 2 rows per request. ggml's repacked q4_K gemm
// (0.22) unpacks each weight block once per 4 rows with maddubs/madd, so 16 rows cost 3.6× two
// (bench/history/2026-12-03-t3-batching-intel.md), and that was 72 % of an 8-request step. Here a block
// of the weight (16 columns × 4 K with AVX-512, 8 columns × 4 K with AVX2) is unpacked once into one
// register and multiplied into several rows, the rows' activations broadcast from memory: with
// `vpdpbusd` (64 multiply-adds per instruction), or with AVX2's `vpmaddubsw`.
//
// The weight is packed at load time into tiles of 16 columns × 256 values, the two column groups of a
// work unit interleaved block by block so that a unit reads one stream. The activations are quantised
// per row to 8 bits (one node, shared by the products of one input); the block sums are exact
// integers, and each output adds its blocks in order in f32. A row's result therefore depends on that
// row alone: the same bits in any batch, tile, column split or thread count (so a batched request gets
// the logits it gets alone), and on either instruction set. It equals ggml's own product of the type
// (which quantises the activations the same way) up to the order of its f32 sums.

#include "kernels/int8_tiles_kernels.h"
#include "kernels/matmul_kernel.h"

#include "ggml.h"

namespace chatterbox::kernels {

// The instruction sets the kernels come in; on either a row's result is the same bits.
enum class Int8Isa { avx2, avx512_vnni };
// Whether this build and CPU run the set (x86-64 with AVX2, FMA and F16C; AVX-512 F/BW/VL/DQ and VNNI).
bool int8_isa_runs(Int8Isa isa);
const char *int8_isa_name(Int8Isa isa);

// Rows multiplied into each unpacked weight register, at most a format's own limit in a set
// (KernelSelection::tile_rows_per_pass; 0: the CPU's default, TiledKernel::rows_per_pass).
constexpr int kInt8MaxRowsPerPass = int(int8_tiles::kMaxRowsPerPass);

// What a weight format brings to the driver.
struct TileFormat {
    const char *kernel_names[2];               // by Int8Isa: for KernelSelection, options and benchmarks
    const char *quantize_node, *multiply_node; // the names of its graph nodes
    ggml_type type;                            // of the weights it takes (rows of whole 256-value blocks)
    size_t block_bytes;                        // of one of ggml's blocks of the type, as pack_column reads them
    int64_t tile_bytes;                        // 16 columns × 256 values, a multiple of 64
    int64_t (*activation_row_bytes)(int64_t k);
    // One row of k f32 values into activation_row_bytes(k) bytes (built with AVX2: every CPU with
    // the AVX-512 set has it too).
    void (*quantize_row)(const float *x, int64_t k, uint8_t *out);
    // Column n (0 .. 15) of block b's tile, from that column's row of the weight in ggml's layout.
    void (*pack_column)(const uint8_t *row, int64_t b, int64_t n, uint8_t *tile);
    // The passes of a set (nullptr where this build has none).
    const int8_tiles::Kernels *(*kernels)(Int8Isa isa);
};

// The matmul kernel of a format in one instruction set: it takes the format's 2-D weights whose rows
// are whole 256-value blocks, packs them into the binder's huge-page arena (core/huge_pages.h) and
// multiplies only that copy.
class TiledKernel final : public MatmulKernel {
  public:
    TiledKernel(const TileFormat &format, Int8Isa isa) : format_(format), isa_(isa) {}
    const char *name() const override { return format_.kernel_names[int(isa_)]; }
    bool runs_here() const override { return int8_isa_runs(isa_); }
    const char *why_not_here() const override;
    bool takes(const ggml_tensor *weight, const KernelSelection &selection) const override;
    std::unique_ptr<PackedWeight> pack(const ggml_tensor *weight, const KernelSelection &selection,
                                       HugePageArena &arena) const override;
    double node_flops(const ggml_tensor *node) const override;
    // What the set takes when `asked` rows per pass are asked for (0: the CPU's default).
    int rows_per_pass(int asked) const;

  private:
    const TileFormat &format_;
    const Int8Isa isa_;
};

// Whether a weight has the shape and type a format's kernels take.
bool tile_packable(const TileFormat &format, const ggml_tensor *weight);

} // namespace chatterbox::kernels
