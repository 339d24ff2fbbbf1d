// q4_K and q8_0 weights packed for the engine's int8 tile kernels (kernels/int8_tiles.h, q4k.h,
// q8_0.h), through the path the models take (ModuleWeights packs them at load, nn::Linear multiplies
// with them), in each instruction set the CPU runs: the products of ggml's plain layout of the type
// for any number of rows, column counts off the 16-column tiles, leading batch dimensions and all-zero
// rows; a row's result the same bits in any batch and on any thread count; and the same bits from the
// AVX2 and the AVX-512 VNNI kernels.
#include "core/error.h"
#include "kernels/q4k.h"
#include "kernels/q8_0.h"
#include "modules/linear.h"
#include "modules/matmul.h"
#include "nn_harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace chatterbox {
namespace {

using kernels::Int8Isa;
using test::NnHarness;

constexpr int64_t kIn = 512, kOut = 40; // two 256-value blocks per column; 16 + 16 + 8 columns

// A weight format of the kernels, and the most rows per pass of its AVX2 and AVX-512 VNNI sets.
struct Format {
    const char *name;
    const kernels::TileFormat &(*tiles)();
    const kernels::TiledKernel &(*kernel)(Int8Isa isa);
    int rows_limit[2]; // by Int8Isa
};
const Format kQ4k{"q4k", kernels::q4k_format, kernels::q4k_kernel, {4, 8}};
const Format kQ8_0{"q8_0", kernels::q8_0_format, kernels::q8_0_kernel, {4, 4}};

Int8Isa other_isa(Int8Isa isa) { return isa == Int8Isa::avx2 ? Int8Isa::avx512_vnni : Int8Isa::avx2; }

// The engine's kernels in one instruction set (the other left out), or none (ggml's plain layout).
KernelSelection only(Int8Isa isa, int rows_per_pass = 0) {
    KernelSelection selection;
    for (const Format *format : {&kQ4k, &kQ8_0}) selection.disable.push_back(format->kernel(other_isa(isa)).name());
    selection.tile_rows_per_pass = rows_per_pass;
    return selection;
}

KernelSelection plain() {
    KernelSelection selection;
    for (const kernels::MatmulKernel *kernel : kernels::matmul_kernels()) selection.disable.push_back(kernel->name());
    return selection;
}

// proj(x) for x of PyTorch shape `shape` (last dimension `in`) with the same random weight of the
// format's type and `out` columns on the kernels of `selection`: the engine's (checked to be taken) or
// ggml's plain layout.
std::vector<float> product(const Format &format, const KernelSelection &selection, int threads, const Shape &shape,
                           const std::vector<float> &x, int64_t in = kIn, int64_t out = kOut) {
    const bool ours = selection.disable.size() < kernels::matmul_kernels().size();
    BackendOptions options{"cpu", threads};
    options.kernels = selection;
    options.adapt_threads = false;
    NnHarness h(options);
    h.add("m.proj.weight", {out, in}, format.tiles().type, -0.05f, 0.05f);
    ModuleWeights w(h.store(), "m.", h.backend());
    nn::Linear proj(w, "proj", in, out, false);
    w.load();
    return h.run(shape, x, [&](ggml_context *ctx, ggml_tensor *t) {
        ggml_tensor *y = proj(ctx, t);
        EXPECT_EQ(std::string(ggml_get_name(y)) == format.tiles().multiply_node, ours) << ggml_get_name(y);
        EXPECT_EQ(y->ne[0], out);
        return y;
    });
}

// Every test in each format and instruction set the CPU runs.
class TileKernels : public ::testing::TestWithParam<std::tuple<const Format *, Int8Isa>> {
  protected:
    void SetUp() override {
        if (!kernels::int8_isa_runs(isa())) GTEST_SKIP() << "this CPU has no " << kernels::int8_isa_name(isa());
    }
    const Format &format() const { return *std::get<0>(GetParam()); }
    Int8Isa isa() const { return std::get<1>(GetParam()); }
    std::vector<float> ours(int threads, const Shape &shape, const std::vector<float> &x, int64_t in = kIn,
                            int64_t out = kOut) const {
        return product(format(), ours_, threads, shape, x, in, out);
    }
    std::vector<float> ggmls(int threads, const Shape &shape, const std::vector<float> &x, int64_t in = kIn,
                             int64_t out = kOut) const {
        return product(format(), plain(), threads, shape, x, in, out);
    }
    const KernelSelection ours_ = only(isa());
    NnHarness values_;
};

INSTANTIATE_TEST_SUITE_P(FormatsAndIsas, TileKernels,
                         ::testing::Combine(::testing::Values(&kQ4k, &kQ8_0),
                                            ::testing::Values(Int8Isa::avx2, Int8Isa::avx512_vnni)),
                         [](const ::testing::TestParamInfo<std::tuple<const Format *, Int8Isa>> &info) {
                             return std::string(std::get<0>(info.param)->name) + "_" +
                                    (std::get<1>(info.param) == Int8Isa::avx2 ? "avx2" : "avx512_vnni");
                         });

TEST_P(TileKernels, MatchesGgmlsPlainProductForAnyRowCount) {
    for (const int64_t rows : {1, 2, 3, 8, 9, 16, 70, 133}) {
        std::vector<float> x = values_.input(size_t(2 * rows * kIn), -2.0f, 2.0f);
        std::fill(x.begin(), x.begin() + kIn, 0.0f); // an all-zero row: scale 0, not NaN
        const Shape shape{2, rows, kIn};
        const std::vector<float> y = ours(2, shape, x), ggml = ggmls(2, shape, x);
        test::expect_close(y, std::vector<double>(ggml.begin(), ggml.end()), 2e-5, std::to_string(rows) + " rows");
        for (int64_t n = 0; n < kOut; ++n) EXPECT_EQ(y[size_t(n)], 0.0f);
    }
}

// One block per column, a single column, groups with a partial last one, an odd number of 16-column
// groups (the last alone in its pair of the packed layout) of several blocks.
TEST_P(TileKernels, MatchesGgmlsPlainProductForOtherShapes) {
    for (const auto &[in, out] :
         {std::pair<int64_t, int64_t>{256, 1}, {256, 17}, {768, 50}, {1024, 8}, {512, 40}, {768, 80}}) {
        const std::vector<float> x = values_.input(size_t(3 * in), -2.0f, 2.0f);
        const std::vector<float> y = ours(2, {3, in}, x, in, out), ggml = ggmls(2, {3, in}, x, in, out);
        test::expect_close(y, std::vector<double>(ggml.begin(), ggml.end()), 2e-5,
                           std::to_string(in) + " x " + std::to_string(out));
    }
}

TEST_P(TileKernels, ARowGetsTheSameBitsInAnyBatchAndOnAnyThreadCount) {
    const int64_t rows = 37, row = 20;
    const std::vector<float> x = values_.input(size_t(rows * kIn), -2.0f, 2.0f);
    const std::vector<float> one(x.begin() + row * kIn, x.begin() + (row + 1) * kIn);
    const std::vector<float> alone = ours(1, {1, kIn}, one);
    for (const int threads : {1, 2}) {
        const std::vector<float> batched = ours(threads, {rows, kIn}, x);
        for (int64_t n = 0; n < kOut; ++n)
            EXPECT_EQ(batched[size_t(row * kOut + n)], alone[size_t(n)])
                << "column " << n << ", " << threads << " threads";
    }
}

// Every pass width (1 .. 8 rows per unpacked weight, capped at the format's own in the set) gives the
// default's bits; a row count past the widest is refused.
TEST_P(TileKernels, EveryRowsPerPassGivesTheSameBits) {
    const int64_t rows = 19; // full passes and a partial one at every width
    const std::vector<float> x = values_.input(size_t(rows * kIn), -2.0f, 2.0f);
    const std::vector<float> by_default = ours(2, {rows, kIn}, x);
    const kernels::TiledKernel &kernel = format().kernel(isa());
    const int limit = format().rows_limit[int(isa())];
    for (int per_pass = 1; per_pass <= 8; ++per_pass) {
        EXPECT_EQ(kernel.rows_per_pass(per_pass), std::min(per_pass, limit));
        EXPECT_EQ(product(format(), only(isa(), per_pass), 2, {rows, kIn}, x), by_default)
            << per_pass << " rows per pass";
    }
    EXPECT_GE(kernel.rows_per_pass(0), 1);
    EXPECT_LE(kernel.rows_per_pass(0), limit);
    for (const int rows_per_pass : {9, -1}) {
        KernelSelection bad = ours_;
        bad.tile_rows_per_pass = rows_per_pass;
        EXPECT_THROW(kernels::check_kernel_selection(bad), InvalidArgument) << rows_per_pass;
    }
}

// Two layers of one input width on the default backend: `a` 32 columns of the format's type, `b` of
// another shape or type.
struct TwoLayers {
    TwoLayers(const KernelSelection &selection, ggml_type a_type, int64_t b_columns, ggml_type b_type)
        : h(BackendOptions{"cpu", 2, true, selection}), a(bind("a", 32, a_type)), b(bind("b", b_columns, b_type)) {
        w.load();
    }
    NnHarness h;
    ModuleWeights w{h.store(), "m.", h.backend()};
    nn::Linear a, b;

