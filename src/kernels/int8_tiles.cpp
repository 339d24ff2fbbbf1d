#include "kernels/int8_tiles.h"

#include "core/error.h"
#include "core/huge_pages.h"
#include "kernels/interned.h"
#include "kernels/tensor_rows.h"
#include "kernels/vector_activations.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <xmmintrin.h> // _mm_prefetch
#endif

namespace chatterbox::kernels {

namespace {

using int8_tiles::kBlock;
using int8_tiles::kColumns;
using int8_tiles::kRowsPerUnit;

constexpr int64_t kGroupsPerUnit = 2; // column groups of a work unit: the kernels' widest pass

// One weight [k, m] in tiles, the column groups (columns 16g ..) in pairs, the unit of work: a pair
// has its two tiles of block 0, then of block 1 ..., so that a unit reads one stream in order
// instead of two, which the prefetches of multiply() keep ahead of (the Zen 5 VM, a q4_K product of
// two rows streaming 512 MB of tiles on two threads: 31 GB/s with each group's tiles in a row, ~50
// paired, where the machine reads 51). The columns past m are zeros, and an odd last group has a
// tile of zeros beside it.
struct Packed {
    int64_t k = 0, m = 0, tile_bytes = 0;
    size_t bytes = 0;
    uint8_t *data = nullptr; // in its owner's arena

    // Bytes from data to group's tile of block (a block past the last is the next pair's, in order).
    int64_t tile_offset(int64_t group, int64_t block) const {
        const int64_t blocks = k / kBlock;
        return ((group / kGroupsPerUnit * blocks + block) * kGroupsPerUnit + group % kGroupsPerUnit) * tile_bytes;
    }
    const uint8_t *tile(int64_t group, int64_t block) const { return data + tile_offset(group, block); }
};

Packed pack_tiles(const TileFormat &format, HugePageArena &arena, const uint8_t *rows, int64_t k, int64_t m) {
    const int64_t blocks = k / kBlock, groups = (m + kColumns - 1) / kColumns;
    const int64_t units = (groups + kGroupsPerUnit - 1) / kGroupsPerUnit;
    const size_t row_bytes = ggml_row_size(format.type, k);
    Packed p;
    p.k = k;
    p.m = m;
    p.tile_bytes = format.tile_bytes;
    p.bytes = size_t(units * kGroupsPerUnit * blocks * p.tile_bytes);
    p.data = arena.allocate(p.bytes);
    std::memset(p.data, 0, p.bytes);
    for (int64_t g = 0; g < groups; ++g)
        for (int64_t b = 0; b < blocks; ++b) {
            uint8_t *tile = p.data + p.tile_offset(g, b);
            for (int64_t n = 0; n < kColumns && g * kColumns + n < m; ++n)
                format.pack_column(rows + size_t(g * kColumns + n) * row_bytes, b, n, tile);
        }
    return p;
}

// The threads of a product with many activation rows (a prefill) claim its work units from a
// counter instead of each taking an equal share: computing, one of two threads is often slower than
// the other, and the faster one waited at the barrier after every product (English q4_k prefill
// 346 -> 271 ms on the Zen 5 VM, median of 5 interleaved pairs). A product of a few rows (a decode step)
// is bound by reading the weights, which the thread left alone then reads faster; there the claims
// cost more than they win (English decode 1.08× slower), and the shares stay fixed. A unit's sums
// are the same whoever computes them, so the bits do not change. The counters live in the quantised
// activations' tensor, after its rows (reset by the quantisation, which a barrier separates from
// every product), one cache line each for the products that read the same activations (q, k and v
// of a layer; gate and up).
constexpr int kClaimSlots = 8;
constexpr int64_t kCounterBytes = 64;

struct TiledWeight;
// What a product node passes its op (interned): the weight, which counter of its activations it
// claims from, and its epilogue: the activation, and whether a bias and a residual follow the
// weight among the node's sources.
struct ProductParams {
    const TiledWeight *packed;
    int slot;
    Epilogue::Activation activation;
    bool bias, residual;
    bool operator<(const ProductParams &o) const {
        return std::tie(packed, slot, activation, bias, residual) <
               std::tie(o.packed, o.slot, o.activation, o.bias, o.residual);
    }
};

// A weight packed for one instruction set's passes of its format, with the rows per pass chosen at load.
struct TiledWeight final : PackedWeight {
    const TileFormat *format = nullptr;
    Packed weight;
    const int8_tiles::Kernels *isa = nullptr;
    int64_t rows_per_pass = 1;

