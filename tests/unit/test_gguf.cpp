// GGUF reader/writer and the weight store: round trips (long names, exact shapes, every key type,
// f32/f16/q8_0 data), corrupted files, writer misuse, duplicate tensors across files.

#include "core/error.h"
#include "core/gguf_file.h"
#include "core/safetensors.h"
#include "core/weight_store.h"
#include "support/test_support.h"

#include "gguf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

namespace chatterbox {
using test::expect_error;

namespace {

namespace fs = std::filesystem;

// Two long names that share their first 22 and last 23 bytes: the shortened names must still differ.
const std::string kLongA =
    "s3gen.flow.decoder.estimator.down_blocks.0.1.0.attn1.to_q.parametrizations.weight.original1";
const std::string kLongB =
    "s3gen.flow.decoder.estimator.mid_blocks.11.1.3.attn1.to_q.parametrizations.weight.original1";

std::vector<uint8_t> read_bytes(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string &path, const std::vector<uint8_t> &bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
}

// Expects `body` to throw chatterbox::Error whose message contains every part.
HostTensor quantized(const std::string &name, ggml_type type, const Shape &shape, const std::vector<float> &values) {
    HostTensor t(name, type, shape);
    ggml_quantize_chunk(type, values.data(), t.bytes.data(), 0, shape_numel(shape) / shape.back(), shape.back(),
                        nullptr);
    return t;
}

void add_host_tensor(GgufWriter &writer, const HostTensor &t) {
    writer.add_tensor(t.name, t.type, t.shape, [&t](void *dst) { std::memcpy(dst, t.bytes.data(), t.bytes.size()); });
}

struct Sample {
    std::vector<HostTensor> tensors;

    Sample() {
        tensors.push_back(HostTensor::from_f32(kLongA, {3, 64}, test::random_values(192, 1)));
        tensors.push_back(quantized(kLongB, GGML_TYPE_F16, {2, 64}, test::random_values(128, 2)));
        tensors.push_back(
            quantized("t3.tfmr.layers.0.mlp.up_proj.weight", GGML_TYPE_Q8_0, {4, 64}, test::random_values(256, 3)));
        tensors.push_back(HostTensor::from_f32("conds.t3.speaker_emb", {1, 256}, test::random_values(256, 4)));
        tensors.push_back(HostTensor::from_f32("mel2wav.conv_pre.parametrizations.weight.original0", {5, 1, 1},
                                               test::random_values(5, 5)));
        HostTensor scalar("speaker_encoder.xvector.bn.num_batches_tracked", GGML_TYPE_I64, {});
        scalar.data_as<int64_t>()[0] = -7;
        tensors.push_back(scalar);
    }

    void write(const std::string &path) const {
        GgufWriter writer;
        writer.set_string("general.architecture", "chatterbox");
        writer.set_string("chatterbox.text", "π ≈ 3.14159\nsecond line");
        writer.set_int("chatterbox.int", -1234567890123LL);
        writer.set_float("chatterbox.float", 1e-5);
        writer.set_string_array("chatterbox.strings", {"a", "", "ünï"});
        writer.set_int_array("chatterbox.ints", {8, -5, 3});
        writer.set_int_array("chatterbox.no_ints", {});
        for (const auto &t : tensors) add_host_tensor(writer, t);
        writer.write(path);
    }
};

TEST(Gguf, RoundTripKeepsNamesShapesTypesBytesAndMetadata) {
    const std::string path = test::temp_dir("gguf") + "/model.gguf";
    Sample sample;
    sample.write(path);
    EXPECT_FALSE(fs::exists(path + ".tmp"));

    GgufFile file(path);
    ASSERT_EQ(file.tensors().size(), sample.tensors.size());
    for (size_t i = 0; i < sample.tensors.size(); ++i) {
        const HostTensor &want = sample.tensors[i];
        const TensorView &got = file.tensors()[i];
        EXPECT_EQ(got.name, want.name);
        EXPECT_EQ(got.type, want.type) << want.name;
        EXPECT_EQ(got.shape, want.shape) << want.name;
        ASSERT_EQ(got.nbytes, want.bytes.size()) << want.name;
        EXPECT_EQ(std::memcmp(got.data, want.bytes.data(), got.nbytes), 0) << want.name;
        EXPECT_EQ(file.find(want.name), &got);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(got.data) % GGUF_DEFAULT_ALIGNMENT, 0u) << "data is aligned";
    }
    EXPECT_EQ(file.find("no.such.tensor"), nullptr);

