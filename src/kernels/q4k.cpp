#include "kernels/q4k.h"

#include "core/error.h"
#include "core/huge_pages.h"
#include "kernels/interned.h"
#include "kernels/q4k_kernels.h"
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

using q4k::kBlock;
using q4k::kColumns;
using q4k::kSubBlocks;
using q4k::kTileBytes;

// ggml's block_q4_K: f16 d, f16 dmin, 12 bytes of packed 6-bit scales and mins, 128 bytes of quants.
constexpr size_t kQ4kBlockBytes = 144, kQ4kScales = 4, kQ4kQuants = 16;

// Sub-block j's 6-bit scale and min (ggml's get_scale_min_k4).
void scale_and_min(int j, const uint8_t *q, uint8_t &scale, uint8_t &min) {
    if (j < 4) {
        scale = q[j] & 63;
        min = q[j + 4] & 63;
    } else {
        scale = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

// Column n (0 .. 15) of a tile from one q4_K block.
void pack_column(const uint8_t *block, int64_t n, uint8_t *tile) {
    uint8_t values[kBlock];
    const uint8_t *quants = block + kQ4kQuants;
    // ggml: 32 bytes per 64 values, low nibbles the first 32, high nibbles the next.
    for (int64_t quarter = 0; quarter < kBlock / 64; ++quarter)
        for (int64_t l = 0; l < 32; ++l) {
            values[64 * quarter + l] = quants[32 * quarter + l] & 0xF;
            values[64 * quarter + 32 + l] = quants[32 * quarter + l] >> 4;
        }
    for (int64_t c = 0; c < kBlock / 8; ++c)
        for (int64_t i = 0; i < 4; ++i)
            tile[q4k::kQuantsOffset + c * 64 + n * 4 + i] = uint8_t(values[8 * c + i] | values[8 * c + 4 + i] << 4);
    for (int j = 0; j < kSubBlocks; ++j) {
        uint8_t scale, min;
        scale_and_min(j, block + kQ4kScales, scale, min);
        tile[q4k::kScalesOffset + 16 * j + n] = scale;
        tile[q4k::kMinsOffset + 32 * (j / 2) + 2 * n + j % 2] = min;
    }
    std::memcpy(tile + q4k::kDOffset + 2 * n, block, 2);
    std::memcpy(tile + q4k::kDminOffset + 2 * n, block + 2, 2);
}

constexpr int64_t kGroupsPerUnit = 2; // column groups of a work unit: the kernels' widest pass

// One weight [k, m] in tiles, the column groups (columns 16g ..) in pairs, the unit of work: a pair
// has its two tiles of block 0, then of block 1 ..., so that a unit reads one stream in order
// instead of two, which the prefetches of multiply() keep ahead of (the Zen 5 VM, a product of two
// rows streaming 512 MB of tiles on two threads: 31 GB/s with each group's tiles in a row, ~50
// paired, where the machine reads 51). The columns past m are zeros, and an odd last group has a
// tile of zeros beside it.
struct Packed {
    int64_t k = 0, m = 0;
    size_t bytes = 0;
    uint8_t *data = nullptr; // in its owner's arena

    // Bytes from data to group's tile of block (a block past the last is the next pair's, in order).
    int64_t tile_offset(int64_t group, int64_t block) const {
        const int64_t blocks = k / kBlock;
        return ((group / kGroupsPerUnit * blocks + block) * kGroupsPerUnit + group % kGroupsPerUnit) * kTileBytes;
    }
    const uint8_t *tile(int64_t group, int64_t block) const { return data + tile_offset(group, block); }
};

Packed pack_tiles(HugePageArena &arena, const uint8_t *rows, int64_t k, int64_t m) {
    const int64_t blocks = k / kBlock, groups = (m + kColumns - 1) / kColumns;
    const int64_t units = (groups + kGroupsPerUnit - 1) / kGroupsPerUnit;
    Packed p;
    p.k = k;
    p.m = m;
    p.bytes = size_t(units * kGroupsPerUnit * blocks * kTileBytes);
    p.data = arena.allocate(p.bytes);
    std::memset(p.data, 0, p.bytes);
    for (int64_t g = 0; g < groups; ++g)
        for (int64_t b = 0; b < blocks; ++b) {
            uint8_t *tile = p.data + p.tile_offset(g, b);
            for (int64_t n = 0; n < kColumns && g * kColumns + n < m; ++n)
                pack_column(rows + ((g * kColumns + n) * blocks + b) * kQ4kBlockBytes, n, tile);
        }
    return p;
}

#if defined(__x86_64__)
const q4k::Kernels &isa_kernels(Q4kIsa isa) {
    return isa == Q4kIsa::avx512_vnni ? q4k::avx512_vnni_kernels() : q4k::avx2_kernels();
}
#endif

// The rows per pass a set takes when `asked` (0: the CPU's default, q4k.h) are asked for.
int64_t rows_per_pass(const q4k::Kernels &isa, int asked) {
    int64_t rows = asked;
    if (rows == 0) {
#if defined(__x86_64__)
        static const bool amd = __builtin_cpu_is("amd");
        rows = amd ? 4 : q4k::kMaxRowsPerPass;
#else
        rows = q4k::kMaxRowsPerPass;
#endif
    }
    return std::min(isa.rows_per_pass, rows);
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

struct Q4kPacked;
// What a product node passes its op (interned): the weight, which counter of its activations it
// claims from, and its epilogue: the activation, and whether a bias and a residual follow the
// weight among the node's sources.
struct ProductParams {
    const Q4kPacked *packed;
    int slot;
    Epilogue::Activation activation;
    bool bias, residual;
    bool operator<(const ProductParams &o) const {
        return std::tie(packed, slot, activation, bias, residual) <
               std::tie(o.packed, o.slot, o.activation, o.bias, o.residual);
    }
};

// A weight packed for one instruction set's kernels, with the rows per pass chosen at load.
struct Q4kPacked final : PackedWeight {
    Packed weight;
    const q4k::Kernels *isa = nullptr;
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

// x (f32 [k, ne1, ne2, ne3], rows contiguous) -> dst (activation rows, one per row of x, then the
// claim counters, zeroed).
void quantize_op(ggml_tensor *dst, int ith, int nth, void *) {
    const ggml_tensor *a = dst->src[0];
    const int64_t k = a->ne[0], rows = a->ne[1] * a->ne[2] * a->ne[3], row_bytes = dst->nb[1];
    if (ith == 0)
        for (int slot = 0; slot < kClaimSlots; ++slot)
            __atomic_store_n(claim_counter(dst, rows, slot), 0, __ATOMIC_RELAXED);
    for (int64_t t = rows * ith / nth; t < rows * (ith + 1) / nth; ++t) {
        const auto *row = reinterpret_cast<const float *>(row_address(a, t));
        q4k::quantize_row(row, k, static_cast<uint8_t *>(dst->data) + t * row_bytes);
    }
}

constexpr int64_t kPrefetchBlocks = 4;

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
            std::memcpy(out + (row_first + r) * m + first, row, size_t(columns) * sizeof(float));
        }
    }
};

// out[r][n] = Σ_k weight[n][k] · a[r][k] for rows [row_first, row_end) and column groups
// [group_first, group_end) (at most kGroupsPerUnit) of a packed weight, finished by `finish`; row r
// of out at out + r * weight.m floats. The rows go through each tile one after another while it is
// in L1, their totals in memory.
void multiply(const Q4kPacked &packed, int64_t group_first, int64_t group_end, const uint8_t *activations,
              int64_t row_first, int64_t row_end, const Finish &finish, float *out) {
    const Packed &weight = packed.weight;
    const q4k::Kernels &isa = *packed.isa;
    const int64_t k = weight.k, blocks = k / kBlock, row_bytes = q4k::activation_row_bytes(k);
    const int64_t per_pass = packed.rows_per_pass;
    alignas(64) float totals[kGroupsPerUnit][q4k::kRowsPerUnit * kColumns];
    const int64_t count = row_end - row_first, groups = group_end - group_first;
    const uint8_t *rows[q4k::kRowsPerUnit];
    for (int64_t r = 0; r < count; ++r) rows[r] = activations + (row_first + r) * row_bytes;
    for (int64_t g = 0; g < groups; ++g) std::fill_n(totals[g], count * kColumns, 0.0f);
    for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t *tiles[kGroupsPerUnit];
        for (int64_t g = 0; g < groups; ++g) tiles[g] = weight.tile(group_first + g, b);
        // The unit's stream is read once: ask L1 for the tiles four blocks ahead while these are
        // multiplied (the same measurement: ~50 GB/s, against 33-39 asking L2 and 40-48 at three or
        // six blocks ahead; not tuned on other CPUs).
        const uint8_t *ahead = weight.tile(group_first, b + kPrefetchBlocks); // past the unit's blocks: the next unit's
        for (int64_t line = 0; line < kGroupsPerUnit * kTileBytes; line += 64)
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
    const Q4kPacked &packed = *params.packed;
    const Packed &weight = packed.weight;
    const ggml_tensor *activations = dst->src[0];
    Finish finish;
    finish.activation = params.activation;
    int next_source = 2;
    if (params.bias) finish.bias = static_cast<const float *>(dst->src[next_source++]->data);
    if (params.residual) finish.residual = dst->src[next_source];
    const int64_t rows = dst->ne[1] * dst->ne[2] * dst->ne[3], groups = (weight.m + kColumns - 1) / kColumns;
    const int64_t column_units = (groups + kGroupsPerUnit - 1) / kGroupsPerUnit;
    const int64_t row_units = (rows + q4k::kRowsPerUnit - 1) / q4k::kRowsPerUnit;
    const int64_t units = column_units * row_units;
    const auto *quantized = static_cast<const uint8_t *>(activations->data);
    const auto run = [&](int64_t begin, int64_t end) {
        for (int64_t u = begin; u < end; ++u) {
            const int64_t g = u / row_units * kGroupsPerUnit, first = u % row_units * q4k::kRowsPerUnit;
            multiply(packed, g, std::min(groups, g + kGroupsPerUnit), quantized, first,
                     std::min(rows, first + q4k::kRowsPerUnit), finish, static_cast<float *>(dst->data));
        }
    };
    if (rows <= q4k::kMaxRowsPerPass) return run(units * ith / nth, units * (ith + 1) / nth);
    int64_t *counter = claim_counter(activations, rows, params.slot);
    for (int64_t begin = 0, end = 0; claim_units(counter, units, nth, begin, end);) run(begin, end);
}
#endif

static_assert(q4k::kMaxRowsPerPass == kQ4kMaxRowsPerPass);

constexpr const char *kQuantizeNode = "q4k.quantize";
constexpr const char *kMultiplyNode = "q4k.matmul";

#if defined(__x86_64__)
bool is_node(const ggml_tensor *t, const char *name) {
    return t->op == GGML_OP_CUSTOM && std::strcmp(t->name, name) == 0;
}

// Products in this context that already read `quantized` (each has claimed one of its counters).
int products_of(ggml_context *ctx, const ggml_tensor *quantized) {
    int products = 0;
    for (ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t))
        if (is_node(t, kMultiplyNode) && t->src[0] == quantized) ++products;
    return products;
}