    ggml_tensor *product(ggml_context *ctx, ggml_tensor *w, ggml_tensor *x) const override;
    ggml_tensor *product_with(ggml_context *ctx, ggml_tensor *w, ggml_tensor *x,
                              const Epilogue &epilogue) const override;
    size_t bytes() const override { return weight.bytes; }
};

#if defined(__x86_64__)
// Rows of a quantised activations tensor that hold the claim counters after `rows` rows of row_bytes
// (with room to align the first counter to a cache line).
int64_t counter_rows(int64_t row_bytes) { return (kCounterBytes * (kClaimSlots + 1) + row_bytes - 1) / row_bytes; }

int64_t *claim_counter(const ggml_tensor *activations, int64_t rows, int slot) {
    const auto first =
        reinterpret_cast<uintptr_t>(static_cast<uint8_t *>(activations->data) + rows * activations->nb[1]);
    const uintptr_t aligned = (first + kCounterBytes - 1) / kCounterBytes * kCounterBytes;
    return reinterpret_cast<int64_t *>(aligned + uintptr_t(slot) * kCounterBytes);
}

// The next units [begin, end) for one of nth threads, or false once all are claimed: chunks of the
// remainder shrinking as it does (guided), so that a dozen claims share a product between two threads.
bool claim_units(int64_t *counter, int64_t units, int nth, int64_t &begin, int64_t &end) {
    int64_t next = __atomic_load_n(counter, __ATOMIC_RELAXED);
    while (next < units) {
        const int64_t chunk = std::max<int64_t>(1, (units - next) / (2 * int64_t(nth)));
        if (__atomic_compare_exchange_n(counter, &next, next + chunk, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            begin = next;
            end = next + chunk;
            return true;
        }
    }
    return false;
}

// x (f32 [k, ne1, ne2, ne3], rows contiguous) -> dst (activation rows of the format in userdata,
// one per row of x, then the claim counters, zeroed).
void quantize_op(ggml_tensor *dst, int ith, int nth, void *userdata) {
    const TileFormat &format = *static_cast<const TileFormat *>(userdata);
    const ggml_tensor *a = dst->src[0];
    const int64_t k = a->ne[0], rows = a->ne[1] * a->ne[2] * a->ne[3], row_bytes = dst->nb[1];
    if (ith == 0)
        for (int slot = 0; slot < kClaimSlots; ++slot)
            __atomic_store_n(claim_counter(dst, rows, slot), 0, __ATOMIC_RELAXED);
    for (int64_t t = rows * ith / nth; t < rows * (ith + 1) / nth; ++t) {
        const auto *row = reinterpret_cast<const float *>(row_address(a, t));
        format.quantize_row(row, k, static_cast<uint8_t *>(dst->data) + t * row_bytes);
    }
}

// How far ahead of the tiles being multiplied a unit asks L1 for its stream, in whole blocks: four
// of q4_K (a pair of tiles 4.6 KiB), two of q8_0 (8.5 KiB): on the Zen 5 VM, q8_0 four blocks
// ahead (35 KiB) was slower than two in 15 of 16 interleaved decode pairs, by up to 1.4x
// (bench/history/2026-12-07-zen5-q8_0-tiles.md).
constexpr int64_t kPrefetchBytes = 19 * 1024;

// A product node's epilogue, resolved from its sources.
struct Finish {
    Epilogue::Activation activation = Epilogue::Activation::none;
    const float *bias = nullptr;           // [m], or nullptr
    const ggml_tensor *residual = nullptr; // of the node's shape, or nullptr

    // The sums of `count` rows from `row_first` (16 f32 each, of which `columns` from column `first`
    // are the result's) into their rows of out (m floats apart): bias, activation and residual in the
    // order ggml_add and the activation nodes would apply them, so the same bits.
    void write(float *sums, int64_t row_first, int64_t count, int64_t first, int64_t columns, float *out,
               int64_t m) const {
        if (bias)
            for (int64_t r = 0; r < count; ++r)
                for (int64_t c = 0; c < columns; ++c) sums[r * kColumns + c] += bias[first + c];
        if (activation == Epilogue::Activation::gelu_erf) gelu_erf_in_place(sums, count * kColumns);
        if (activation == Epilogue::Activation::gelu_tanh) gelu_tanh_in_place(sums, count * kColumns);
        for (int64_t r = 0; r < count; ++r) {
            float *row = sums + r * kColumns;
            if (residual) {
                const auto *added = reinterpret_cast<const float *>(row_address(residual, row_first + r)) + first;
                for (int64_t c = 0; c < columns; ++c) row[c] = added[c] + row[c];
            }
            // A whole tile's 16 columns as one fixed-size copy (vector moves): a call of memcpy per
            // row of 64 bytes was 4.5 % of Turbo's T3 prefill on the Zen 5 VM.
            float *to = out + (row_first + r) * m + first;
            if (columns == kColumns)
                std::memcpy(to, row, kColumns * sizeof(float));
            else
                std::memcpy(to, row, size_t(columns) * sizeof(float));
        }
    }
};

// out[r][n] = Σ_k weight[n][k] · a[r][k] for rows [row_first, row_end) and column groups
// [group_first, group_end) (at most kGroupsPerUnit) of a packed weight, finished by `finish`; row r
// of out at out + r * weight.m floats. The rows go through each tile one after another while it is
// in L1, their totals in memory.
void multiply(const TiledWeight &packed, int64_t group_first, int64_t group_end, const uint8_t *activations,
              int64_t row_first, int64_t row_end, const Finish &finish, float *out) {
    const Packed &weight = packed.weight;
    const int8_tiles::Kernels &isa = *packed.isa;
    const int64_t k = weight.k, blocks = k / kBlock, row_bytes = packed.format->activation_row_bytes(k);
    const int64_t per_pass = packed.rows_per_pass;
    const int64_t prefetch_blocks = std::max<int64_t>(1, kPrefetchBytes / (kGroupsPerUnit * weight.tile_bytes));
    alignas(64) float totals[kGroupsPerUnit][kRowsPerUnit * kColumns];
    const int64_t count = row_end - row_first, groups = group_end - group_first;
    const uint8_t *rows[kRowsPerUnit];
    for (int64_t r = 0; r < count; ++r) rows[r] = activations + (row_first + r) * row_bytes;
    for (int64_t g = 0; g < groups; ++g) std::fill_n(totals[g], count * kColumns, 0.0f);
    for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t *tiles[kGroupsPerUnit];
        for (int64_t g = 0; g < groups; ++g) tiles[g] = weight.tile(group_first + g, b);
        // The unit's stream is read once: ask L1 for the tiles ~19 KiB ahead while these are
        // multiplied (the q4_K measurement, four blocks: ~50 GB/s, against 33-39 asking L2 and
        // 40-48 at three or six blocks ahead; not tuned on other CPUs).
        const uint8_t *ahead = weight.tile(group_first, b + prefetch_blocks); // past the unit's blocks: the next unit's
        for (int64_t line = 0; line < kGroupsPerUnit * weight.tile_bytes; line += 64)
            _mm_prefetch(reinterpret_cast<const char *>(ahead + line), _MM_HINT_T0);
        for (int64_t r0 = 0; r0 < count; r0 += per_pass) {
            const int64_t n = std::min(per_pass, count - r0);
            float *const sums[kGroupsPerUnit] = {totals[0] + r0 * kColumns, totals[1] + r0 * kColumns};
            isa.passes[groups - 1][n - 1](tiles, b, rows + r0, k, sums);
        }
    }
    for (int64_t g = 0; g < groups; ++g) {
        const int64_t first = (group_first + g) * kColumns, columns = std::min(kColumns, weight.m - first);
        finish.write(totals[g], row_first, count, first, columns, out, weight.m);
    }
}

// Work units: two groups of 16 columns × up to 64 rows, column-major: each thread a contiguous
// range of a product of few rows, claimed by the threads otherwise.
void multiply_op(ggml_tensor *dst, int ith, int nth, void *userdata) {
    const ProductParams &params = *static_cast<const ProductParams *>(userdata);
    const TiledWeight &packed = *params.packed;
    const Packed &weight = packed.weight;
    const ggml_tensor *activations = dst->src[0];
    Finish finish;
    finish.activation = params.activation;
    int next_source = 2;
    if (params.bias) finish.bias = static_cast<const float *>(dst->src[next_source++]->data);
    if (params.residual) finish.residual = dst->src[next_source];
    const int64_t rows = dst->ne[1] * dst->ne[2] * dst->ne[3], groups = (weight.m + kColumns - 1) / kColumns;
    const int64_t column_units = (groups + kGroupsPerUnit - 1) / kGroupsPerUnit;
    const int64_t row_units = (rows + kRowsPerUnit - 1) / kRowsPerUnit;
    const int64_t units = column_units * row_units;
    const auto *quantized = static_cast<const uint8_t *>(activations->data);
    const auto run = [&](int64_t begin, int64_t end) {
        for (int64_t u = begin; u < end; ++u) {
            const int64_t g = u / row_units * kGroupsPerUnit, first = u % row_units * kRowsPerUnit;
            multiply(packed, g, std::min(groups, g + kGroupsPerUnit), quantized, first,
                     std::min(rows, first + kRowsPerUnit), finish, static_cast<float *>(dst->data));
        }
    };
    if (rows <= int8_tiles::kMaxRowsPerPass) return run(units * ith / nth, units * (ith + 1) / nth);
    int64_t *counter = claim_counter(activations, rows, params.slot);
    for (int64_t begin = 0, end = 0; claim_units(counter, units, nth, begin, end);) run(begin, end);
}

bool is_node(const ggml_tensor *t, const char *name) {
    return t->op == GGML_OP_CUSTOM && std::strcmp(t->name, name) == 0;
}

// Products in this context that already read `quantized` (each has claimed one of its counters).
int products_of(ggml_context *ctx, const TileFormat &format, const ggml_tensor *quantized) {
    int products = 0;
    for (ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t))
        if (is_node(t, format.multiply_node) && t->src[0] == quantized) ++products;
    return products;
}

// x quantised for the format's products, and the counter the next product of it claims from: the
// node made for an earlier product of the same x in this context if there is one with a counter left
// (q, k and v of a layer share their input, as do gate and up), else a new one.
struct QuantizedInput {
    ggml_tensor *tensor;
    int slot;
};
QuantizedInput quantized_activations(ggml_context *ctx, const TileFormat &format, ggml_tensor *x) {
    for (ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t))
        if (is_node(t, format.quantize_node) && t->src[0] == x)
            if (const int slot = products_of(ctx, format, t); slot < kClaimSlots) return {t, slot};
    const int64_t rows = x->ne[1] * x->ne[2] * x->ne[3], row_bytes = format.activation_row_bytes(x->ne[0]);
    ggml_tensor *quantized = ggml_custom_4d(ctx, GGML_TYPE_I8, row_bytes, rows + counter_rows(row_bytes), 1, 1, &x, 1,
                                            quantize_op, GGML_N_TASKS_MAX, const_cast<TileFormat *>(&format));
    return {ggml_set_name(quantized, format.quantize_node), 0};
}