    // Stored names fit ggml (< 64 bytes), are unique, and short names are kept verbatim.
    std::set<std::string> stored;
    for (int64_t i = 0; i < gguf_get_n_tensors(file.raw()); ++i) {
        const std::string name = gguf_get_tensor_name(file.raw(), i);
        EXPECT_LT(name.size(), size_t(GGML_MAX_NAME));
        stored.insert(name);
    }
    EXPECT_EQ(stored.size(), sample.tensors.size());
    EXPECT_TRUE(stored.count("conds.t3.speaker_emb"));

    EXPECT_EQ(file.get_string("general.architecture"), "chatterbox");
    EXPECT_EQ(file.get_string("chatterbox.text"), "π ≈ 3.14159\nsecond line");
    EXPECT_EQ(file.get_int("chatterbox.int"), -1234567890123LL);
    EXPECT_EQ(file.get_float("chatterbox.float"), 1e-5);
    EXPECT_EQ(file.get_float("chatterbox.int"), -1234567890123.0);
    EXPECT_EQ(file.get_string_array("chatterbox.strings"), (std::vector<std::string>{"a", "", "ünï"}));
    EXPECT_EQ(file.get_int_array("chatterbox.ints"), (std::vector<int64_t>{8, -5, 3}));
    EXPECT_TRUE(file.get_int_array("chatterbox.no_ints").empty());
    EXPECT_TRUE(file.has_key("chatterbox.int"));
    EXPECT_FALSE(file.has_key("chatterbox.nothing"));
    const auto keys = file.keys();
    EXPECT_EQ(std::count(keys.begin(), keys.end(), "chatterbox.strings"), 1);
}

TEST(Gguf, ReadsEveryKeyTypeAndFilesFromOtherWriters) {
    const std::string path = test::temp_dir("gguf") + "/foreign.gguf";
    gguf_context *ctx = gguf_init_empty();
    gguf_set_val_u8(ctx, "k.u8", 200);
    gguf_set_val_i8(ctx, "k.i8", -100);
    gguf_set_val_u16(ctx, "k.u16", 60000);
    gguf_set_val_i16(ctx, "k.i16", -30000);
    gguf_set_val_u32(ctx, "k.u32", 4000000000u);
    gguf_set_val_i32(ctx, "k.i32", -2000000000);
    gguf_set_val_u64(ctx, "k.u64", 1ull << 40);
    gguf_set_val_u64(ctx, "k.u64_huge", ~0ull);
    gguf_set_val_i64(ctx, "k.i64", -(1ll << 50));
    gguf_set_val_f32(ctx, "k.f32", 0.25f);
    gguf_set_val_f64(ctx, "k.f64", 0.1);
    gguf_set_val_bool(ctx, "k.bool", true);
    gguf_set_val_str(ctx, "k.str", "text");
    const uint16_t shorts[] = {1, 65535};
    gguf_set_arr_data(ctx, "k.arr_u16", GGUF_TYPE_UINT16, shorts, 2);
    const float floats[] = {1.5f};
    gguf_set_arr_data(ctx, "k.arr_f32", GGUF_TYPE_FLOAT32, floats, 1);
    // A tensor named by another tool: no chatterbox.tensor_names / tensor_ranks.
    ggml_init_params params{ggml_tensor_overhead() * 2 + 1024, nullptr, false};
    ggml_context *gctx = ggml_init(params);
    ggml_tensor *t = ggml_new_tensor_2d(gctx, GGML_TYPE_F32, 4, 3);
    for (int i = 0; i < 12; ++i) static_cast<float *>(t->data)[i] = float(i);
    ggml_set_name(t, "blk.0.weight");
    gguf_add_tensor(ctx, t);
    ASSERT_TRUE(gguf_write_to_file(ctx, path.c_str(), false));
    gguf_free(ctx);
    ggml_free(gctx);

    GgufFile file(path);
    EXPECT_EQ(file.get_int("k.u8"), 200);
    EXPECT_EQ(file.get_int("k.i8"), -100);
    EXPECT_EQ(file.get_int("k.u16"), 60000);
    EXPECT_EQ(file.get_int("k.i16"), -30000);
    EXPECT_EQ(file.get_int("k.u32"), 4000000000LL);
    EXPECT_EQ(file.get_int("k.i32"), -2000000000);
    EXPECT_EQ(file.get_int("k.u64"), 1ll << 40);
    EXPECT_EQ(file.get_int("k.i64"), -(1ll << 50));
    EXPECT_EQ(file.get_float("k.f32"), 0.25);
    EXPECT_EQ(file.get_float("k.f64"), 0.1);
    EXPECT_EQ(file.get_float("k.u16"), 60000.0);
    EXPECT_EQ(file.get_string("k.str"), "text");
    EXPECT_EQ(file.get_int_array("k.arr_u16"), (std::vector<int64_t>{1, 65535}));

    expect_error([&] { file.get_int("k.u64_huge"); }, {"k.u64_huge", "does not fit in int64"});
    expect_error([&] { file.get_int("k.str"); }, {path, "k.str", "is of type str", "expected an integer"});
    expect_error([&] { file.get_int("k.bool"); }, {"k.bool", "expected an integer"});
    expect_error([&] { file.get_float("k.str"); }, {"k.str", "expected a number"});
    expect_error([&] { file.get_string("k.u8"); }, {"k.u8", "expected a string"});
    expect_error([&] { file.get_string_array("k.arr_u16"); },
                 {"k.arr_u16", "is an array of u16", "expected an array of strings"});
    expect_error([&] { file.get_int_array("k.arr_f32"); }, {"k.arr_f32", "expected an array of integers"});
    expect_error([&] { file.get_int_array("k.i32"); }, {"k.i32", "expected an array of integers"});
    expect_error([&] { file.get_string("k.missing"); }, {path, "no metadata key k.missing"});

    ASSERT_EQ(file.tensors().size(), 1u);
    const TensorView &view = file.tensors()[0];
    EXPECT_EQ(view.name, "blk.0.weight");
    EXPECT_EQ(view.shape, (Shape{3, 4}));
    EXPECT_EQ(to_f32(view)[11], 11.0f);
}

// A valid file to damage, and the name of its last tensor.
std::string write_victim(const std::string &dir) {
    const std::string path = dir + "/victim.gguf";
    Sample().write(path);
    return path;
}

TEST(Gguf, CorruptFilesGiveClearErrors) {
    const std::string dir = test::temp_dir("gguf");
    const std::string good = write_victim(dir);
    const std::vector<uint8_t> bytes = read_bytes(good);
    const std::string bad = dir + "/bad.gguf";

    write_bytes(bad, {bytes.begin(), bytes.begin() + 40});
    expect_error([&] { GgufFile f(bad); }, {bad, "not a valid GGUF file", "truncated header"});

    // Cutting the data section: the last tensor (the int64 scalar, 8 bytes + padding) loses its bytes.
    write_bytes(bad, {bytes.begin(), bytes.end() - 40});
    expect_error([&] { GgufFile f(bad); }, {bad, "speaker_encoder.xvector.bn.num_batches_tracked", "file truncated?"});

    std::vector<uint8_t> magic = bytes;
    std::memcpy(magic.data(), "GGML", 4);
    write_bytes(bad, magic);
    expect_error([&] { GgufFile f(bad); }, {bad, "bad magic", "expected \"GGUF\", got \"GGML\""});

    std::vector<uint8_t> version = bytes;
    version[4] = 1;
    write_bytes(bad, version);
    expect_error([&] { GgufFile f(bad); }, {bad, "unsupported GGUF version 1"});

    // Garbage with a right magic and version, then random bytes.
    std::vector<uint8_t> garbage(bytes.begin(), bytes.begin() + 8);
    for (float v : test::random_values(4096, 42, 0.0f, 256.0f)) garbage.push_back(uint8_t(v));
    write_bytes(bad, garbage);
    expect_error([&] { GgufFile f(bad); }, {bad, "not a valid GGUF file"});

    std::vector<uint8_t> text = {'{', '"', 'a', '"', ':', '1', '}'};
    write_bytes(bad, text);
    expect_error([&] { GgufFile f(bad); }, {bad, "bad magic"});

    write_bytes(bad, {});
    expect_error([&] { GgufFile f(bad); }, {bad, "bad magic", "only 0 bytes"});

    expect_error([&] { GgufFile f(dir + "/absent.gguf"); }, {dir + "/absent.gguf"});
}

// Found by tests/fuzz/fuzz_gguf: ggml multiplies a tensor's dimensions before its overflow guard, so
// ne = [2^32, 2^32] wraps to 0 elements and 0 bytes there; the view must not claim that shape.
TEST(Gguf, ShapesWhoseSizeOverflowsAreRejected) {
    std::vector<uint8_t> bytes;
    const auto put = [&](auto value) {
        const auto *p = reinterpret_cast<const uint8_t *>(&value);
        bytes.insert(bytes.end(), p, p + sizeof value);
    };
    bytes = {'G', 'G', 'U', 'F'};
    put(uint32_t(3));      // version
    put(int64_t(1));       // tensors
    put(int64_t(0));       // metadata keys
    put(uint64_t(1));      // name length
    bytes.push_back('w');  // name
    put(uint32_t(2));      // dimensions
    put(int64_t(1) << 32); // ne[0]
    put(int64_t(1) << 32); // ne[1]
    put(uint32_t(GGML_TYPE_F32));
    put(uint64_t(0)); // data offset
    bytes.resize(GGML_PAD(bytes.size(), 32) + 64, 0);
    const std::string path = test::temp_dir("gguf") + "/overflow.gguf";
    write_bytes(path, bytes);
    expect_error([&] { GgufFile f(path); }, {path, "tensor w", "4294967296, 4294967296", "overflows 64 bits"});
}

TEST(Gguf, InconsistentNameOrRankArraysAreRejected) {
    const std::string dir = test::temp_dir("gguf");
    for (const char *key : {"chatterbox.tensor_names", "chatterbox.tensor_ranks"}) {
        const std::string path = dir + "/bad.gguf";
        gguf_context *ctx = gguf_init_empty();
        ggml_init_params params{ggml_tensor_overhead() * 2 + 1024, nullptr, false};
        ggml_context *gctx = ggml_init(params);
        ggml_tensor *t = ggml_new_tensor_2d(gctx, GGML_TYPE_F32, 4, 3);
        ggml_set_name(t, "w");
        gguf_add_tensor(ctx, t);
        if (std::string(key) == "chatterbox.tensor_names") {
            const char *names[] = {"w", "extra"};
            gguf_set_arr_str(ctx, key, names, 2);
        } else {
            const int32_t ranks[] = {1}; // the tensor is 2-D
            gguf_set_arr_data(ctx, key, GGUF_TYPE_INT32, ranks, 1);
        }
        ASSERT_TRUE(gguf_write_to_file(ctx, path.c_str(), false));
        gguf_free(ctx);
        ggml_free(gctx);
        expect_error([&] { GgufFile f(path); }, {path, key});
    }
}

TEST(Gguf, WriterRefusesMisuseAndLeavesNoFileBehind) {
    const std::string dir = test::temp_dir("gguf");
    const std::string path = dir + "/out.gguf";
    auto zeros = [](void *) {};

    GgufWriter dup;
    dup.add_tensor("a", GGML_TYPE_F32, {2}, zeros);
    dup.add_tensor("a", GGML_TYPE_F32, {3}, zeros);
    expect_error([&] { dup.write(path); }, {"tensor a was added twice"});

    GgufWriter writer;
    expect_error([&] { writer.add_tensor("q", GGML_TYPE_Q8_0, {2, 33}, zeros); }, {"q", "33", "block size 32"});
    expect_error([&] { writer.add_tensor("big", GGML_TYPE_F32, {1, 2, 3, 4, 5}, zeros); }, {"big", "4 dimensions"});
    expect_error([&] { writer.add_tensor("", GGML_TYPE_F32, {1}, zeros); }, {"name must not be empty"});
    expect_error([&] { writer.set_string_array("chatterbox.tensor_names", {}); }, {"reserved"});
    expect_error([&] { writer.set_int("general.alignment", 64); }, {"general.alignment", "cannot be set"});

    GgufWriter failing;
    failing.add_tensor("ok", GGML_TYPE_F32, {4}, zeros);
    failing.add_tensor("broken", GGML_TYPE_F32, {4}, [](void *) { fail("source file vanished"); });
    expect_error([&] { failing.write(path); }, {"broken", "source file vanished"});
    EXPECT_FALSE(fs::exists(path));
    EXPECT_FALSE(fs::exists(path + ".tmp"));

    expect_error([&] { failing.write(dir + "/no/such/folder/x.gguf"); }, {"cannot create", "no/such/folder"});
}

TEST(WeightStore, CombinesFilesUnderPrefixesAndNamesDuplicates) {
    const std::string dir = test::temp_dir("store");
    const std::vector<float> values = {1, 2, 3, 4, 5, 6};
    auto entry = [&](const std::string &name, Shape shape) {
        return SafetensorsEntry{name, GGML_TYPE_F32, shape, [&values, shape](void *dst) {
                                    std::memcpy(dst, values.data(), size_t(shape_numel(shape)) * sizeof(float));
                                }};
    };
    write_safetensors(dir + "/a.safetensors", {entry("w", {2, 3}), entry("b", {3})});
    write_safetensors(dir + "/b.safetensors", {entry("layer.w", {6})});
    const std::string gguf = dir + "/c.gguf";
    Sample().write(gguf);

    WeightStore store;
    store.add_safetensors(dir + "/a.safetensors", "t3.");
    store.add_safetensors(dir + "/b.safetensors", "t3.");
    store.add_gguf(gguf);
    store.add_tensor(HostTensor::from_f32("extra.x", {2}, {7, 8}));

    EXPECT_EQ(store.size(), 3u + Sample().tensors.size() + 1u);
    EXPECT_EQ(store.get("t3.w").shape, (Shape{2, 3}));
    EXPECT_EQ(store.get("t3.w").name, "t3.w");
    EXPECT_EQ(to_f32(store.get("t3.layer.w"))[5], 6.0f);
    EXPECT_EQ(to_f32(store.get("extra.x"))[1], 8.0f);
    EXPECT_EQ(store.get(kLongA).shape, (Shape{3, 64}));
    EXPECT_EQ(store.names_with_prefix("t3."),
              (std::vector<std::string>{"t3.b", "t3.layer.w", "t3.tfmr.layers.0.mlp.up_proj.weight", "t3.w"}));
    EXPECT_EQ(store.find("t3.nothing"), nullptr);
    ASSERT_NE(store.gguf(), nullptr);
    EXPECT_EQ(store.gguf()->get_string("general.architecture"), "chatterbox");
    expect_error([&] { store.get("t3.nothing"); }, {"model has no tensor t3.nothing"});

    expect_error([&] { store.add_safetensors(dir + "/a.safetensors", "t3."); },
                 {"appears twice: in " + dir + "/a.safetensors and in " + dir + "/a.safetensors"});
    expect_error([&] { store.add_tensor(HostTensor::from_f32("t3.b", {1}, {0})); },
                 {"t3.b", "a.safetensors", "memory"});
    expect_error([&] { store.add_gguf(gguf); }, {"already has a GGUF file"});
    // A failed add leaves the store as it was.
    EXPECT_EQ(store.size(), 3u + Sample().tensors.size() + 1u);
    store.add_safetensors(dir + "/a.safetensors", "ve.");
    EXPECT_EQ(to_f32(store.get("ve.b"))[2], 3.0f);
}

} // namespace
} // namespace chatterbox