// x quantised for the products, and the counter the next product of it claims from: the node made
// for an earlier product of the same x in this context if there is one with a counter left (q, k and v
// of a layer share their input, as do gate and up), else a new one.
struct QuantizedInput {
    ggml_tensor *tensor;
    int slot;
};
QuantizedInput quantized_activations(ggml_context *ctx, ggml_tensor *x) {
    for (ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t))
        if (is_node(t, kQuantizeNode) && t->src[0] == x)
            if (const int slot = products_of(ctx, t); slot < kClaimSlots) return {t, slot};
    const int64_t rows = x->ne[1] * x->ne[2] * x->ne[3], row_bytes = q4k::activation_row_bytes(x->ne[0]);
    ggml_tensor *quantized = ggml_custom_4d(ctx, GGML_TYPE_I8, row_bytes, rows + counter_rows(row_bytes), 1, 1, &x, 1,
                                            quantize_op, GGML_N_TASKS_MAX, nullptr);
    return {ggml_set_name(quantized, kQuantizeNode), 0};
}
#endif

} // namespace

int64_t q4k::activation_row_bytes(int64_t k) { return k + k / kBlock * (4 + 2 * kSubBlocks); }

namespace {

#if defined(__x86_64__)
// CPUID's F16C bit (clang's __builtin_cpu_supports has no name for it).
bool has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}
#endif