// CPUID's F16C bit (clang's __builtin_cpu_supports has no name for it).
bool has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}
#endif

ggml_tensor *TiledWeight::product(ggml_context *ctx, ggml_tensor *w, ggml_tensor *x) const {
    return product_with(ctx, w, x, Epilogue{});
}

// The bias is added, the activation applied and the residual added to each 16 columns of the
// result as they are written (Finish).
ggml_tensor *TiledWeight::product_with(ggml_context *ctx, ggml_tensor *w, ggml_tensor *x,
                                       const Epilogue &epilogue) const {
    const char *type = ggml_type_name(format->type);
#if defined(__x86_64__)
    if (x->type != GGML_TYPE_F32 || x->ne[0] != w->ne[0] || x->nb[0] != sizeof(float))
        fail(type, " kernels: ", ggml_get_name(w), " needs f32 activations ggml [", w->ne[0],
             ", ...] with contiguous rows, got ", ggml_type_name(x->type), " [", x->ne[0], ", ...]");
    if (epilogue.activation != Epilogue::Activation::none && !vector_activations_available()) return nullptr;
    const ggml_tensor *bias = epilogue.bias, *residual = epilogue.residual;
    if (bias && (bias->type != GGML_TYPE_F32 || !ggml_is_contiguous(bias) || ggml_nelements(bias) != w->ne[1]))
        fail(type, " kernels: the bias of ", ggml_get_name(w), " must be a contiguous f32 [", w->ne[1], "]");
    if (residual &&
        (residual->type != GGML_TYPE_F32 || residual->nb[0] != sizeof(float) || residual->ne[0] != w->ne[1] ||
         residual->ne[1] != x->ne[1] || residual->ne[2] != x->ne[2] || residual->ne[3] != x->ne[3]))
        fail(type, " kernels: the residual added to ", ggml_get_name(w), "'s product must be f32 of its shape");
    const QuantizedInput quantized = quantized_activations(ctx, *format, x);
    ggml_tensor *args[4] = {quantized.tensor, w};
    int n_args = 2;
    if (bias) args[n_args++] = epilogue.bias;
    if (residual) args[n_args++] = epilogue.residual;
    const ProductParams params{this, quantized.slot, epilogue.activation, bias != nullptr, residual != nullptr};
    ggml_tensor *y = ggml_custom_4d(ctx, GGML_TYPE_F32, w->ne[1], x->ne[1], x->ne[2], x->ne[3], args, n_args,
                                    multiply_op, GGML_N_TASKS_MAX, const_cast<ProductParams *>(interned(params)));
    return ggml_set_name(y, format->multiply_node);
#else
    (void)ctx, (void)w, (void)x, (void)epilogue;
    fail(type, " kernels: not built for this CPU");
#endif
}

} // namespace

