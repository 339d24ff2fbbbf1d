// safetensors: writer layout, write -> read round trip, and a clear error for every kind of broken file.

#include "core/error.h"
#include "core/safetensors.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>

namespace chatterbox {
namespace {

std::vector<uint8_t> read_bytes(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string &path, const std::vector<uint8_t> &bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
}

// A file made by hand: 8-byte length (header.size() unless overridden), the header text, then data_size bytes.
std::vector<uint8_t> raw_file(const std::string &header, size_t data_size, uint64_t header_length) {
    std::string text;
    for (int i = 0; i < 8; ++i) text += char(uint8_t(header_length >> (8 * i)));
    text += header;
    for (size_t i = 0; i < data_size; ++i) text += char(uint8_t(i));
    return {text.begin(), text.end()};
}
std::vector<uint8_t> raw_file(const std::string &header, size_t data_size) {
    return raw_file(header, data_size, header.size());
}

// Opening `bytes` as a safetensors file throws an Error naming the file and containing every fragment.
void expect_open_error(const std::vector<uint8_t> &bytes, const std::vector<std::string> &fragments) {
    const std::string path = test::temp_dir("safetensors") + "/broken.safetensors";
    write_bytes(path, bytes);
    try {
        SafetensorsFile file(path);
        ADD_FAILURE() << "opened without error";
    } catch (const Error &e) {
        const std::string message = e.what();
        EXPECT_NE(message.find(path), std::string::npos) << message;
        for (const auto &fragment : fragments) EXPECT_NE(message.find(fragment), std::string::npos) << message;
    }
}

SafetensorsEntry entry_from(const HostTensor &t) {
    return {t.name, t.type, t.shape,
            [&t](void *dst) { std::copy(t.bytes.begin(), t.bytes.end(), static_cast<uint8_t *>(dst)); }};
}

HostTensor patterned(const std::string &name, ggml_type type, const Shape &shape) {
    HostTensor t(name, type, shape);
    for (size_t i = 0; i < t.bytes.size(); ++i) t.bytes[i] = uint8_t(i * 7 + name.size());
    return t;
}

TEST(Safetensors, RoundTripAllDtypesMetadataAndOrder) {
    const std::vector<HostTensor> tensors = {
        patterned("z.f16", GGML_TYPE_F16, {4, 3}),  patterned("a.bf16", GGML_TYPE_BF16, {5}),
        patterned("m.i32", GGML_TYPE_I32, {2, 2}),  patterned("b.f32", GGML_TYPE_F32, {2, 3, 4}),
        patterned("count", GGML_TYPE_I64, {}),      patterned("y.i64", GGML_TYPE_I64, {3}),
        patterned("empty", GGML_TYPE_F32, {0, 16}), patterned("c.f32", GGML_TYPE_F32, {1, 2, 3, 4}),
    };
    std::vector<SafetensorsEntry> entries;
    for (const auto &t : tensors) entries.push_back(entry_from(t));
    const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "round \"trip\" é"}};
    const std::string path = test::temp_dir("safetensors") + "/model.safetensors";
    write_safetensors(path, entries, metadata);
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

    SafetensorsFile file(path);
    EXPECT_EQ(file.path(), path);
    EXPECT_EQ(file.metadata(), metadata);
    // Element size descending, then name.
    const std::vector<std::string> expected_order = {"count", "y.i64", "b.f32",  "c.f32",
                                                     "empty", "m.i32", "a.bf16", "z.f16"};
    ASSERT_EQ(file.tensors().size(), expected_order.size());
    for (size_t i = 0; i < expected_order.size(); ++i) EXPECT_EQ(file.tensors()[i].name, expected_order[i]);
    for (const auto &t : tensors) {
        SCOPED_TRACE(t.name);
        const TensorView *view = file.find(t.name);
        ASSERT_NE(view, nullptr);
        EXPECT_EQ(view->type, t.type);
        EXPECT_EQ(view->shape, t.shape);
        ASSERT_EQ(view->nbytes, t.bytes.size());
        const auto *data = static_cast<const uint8_t *>(view->data);
        EXPECT_EQ(std::vector<uint8_t>(data, data + view->nbytes), t.bytes);
        // Larger elements come first, so every tensor is aligned to its element size.
        EXPECT_EQ(reinterpret_cast<uintptr_t>(view->data) % ggml_type_size(t.type), 0u);
    }
    EXPECT_EQ(file.find("absent"), nullptr);
}

TEST(Safetensors, WriterLayoutIsCompactAndPadded) {
    const HostTensor t = HostTensor::from_f32("w", {2}, {1.5f, -2.0f});
    const std::string path = test::temp_dir("safetensors") + "/one.safetensors";
    write_safetensors(path, {entry_from(t)});
    const std::vector<uint8_t> bytes = read_bytes(path);
    const std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    const size_t padded = (header.size() + 7) / 8 * 8;
    ASSERT_EQ(bytes.size(), 8 + padded + 8);
    uint64_t length = 0;
    std::memcpy(&length, bytes.data(), 8);
    EXPECT_EQ(length, padded);
    EXPECT_EQ(std::string(bytes.begin() + 8, bytes.begin() + 8 + long(padded)),
              header + std::string(padded - header.size(), ' '));
    EXPECT_EQ(std::memcmp(bytes.data() + 8 + padded, t.bytes.data(), 8), 0);
}