ggml_tensor *Q4kPacked::product(ggml_context *ctx, ggml_tensor *w, ggml_tensor *x) const {
    return product_with(ctx, w, x, Epilogue{});
}

// The bias is added, the activation applied and the residual added to each 16 columns of the
// result as they are written (Finish).
ggml_tensor *Q4kPacked::product_with(ggml_context *ctx, ggml_tensor *w, ggml_tensor *x,
                                     const Epilogue &epilogue) const {
#if defined(__x86_64__)
    if (x->type != GGML_TYPE_F32 || x->ne[0] != w->ne[0] || x->nb[0] != sizeof(float))
        fail("q4_K kernels: ", ggml_get_name(w), " needs f32 activations ggml [", w->ne[0],
             ", ...] with contiguous rows, got ", ggml_type_name(x->type), " [", x->ne[0], ", ...]");
    if (epilogue.activation != Epilogue::Activation::none && !vector_activations_available()) return nullptr;
    const ggml_tensor *bias = epilogue.bias, *residual = epilogue.residual;
    if (bias && (bias->type != GGML_TYPE_F32 || !ggml_is_contiguous(bias) || ggml_nelements(bias) != w->ne[1]))
        fail("q4_K kernels: the bias of ", ggml_get_name(w), " must be a contiguous f32 [", w->ne[1], "]");
    if (residual &&
        (residual->type != GGML_TYPE_F32 || residual->nb[0] != sizeof(float) || residual->ne[0] != w->ne[1] ||
         residual->ne[1] != x->ne[1] || residual->ne[2] != x->ne[2] || residual->ne[3] != x->ne[3]))
        fail("q4_K kernels: the residual added to ", ggml_get_name(w), "'s product must be f32 of its shape");
    const QuantizedInput quantized = quantized_activations(ctx, x);
    ggml_tensor *args[4] = {quantized.tensor, w};
    int n_args = 2;
    if (bias) args[n_args++] = epilogue.bias;
    if (residual) args[n_args++] = epilogue.residual;
    const ProductParams params{this, quantized.slot, epilogue.activation, bias != nullptr, residual != nullptr};
    ggml_tensor *y = ggml_custom_4d(ctx, GGML_TYPE_F32, w->ne[1], x->ne[1], x->ne[2], x->ne[3], args, n_args,
                                    multiply_op, GGML_N_TASKS_MAX, const_cast<ProductParams *>(interned(params)));
    return ggml_set_name(y, kMultiplyNode);
#else
    (void)ctx, (void)w, (void)x, (void)epilogue;
    fail("q4_K kernels: not built for this CPU");
#endif
}