bool int8_isa_runs(Int8Isa isa) {
#if defined(__x86_64__)
    // Both sets quantise the activations with AVX2 (TileFormat::quantize_row).
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !has_f16c()) return false;
    if (isa == Int8Isa::avx2) return true;
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vnni");
#else
    (void)isa;
    return false;
#endif
}

const char *int8_isa_name(Int8Isa isa) { return isa == Int8Isa::avx512_vnni ? "AVX-512 VNNI" : "AVX2"; }

bool tile_packable(const TileFormat &format, const ggml_tensor *weight) {
    return weight->type == format.type && ggml_n_dims(weight) <= 2 && weight->ne[0] % kBlock == 0 &&
           ggml_is_contiguous(weight) && ggml_type_size(format.type) == format.block_bytes;
}

const char *TiledKernel::why_not_here() const {
    return isa_ == Int8Isa::avx512_vnni ? "the CPU has no AVX-512 F/BW/VL/DQ with VNNI (or AVX2, FMA and F16C)"
                                        : "the CPU has no AVX2 with FMA and F16C";
}

bool TiledKernel::takes(const ggml_tensor *weight, const KernelSelection &) const {
    return tile_packable(format_, weight);
}

// By default 4 on AMD CPUs, else the set's limit: the AVX-512 q4_K pass of 8 rows × 2 column groups
// keeps 32 sums, all the zmm registers, and spills some, which costs Zen 4 (512-bit operations in two
// halves) more than unpacking each chunk for 4 rows, while on the Intel VM 8 × 2 beat every other
// shape tried (bench/history/2026-12-04-zen4-kv-q8-huge-pages.md).
int TiledKernel::rows_per_pass(int asked) const {
    const int8_tiles::Kernels *kernels = format_.kernels(isa_);
    if (!kernels) return asked;
    int64_t rows = asked;
    if (rows == 0) {
#if defined(__x86_64__)
        static const bool amd = __builtin_cpu_is("amd");
        rows = amd ? 4 : int8_tiles::kMaxRowsPerPass;
#else
        rows = int8_tiles::kMaxRowsPerPass;
#endif
    }
    return int(std::min(kernels->rows_per_pass, rows));
}