TEST(Safetensors, WriterFailureLeavesNoFile) {
    const std::string dir = test::temp_dir("safetensors");
    const std::string path = dir + "/partial.safetensors";
    const HostTensor good = HostTensor::from_f32("good", {2}, {1, 2});
    std::vector<SafetensorsEntry> entries = {entry_from(good),
                                             {"bad", GGML_TYPE_F32, {4}, [](void *) { fail("generator broke"); }}};
    EXPECT_THROW(write_safetensors(path, entries), Error);
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(Safetensors, WriterRejectsBadEntries) {
    const std::string dir = test::temp_dir("safetensors");
    const HostTensor t = HostTensor::from_f32("t", {1}, {1});
    auto expect_write_error = [](const std::string &path, std::vector<SafetensorsEntry> entries,
                                 std::initializer_list<const char *> fragments) {
        try {
            write_safetensors(path, std::move(entries));
            ADD_FAILURE() << "wrote without error";
        } catch (const Error &e) {
            const std::string message = e.what();
            EXPECT_NE(message.find(path), std::string::npos) << message;
            for (const char *fragment : fragments) EXPECT_NE(message.find(fragment), std::string::npos) << message;
        }
        EXPECT_FALSE(std::filesystem::exists(path));
    };
    expect_write_error(dir + "/dup.safetensors", {entry_from(t), entry_from(t)}, {"'t'", "twice"});
    expect_write_error(dir + "/q8.safetensors", {{"quant", GGML_TYPE_Q8_0, {32}, [](void *) {}}}, {"'quant'", "q8_0"});
    expect_write_error(dir + "/meta.safetensors", {{"__metadata__", GGML_TYPE_F32, {1}, [](void *) {}}},
                       {"__metadata__"});
    expect_write_error(dir + "/neg.safetensors", {{"neg", GGML_TYPE_F32, {2, -1}, [](void *) {}}},
                       {"'neg'", "negative", "[2, -1]"});
    expect_write_error(dir + "/nofill.safetensors", {{"lazy", GGML_TYPE_F32, {1}, nullptr}}, {"'lazy'", "fill"});
    expect_write_error(dir + "/missing/folder/x.safetensors", {entry_from(t)}, {"cannot create"});
}

TEST(Safetensors, TooShortFile) { expect_open_error({1, 2, 3}, {"3 bytes", "too short"}); }

TEST(Safetensors, AbsurdHeaderLength) {
    expect_open_error(raw_file("{}", 0, uint64_t(1) << 60), {"header length 1152921504606846976", "limit"});
}

TEST(Safetensors, TruncatedHeader) {
    const std::string header = R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
    std::vector<uint8_t> bytes = raw_file(header, 4);
    bytes.resize(20);
    expect_open_error(bytes, {"header length " + std::to_string(header.size()), "exceeds", "truncated"});
}

TEST(Safetensors, TruncatedData) {
    const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                               R"("x":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})";
    expect_open_error(raw_file(header, 20), {"tensor 'x'", "[8, 24)", "outside the file", "data section is 20 bytes"});
}

TEST(Safetensors, InvalidJson) { expect_open_error(raw_file(R"({"x": {"dtype": )", 0), {"not valid JSON"}); }

TEST(Safetensors, HeaderNotAnObject) { expect_open_error(raw_file("[1, 2]", 0), {"array", "expected an object"}); }

TEST(Safetensors, UnknownDtype) {
    expect_open_error(raw_file(R"({"w64":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8),
                      {"tensor 'w64'", "'F64'", "not supported"});
}

TEST(Safetensors, OverlappingTensors) {
    const std::string header = R"({"p":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                               R"("q":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
    expect_open_error(raw_file(header, 12), {"tensor 'q'", "overlaps tensor 'p'"});
}

TEST(Safetensors, SizeMismatch) {
    expect_open_error(raw_file(R"({"short":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 12),
                      {"tensor 'short'", "is 8 bytes", "needs 12 bytes"});
}

TEST(Safetensors, OffsetsBackwards) {
    expect_open_error(raw_file(R"({"rev":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 12),
                      {"tensor 'rev'", "end before they begin"});
}

TEST(Safetensors, MissingField) {
    expect_open_error(raw_file(R"({"half":{"dtype":"F32","shape":[1]}})", 4), {"tensor 'half'", "'data_offsets'"});
}

TEST(Safetensors, BadShape) {
    expect_open_error(raw_file(R"({"neg":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
                      {"tensor 'neg'", "[-1]"});
    expect_open_error(raw_file(R"({"huge":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4),
                      {"tensor 'huge'", "64 bits"});
}

TEST(Safetensors, DuplicateName) {
    const std::string header = R"({"twin":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                               R"("twin":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
    expect_open_error(raw_file(header, 8), {"'twin'", "twice"});
}

TEST(Safetensors, BadMetadata) {
    expect_open_error(raw_file(R"({"__metadata__":{"epoch":3}})", 0), {"__metadata__", "'epoch'", "string"});
    expect_open_error(raw_file(R"({"__metadata__":"pt"})", 0), {"__metadata__", "expected an object"});
}

TEST(Safetensors, MissingFileNamesThePath) {
    const std::string path = test::temp_dir("safetensors") + "/nowhere.safetensors";
    try {
        SafetensorsFile file(path);
        ADD_FAILURE() << "opened a missing file";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
}

} // namespace
} // namespace chatterbox