class Q4kKernel final : public MatmulKernel {
  public:
    explicit Q4kKernel(Q4kIsa isa) : isa_(isa) {}

    const char *name() const override { return isa_ == Q4kIsa::avx512_vnni ? "q4k_avx512_vnni" : "q4k_avx2"; }
    bool runs_here() const override { return q4k_runs(isa_); }
    const char *why_not_here() const override {
        return isa_ == Q4kIsa::avx512_vnni ? "the CPU has no AVX-512 F/BW/VL/DQ with VNNI (or AVX2, FMA and F16C)"
                                           : "the CPU has no AVX2 with FMA and F16C";
    }
    bool takes(const ggml_tensor *weight, const KernelSelection &) const override { return q4k_packable(weight); }

    std::unique_ptr<PackedWeight> pack(const ggml_tensor *weight, const KernelSelection &selection,
                                       HugePageArena &arena) const override {
        if (!q4k_packable(weight) || !weight->data || !weight->buffer || !ggml_backend_buffer_is_host(weight->buffer))
            fail("q4_K kernels: cannot pack ", ggml_get_name(weight), " (", ggml_type_name(weight->type),
                 "): needs a q4_K matrix in host memory with rows of whole 256-value blocks");
        auto packed = std::make_unique<Q4kPacked>();
        packed->weight = pack_tiles(arena, static_cast<const uint8_t *>(weight->data), weight->ne[0], weight->ne[1]);
#if defined(__x86_64__)
        packed->isa = &isa_kernels(isa_);
        packed->rows_per_pass = rows_per_pass(*packed->isa, selection.q4k_rows_per_pass);
#endif
        return packed;
    }

    double node_flops(const ggml_tensor *node) const override {
        if (node->op != GGML_OP_CUSTOM || std::strcmp(node->name, kMultiplyNode) != 0) return 0;
        return 2.0 * double(node->src[1]->ne[0]) * double(ggml_nelements(node));
    }

  private:
    const Q4kIsa isa_;
};

} // namespace

bool q4k_runs(Q4kIsa isa) {
#if defined(__x86_64__)
    // Both sets quantise the activations with AVX2 (q4k::quantize_row).
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !has_f16c()) return false;
    if (isa == Q4kIsa::avx2) return true;
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vnni");
#else
    (void)isa;
    return false;
#endif
}

const char *q4k_isa_name(Q4kIsa isa) { return isa == Q4kIsa::avx512_vnni ? "AVX-512 VNNI" : "AVX2"; }

int q4k_rows_per_pass(Q4kIsa isa, int asked) {
#if defined(__x86_64__)
    return int(rows_per_pass(isa_kernels(isa), asked));
#else
    (void)isa;
    return asked;
#endif
}

bool q4k_packable(const ggml_tensor *weight) {
    return weight->type == GGML_TYPE_Q4_K && ggml_n_dims(weight) <= 2 && weight->ne[0] % kBlock == 0 &&
           ggml_is_contiguous(weight) && ggml_type_size(GGML_TYPE_Q4_K) == kQ4kBlockBytes;
}

const MatmulKernel &q4k_kernel(Q4kIsa isa) {
    static const Q4kKernel avx512_vnni(Q4kIsa::avx512_vnni), avx2(Q4kIsa::avx2);
    return isa == Q4kIsa::avx512_vnni ? avx512_vnni : avx2;
}

} // namespace chatterbox::kernels
