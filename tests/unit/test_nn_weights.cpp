// ModuleWeights (declare -> collect problems -> load) and the weight-norm fold.

#include "nn_harness.h"

#include "core/error.h"
#include "core/safetensors.h"
#include "core/shape.h"
#include "modules/weight_norm.h"

#include "ggml-backend.h"

#include <cstring>
#include <memory>

namespace chatterbox {
namespace {

using test::NnHarness;

std::vector<float> tensor_values(const ggml_tensor *t) {
    std::vector<uint8_t> raw(ggml_nbytes(t));
    ggml_backend_tensor_get(t, raw.data(), 0, raw.size());
    return to_f32(TensorView{"", t->type, torch_shape_of(t), raw.data(), raw.size(), nullptr});
}

std::string load_error(ModuleWeights &w) {
    try {
        w.load();
    } catch (const Error &e) {
        return e.what();
    }
    return "";
}

TEST(NnWeights, UploadsStoredConvertedAndDerivedTensors) {
    NnHarness h;
    const auto a = h.add("m.a.weight", {4, 32}, GGML_TYPE_F16);
    const auto b = h.add("m.b.weight", {2, 64}, GGML_TYPE_Q8_0);
    const auto c = h.add("m.c.weight", {1, 3, 5}); // a GGUF file may drop the leading 1
    h.add("other.d", {3});                         // outside the prefix: not this module's business

    ModuleWeights w(h.store(), "m.", h.backend());
    ggml_tensor *ta = w.get("a.weight", {4, 32}, WeightUse::as_stored);
    ggml_tensor *ta32 = w.get("a.weight", {4, 32}, WeightUse::f32);
    ggml_tensor *tb = w.get("b.weight", {2, 64}, WeightUse::as_stored);
    ggml_tensor *tc = w.get("c.weight", {3, 5}, WeightUse::as_stored);
    ggml_tensor *td = w.derived("c.weight.doubled", {3, 5}, std::vector<float>(15, 2.5f));
    ggml_tensor *te = w.derived("a.weight.reversed", {4, 32}, std::vector<float>(a.rbegin(), a.rend()),
                                WeightUse::matmul, GGML_TYPE_F16); // f16 values kept in f16
    EXPECT_EQ(w.get("a.weight", {4, 32}, WeightUse::as_stored), ta) << "a tensor requested twice is one tensor";
    EXPECT_EQ(w.host_f32("c.weight", {3, 5}), c);
    EXPECT_TRUE(w.has("b.weight"));
    EXPECT_FALSE(w.has("d"));
    ASSERT_NE(w.stored("a.weight"), nullptr);
    EXPECT_EQ(w.stored("a.weight")->type, GGML_TYPE_F16);
    w.load();

    EXPECT_EQ(ta->type, GGML_TYPE_F16);
    EXPECT_EQ(ta32->type, GGML_TYPE_F32);
    EXPECT_EQ(tb->type, GGML_TYPE_Q8_0);
    EXPECT_STREQ(ggml_get_name(ta), "m.a.weight");
    EXPECT_EQ(tensor_values(ta), a);
    EXPECT_EQ(tensor_values(ta32), a);
    EXPECT_EQ(tensor_values(tb), b);
    EXPECT_EQ(tensor_values(tc), c);
    EXPECT_EQ(tensor_values(td), std::vector<float>(15, 2.5f));
    EXPECT_EQ(te->type, GGML_TYPE_F16);
    EXPECT_EQ(tensor_values(te), std::vector<float>(a.rbegin(), a.rend()));
    EXPECT_GE(w.bytes(), 4 * 32 * 2 + 4 * 32 * 4 + 15 * 4 * 2);

    EXPECT_THROW(w.get("a.weight", {4, 32}, WeightUse::as_stored), Error) << "declaring after load()";
    EXPECT_THROW(w.load(), Error) << "loading twice";
}

// On the CPU a tensor stored in a mapped file in its final type is the mapped bytes themselves; one
// converted at load (f16 read as f32) is uploaded. The tensors keep the file mapped, so they stay
// valid after the store that opened it is gone.
TEST(NnWeights, MappedTensorsOfTheFinalTypeAreUsedInPlace) {
    const std::vector<float> plain = test::random_values(6 * 8, 11), halves = test::random_values(16, 12);
    const std::string path = test::temp_dir("nn_weights_in_place") + "/m.safetensors";
    write_safetensors(path, {{"plain.weight",
                              GGML_TYPE_F32,
                              {6, 8},
                              [&](void *dst) { std::memcpy(dst, plain.data(), plain.size() * sizeof(float)); }},
                             {"half.bias", GGML_TYPE_F16, {16}, [&](void *dst) {
                                  ggml_fp32_to_fp16_row(halves.data(), static_cast<ggml_fp16_t *>(dst), 16);
                              }}});
    Backend backend(BackendOptions{"cpu", 2});
    auto store = std::make_unique<WeightStore>();
    store->add_safetensors(path, "m.");
    const TensorView &stored = store->get("m.plain.weight");
    ModuleWeights w(*store, "m.", backend);
    ggml_tensor *weight = w.get("plain.weight", {6, 8}, WeightUse::matmul);
    ggml_tensor *bias = w.get("half.bias", {16}, WeightUse::f32);
    w.load();
    EXPECT_EQ(weight->data, stored.data) << "no copy";
    EXPECT_STREQ(ggml_backend_buffer_name(weight->buffer), "CPU_Mapped");
    EXPECT_EQ(ggml_backend_buffer_get_usage(weight->buffer), GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    EXPECT_STRNE(ggml_backend_buffer_name(bias->buffer), "CPU_Mapped");
    EXPECT_EQ(w.bytes(), 6 * 8 * 4 + ggml_backend_buffer_get_size(bias->buffer));

    store.reset();
    EXPECT_EQ(tensor_values(weight), plain);
    std::vector<float> rounded(16);
    for (size_t i = 0; i < rounded.size(); ++i) rounded[i] = ggml_fp16_to_fp32(ggml_fp32_to_fp16(halves[i]));
    EXPECT_EQ(tensor_values(bias), rounded);
}

// The declared use picks the layout: a weight only multiplied may go to a matmul kernel (ggml's
// repacked layout or the engine's packed copy); one that another op also reads in its stored type
// keeps the plain layout, whichever came first.
TEST(NnWeights, OnlyMatmulOnlyWeightsAreRepacked) {
    NnHarness h;
    for (const char *name : {"m.only_multiplied", "m.also_gathered", "m.gathered_first"})
        h.add(name, {64, 512}, GGML_TYPE_Q4_K);
    ModuleWeights w(h.store(), "m.", h.backend());
    ggml_tensor *only = w.get("only_multiplied", {64, 512}, WeightUse::matmul);
    ggml_tensor *also = w.get("also_gathered", {64, 512}, WeightUse::matmul);
    EXPECT_EQ(w.get("also_gathered", {64, 512}, WeightUse::as_stored), also);
    w.get("gathered_first", {64, 512}, WeightUse::as_stored);
    ggml_tensor *first = w.get("gathered_first", {64, 512}, WeightUse::matmul);
    w.load();
    auto buffer = [](const ggml_tensor *t) { return std::string(ggml_backend_buffer_name(t->buffer)); };
    const bool taken = buffer(only) == "CPU_REPACK" || kernels::packed_of(only) != nullptr;
    EXPECT_EQ(taken,
              kernels::choose_matmul_kernel(only, h.backend().kernels(), kernels::ProductPrecision::f32) != nullptr);
    EXPECT_EQ(w.matmul_kernel_counts().count("ggml_mul_mat"), size_t(0)) << "only the first is matmul-only";
    for (const ggml_tensor *plain : {also, first}) {
        EXPECT_NE(buffer(plain), "CPU_REPACK");
        EXPECT_EQ(kernels::packed_of(plain), nullptr);
    }
}

TEST(NnWeights, ReportsMissingMisshapedUnexpectedAndBadTypeInOneError) {
    NnHarness h;
    h.add("t3.tfmr.norm.weight", {1000});
    h.add("t3.tfmr.extra.bias", {7});
    h.add("t3.tfmr.rotary_emb.inv_freq", {32});
    h.add("t3.ok.weight", {8, 8});
    HostTensor ids("t3.ids", GGML_TYPE_I64, {5});
    h.store().add_tensor(std::move(ids));

    ModuleWeights w(h.store(), "t3.", h.backend());
    w.get("ok.weight", {8, 8}, WeightUse::as_stored);
    w.get("tfmr.norm.weight", {1024}, WeightUse::f32);
    ggml_tensor *missing = w.get("tfmr.missing.weight", {16, 4}, WeightUse::as_stored);
    EXPECT_TRUE(same_shape(missing, {16, 4})) << "binding goes on with the expected shape";
    EXPECT_EQ(w.host_f32("tfmr.also_missing", {3}), std::vector<float>(3, 0.0f));
    w.get("ids", {5}, WeightUse::as_stored);
    w.ignore("tfmr.rotary_emb.");

    const std::string message = load_error(w);
    EXPECT_NE(message.find("t3.tfmr.norm.weight: expected [1024], file has [1000]"), std::string::npos) << message;
    EXPECT_NE(message.find("t3.tfmr.missing.weight: missing (expected [16, 4])"), std::string::npos) << message;
    EXPECT_NE(message.find("t3.tfmr.also_missing: missing"), std::string::npos) << message;
    EXPECT_NE(message.find("t3.tfmr.extra.bias: unexpected tensor [7] f32"), std::string::npos) << message;
    EXPECT_NE(message.find("t3.ids: unsupported type i64"), std::string::npos) << message;
    EXPECT_EQ(message.find("rotary_emb"), std::string::npos) << "ignored tensors are not unexpected: " << message;
    EXPECT_EQ(message.find("ok.weight"), std::string::npos) << message;
    EXPECT_NE(message.find("(5 problems)"), std::string::npos) << message;
}

TEST(NnWeights, LongProblemListsAreCapped) {
    NnHarness h;
    ModuleWeights w(h.store(), "s3gen.", h.backend());
    for (int i = 0; i < 70; ++i) w.get("layer." + std::to_string(i) + ".weight", {2}, WeightUse::as_stored);
    const std::string message = load_error(w);
    EXPECT_NE(message.find("(70 problems)"), std::string::npos);
    EXPECT_NE(message.find("layer.49.weight"), std::string::npos);
    EXPECT_EQ(message.find("layer.50.weight"), std::string::npos);
    EXPECT_NE(message.find("and 20 more"), std::string::npos) << message;
}

TEST(NnWeights, RejectsInconsistentDeclarations) {
    NnHarness h;
    h.add("m.a", {4});
    ModuleWeights w(h.store(), "m.", h.backend());
    w.get("a", {4}, WeightUse::as_stored);
    EXPECT_THROW(w.get("a", {2, 2}, WeightUse::as_stored), Error);
    EXPECT_THROW(w.derived("b", {3}, {1.0f, 2.0f}), Error) << "value count does not match the shape";
    w.derived("b", {2}, {1.0f, 2.0f});
    EXPECT_THROW(w.derived("b", {2}, {1.0f, 2.0f}), Error) << "derived twice";
    EXPECT_THROW(w.derived("c", {2}, {1.0f, 2.0f}, WeightUse::matmul, GGML_TYPE_Q8_0), Error) << "a quantised one";
    EXPECT_THROW(w.derived("d", {2}, {1.0f, 2.0f}, WeightUse::f32, GGML_TYPE_F16), Error) << "f32 use, f16 type";
}

TEST(NnWeights, LongNamesKeepTheirTail) {
    NnHarness h;
    const std::string name = "flow.decoder.estimator.mid_blocks.11.1.3.attn1.to_out.0.weight.with.a.long.tail";
    h.add("m." + name, {2});
    ModuleWeights w(h.store(), "m.", h.backend());
    ggml_tensor *t = w.get(name, {2}, WeightUse::as_stored);
    const std::string stored = ggml_get_name(t);
    EXPECT_LT(stored.size(), size_t(GGML_MAX_NAME));
    EXPECT_EQ(stored.substr(stored.size() - 10), name.substr(name.size() - 10));
}

// g * v / ||v||, the norm over every dimension except `dim`, in double.
std::vector<double> naive_weight_norm(const std::vector<float> &g, const std::vector<float> &v, const Shape &shape,
                                      int dim) {
    std::vector<double> norm(size_t(shape[size_t(dim)]), 0.0);
    auto channel_of = [&](size_t flat) {
        int64_t stride = 1;
        for (size_t i = shape.size() - 1; i > size_t(dim); --i) stride *= shape[i];
        return size_t((int64_t(flat) / stride) % shape[size_t(dim)]);
    };
    for (size_t i = 0; i < v.size(); ++i) norm[channel_of(i)] += double(v[i]) * v[i];
    std::vector<double> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = g[channel_of(i)] * v[i] / std::sqrt(norm[channel_of(i)]);
    return out;
}

TEST(NnWeights, WeightNormFoldsBothSpellings) {
    NnHarness h;
    const Shape shape = {6, 4, 3};
    const auto g_old = h.add("m.old.weight_g", {6, 1, 1}, GGML_TYPE_F32, 0.5f, 1.5f);
    const auto v_old = h.add("m.old.weight_v", shape);
    const auto g_new = h.add("m.new.parametrizations.weight.original0", {6, 1, 1}, GGML_TYPE_F32, 0.5f, 1.5f);
    const auto v_new = h.add("m.new.parametrizations.weight.original1", shape);
    // ConvTranspose1d layout (in, out, k) normed per input channel, and a norm along dim 1.
    const auto g_t = h.add("m.up.parametrizations.weight.original0", {5, 1, 1}, GGML_TYPE_F32, 0.5f, 1.5f);
    const auto v_t = h.add("m.up.parametrizations.weight.original1", {5, 2, 7});
    const auto g_d1 = h.add("m.d1.weight_g", {1, 4, 1}, GGML_TYPE_F32, 0.5f, 1.5f);
    const auto v_d1 = h.add("m.d1.weight_v", shape);

    ModuleWeights w(h.store(), "m.", h.backend());
    ggml_tensor *old_w = nn::weight_norm(w, "old", shape);
    ggml_tensor *new_w = nn::weight_norm(w, "new", shape);
    ggml_tensor *up_w = nn::weight_norm(w, "up", {5, 2, 7});
    ggml_tensor *d1_w = nn::weight_norm(w, "d1", shape, 1);
    w.load(); // g and v were consumed: nothing is unexpected

    test::expect_close(tensor_values(old_w), naive_weight_norm(g_old, v_old, shape, 0), 1e-6, "weight_g/weight_v");
    test::expect_close(tensor_values(new_w), naive_weight_norm(g_new, v_new, shape, 0), 1e-6, "original0/original1");
    test::expect_close(tensor_values(up_w), naive_weight_norm(g_t, v_t, {5, 2, 7}, 0), 1e-6, "transposed conv");
    test::expect_close(tensor_values(d1_w), naive_weight_norm(g_d1, v_d1, shape, 1), 1e-6, "dim 1");
    EXPECT_STREQ(ggml_get_name(new_w), "m.new.weight");
}

TEST(NnWeights, WeightNormReportsMissingAndMisshapedParts) {
    NnHarness h;
    h.add("m.a.parametrizations.weight.original0", {6, 1, 1});
    h.add("m.a.parametrizations.weight.original1", {6, 4, 2});
    ModuleWeights w(h.store(), "m.", h.backend());
    nn::weight_norm(w, "a", {6, 4, 3});
    nn::weight_norm(w, "b", {2, 2});
    EXPECT_THROW(nn::weight_norm(w, "c", {2, 2}, 2), Error) << "dim out of range";
    const std::string message = load_error(w);
    EXPECT_NE(message.find("m.a.parametrizations.weight.original1: expected [6, 4, 3], file has [6, 4, 2]"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("m.b.parametrizations.weight.original0: missing"), std::string::npos) << message;
    EXPECT_NE(message.find("m.b.parametrizations.weight.original1: missing"), std::string::npos) << message;
}

} // namespace
} // namespace chatterbox