  private:
    nn::Linear bind(const std::string &name, int64_t columns, ggml_type type) {
        h.add("m." + name + ".weight", {columns, kIn}, type);
        return nn::Linear(w, name, kIn, columns, false);
    }
};

TEST_P(TileKernels, OnlyWholeBlockMatricesOfTheTypeArePacked) {
    TwoLayers layers(ours_, format().tiles().type, 32, GGML_TYPE_F16);
    const nn::Linear &a = layers.a, &b = layers.b;
    EXPECT_TRUE(kernels::tile_packable(format().tiles(), a.weight));
    EXPECT_FALSE(kernels::tile_packable(format().tiles(), b.weight));
    const std::map<std::string, int> counts = layers.w.matmul_kernel_counts();
    EXPECT_EQ(counts.size(), size_t(2)) << "b to another kernel or ggml_mul_mat";
    EXPECT_EQ(counts.count(format().kernel(isa()).name()), size_t(1));
    GraphRunner g(layers.h.backend());
    ggml_tensor *x = g.input("x", GGML_TYPE_F32, {3, kIn});
    const kernels::PackedWeight *packed = kernels::packed_of(a.weight);
    ASSERT_NE(packed, nullptr);
    const ggml_tensor *y = packed->product(g.ctx(), a.weight, x);
    EXPECT_EQ(kernels::kernel_node_flops(y), 2.0 * 3 * 32 * kIn);
    EXPECT_EQ(kernels::kernel_node_flops(x), 0.0);
    EXPECT_EQ(kernels::packed_of(b.weight), nullptr);
    ggml_tensor *narrow = g.input("narrow", GGML_TYPE_F32, {3, kIn / 2});
    EXPECT_THROW(packed->product(g.ctx(), a.weight, narrow), Error);
}

TEST_P(TileKernels, ProductsOfOneInputShareItsQuantisation) {
    TwoLayers layers(ours_, format().tiles().type, 48, format().tiles().type);
    const nn::Linear &a = layers.a, &b = layers.b;
    const std::vector<float> x = values_.input(size_t(5 * kIn));
    auto run = [&](bool both) {
        GraphRunner g(layers.h.backend());
        ggml_tensor *in = g.input("x", GGML_TYPE_F32, {5, kIn});
        ggml_tensor *ya = a(g.ctx(), in), *yb = b(g.ctx(), in);
        EXPECT_EQ(ya->src[0], yb->src[0]) << "one quantisation of x for both products";
        EXPECT_STREQ(ggml_get_name(ya->src[0]), format().tiles().quantize_node);
        g.build(both ? std::vector<ggml_tensor *>{ya, yb} : std::vector<ggml_tensor *>{yb});
        g.set_input(in, x);
        g.compute();
        return g.read_f32(yb);
    };
    EXPECT_EQ(run(true), run(false));
}

// Products of one input by weights of both formats each quantise it their own way.
TEST_P(TileKernels, EachFormatQuantisesItsOwnInput) {
    TwoLayers layers(ours_, GGML_TYPE_Q4_K, 48, GGML_TYPE_Q8_0);
    GraphRunner g(layers.h.backend());
    ggml_tensor *in = g.input("x", GGML_TYPE_F32, {5, kIn});
    ggml_tensor *ya = layers.a(g.ctx(), in), *yb = layers.b(g.ctx(), in);
    EXPECT_STREQ(ggml_get_name(ya->src[0]), kQ4k.tiles().quantize_node);
    EXPECT_STREQ(ggml_get_name(yb->src[0]), kQ8_0.tiles().quantize_node);
}

// Bias, GELU and a residual in the product's node give the bits of the separate nodes they replace
// (ggml_add, nn::activate's vector GELU, ggml_add), for a decode's few rows and a prefill's claimed units, on 1
// and 2 threads; the residual is a strided view.
TEST_P(TileKernels, EpilogueGivesTheBitsOfSeparateNodes) {
    for (const int64_t rows : {1, 3, 37})
        for (const int threads : {1, 2})
            for (const nn::Activation activation : {nn::Activation::gelu_tanh, nn::Activation::gelu_erf}) {
                BackendOptions options{"cpu", threads};
                options.kernels = ours_;
                options.adapt_threads = false;
                NnHarness h(options);
                h.add("m.proj.weight", {kOut, kIn}, format().tiles().type, -0.05f, 0.05f);
                h.add("m.proj.bias", {kOut}, GGML_TYPE_F32, -1.0f, 1.0f);
                ModuleWeights w(h.store(), "m.", h.backend());
                nn::Linear proj(w, "proj", kIn, kOut);
                w.load();
                const std::vector<float> x = values_.input(size_t(rows * kIn), -2.0f, 2.0f);
                auto run = [&](bool fused) {
                    return h.run({rows, kIn}, x, [&](ggml_context *ctx, ggml_tensor *t) {
                        ggml_tensor *residual = ggml_view_2d(ctx, t, kOut, rows, t->nb[1], 0);
                        ggml_tensor *hidden, *y;
                        if (fused) {
                            hidden = proj.then(ctx, t, activation, true);
                            y = proj.added_to(ctx, ggml_view_2d(ctx, t, kIn, rows, t->nb[1], 0), residual);
                            EXPECT_STREQ(ggml_get_name(hidden), format().tiles().multiply_node);
                            EXPECT_STREQ(ggml_get_name(y), format().tiles().multiply_node);
                        } else {
                            hidden = nn::activate(ctx, ggml_add(ctx, nn::matmul(ctx, proj.weight, t), proj.bias),
                                                  activation, true);
                            y = ggml_add(ctx, residual, ggml_add(ctx, nn::matmul(ctx, proj.weight, t), proj.bias));
                        }
                        return ggml_concat(ctx, hidden, y, 0);
                    });
                };
                EXPECT_EQ(run(true), run(false)) << rows << " rows, " << threads << " threads";
            }
}

// The threads of a product of many rows claim its work units from a counter kept with the shared
// quantisation; more products of one input than it has counters get a quantisation of their own.
// Each product gets the bits it gets alone.
TEST_P(TileKernels, ManyProductsOfOneInputEachClaimTheirOwnUnits) {
    TwoLayers layers(ours_, format().tiles().type, 48, format().tiles().type);
    const int64_t rows = 70; // more than a pass, so the threads claim
    const std::vector<float> x = values_.input(size_t(rows * kIn));
    auto alone = [&](const nn::Linear &layer) {
        GraphRunner g(layers.h.backend());
        ggml_tensor *in = g.input("x", GGML_TYPE_F32, {rows, kIn});
        ggml_tensor *y = layer(g.ctx(), in);
        g.build({y});
        g.set_input(in, x);
        g.compute();
        return g.read_f32(y);
    };
    const std::vector<float> a_alone = alone(layers.a), b_alone = alone(layers.b);
    GraphRunner g(layers.h.backend());
    ggml_tensor *in = g.input("x", GGML_TYPE_F32, {rows, kIn});
    std::vector<ggml_tensor *> outputs;
    for (int i = 0; i < 11; ++i) outputs.push_back((i % 2 ? layers.b : layers.a)(g.ctx(), in));
    for (int i = 1; i < 8; ++i) EXPECT_EQ(outputs[size_t(i)]->src[0], outputs[0]->src[0]) << "product " << i;
    EXPECT_NE(outputs[8]->src[0], outputs[0]->src[0]) << "the ninth product's counter";
    g.build(outputs);
    g.set_input(in, x);
    for (int round = 0; round < 2; ++round) { // the counters start again at every compute
        g.compute();
        for (size_t i = 0; i < outputs.size(); ++i)
            ASSERT_EQ(g.read_f32(outputs[i]), i % 2 ? b_alone : a_alone) << "product " << i << ", round " << round;
    }
}

class TileFormats : public ::testing::TestWithParam<const Format *> {};

INSTANTIATE_TEST_SUITE_P(Formats, TileFormats, ::testing::Values(&kQ4k, &kQ8_0),
                         [](const ::testing::TestParamInfo<const Format *> &info) { return info.param->name; });

TEST_P(TileFormats, Avx2AndAvx512VnniGiveTheSameBits) {
    if (!kernels::int8_isa_runs(Int8Isa::avx2) || !kernels::int8_isa_runs(Int8Isa::avx512_vnni))
        GTEST_SKIP() << "this CPU does not run both instruction sets";
    NnHarness values;
    const int64_t rows = 19; // full passes and a partial one in either set
    std::vector<float> x = values.input(size_t(rows * kIn), -2.0f, 2.0f);
    x[5] = 40.0f; // one sub-block whose other values quantise to a few levels
    const std::vector<float> avx2 = product(*GetParam(), only(Int8Isa::avx2), 2, {rows, kIn}, x);
    const std::vector<float> avx512 = product(*GetParam(), only(Int8Isa::avx512_vnni), 2, {rows, kIn}, x);
    EXPECT_EQ(avx2, avx512);
}

// A set the CPU cannot run is refused when asked for by name; the widest it runs is asked first.
TEST_P(TileFormats, OnlyThoseTheCpuRunsCanBeChosen) {
    const Format &format = *GetParam();
    for (const Int8Isa isa : {Int8Isa::avx2, Int8Isa::avx512_vnni}) {
        KernelSelection selection;
        selection.enable = {format.kernel(isa).name()};
        if (kernels::int8_isa_runs(isa))
            EXPECT_NO_THROW(kernels::check_kernel_selection(selection));
        else
            EXPECT_THROW(kernels::check_kernel_selection(selection), InvalidArgument) << kernels::int8_isa_name(isa);
    }
    NnHarness h;
    h.add("m.proj.weight", {kOut, kIn}, format.tiles().type);
    ModuleWeights w(h.store(), "m.", h.backend());
    nn::Linear proj(w, "proj", kIn, kOut, false);
    w.load();
    const Int8Isa widest = kernels::int8_isa_runs(Int8Isa::avx512_vnni) ? Int8Isa::avx512_vnni : Int8Isa::avx2;
    const std::string expected = kernels::int8_isa_runs(widest) ? format.kernel(widest).name() : "ggml_repack";
    EXPECT_EQ(w.matmul_kernel_counts(), (std::map<std::string, int>{{expected, 1}}));
}

} // namespace
} // namespace chatterbox