std::unique_ptr<PackedWeight> TiledKernel::pack(const ggml_tensor *weight, const KernelSelection &selection,
                                                HugePageArena &arena) const {
    const char *type = ggml_type_name(format_.type);
    if (!tile_packable(format_, weight) || !weight->data || !weight->buffer ||
        !ggml_backend_buffer_is_host(weight->buffer))
        fail(type, " kernels: cannot pack ", ggml_get_name(weight), " (", ggml_type_name(weight->type), "): needs a ",
             type, " matrix in host memory with rows of whole 256-value blocks");
    const int8_tiles::Kernels *kernels = format_.kernels(isa_);
    if (!kernels) fail(type, " kernels: not built for this CPU");
    auto packed = std::make_unique<TiledWeight>();
    packed->format = &format_;
    packed->weight =
        pack_tiles(format_, arena, static_cast<const uint8_t *>(weight->data), weight->ne[0], weight->ne[1]);
    packed->isa = kernels;
    packed->rows_per_pass = rows_per_pass(selection.tile_rows_per_pass);
    return packed;
}

double TiledKernel::node_flops(const ggml_tensor *node) const {
    if (node->op != GGML_OP_CUSTOM || std::strcmp(node->name, format_.multiply_node) != 0) return 0;
    return 2.0 * double(node->src[1]->ne[0]) * double(ggml_nelements(node));
}

} // namespace chatterbox::kernels
