// .npy reading and writing: the golden arrays numpy wrote, round trips, and broken files.

#include "core/error.h"
#include "core/npy.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

namespace chatterbox {
using test::expect_error;

namespace {

using test::golden_path;

std::string read_bytes(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string &path, const std::string &bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// A format 1.0 .npy file with the given header dict and data bytes.
std::string npy_file(const std::string &dict, const std::string &data) {
    const std::string header = dict + "\n";
    return std::string("\x93NUMPY\x01\x00", 8) + char(header.size() & 0xff) + char(header.size() >> 8) + header + data;
}

nlohmann::json golden_index() {
    std::ifstream in(golden_path("index.json"));
    return nlohmann::json::parse(in);
}

// Reads float i of a little-endian <f4 .npy file straight from its bytes (format 1.0 header).
float raw_f32(const std::string &file, size_t i) {
    const auto header_length = size_t(uint8_t(file[8])) | size_t(uint8_t(file[9])) << 8;
    float v;
    std::memcpy(&v, file.data() + 10 + header_length + 4 * i, 4);
    return v;
}

// Runs `action`, expects an Error whose message holds every one of `parts`.
TEST(Npy, GoldenArraysMatchTheIndex) {
    const std::map<std::string, std::pair<std::string, size_t>> dtypes = {
        {"float32", {"<f4", 4}}, {"int64", {"<i8", 8}}, {"int32", {"<i4", 4}}};
    size_t checked = 0;
    const nlohmann::json index = golden_index();
    for (const auto &[name, entry] : index["arrays"].items()) {
        const std::string file = entry["file"];
        if (file.size() < 4 || file.substr(file.size() - 4) != ".npy") continue;
        SCOPED_TRACE(file);
        const NpyArray array = read_npy(golden_path(file));
        EXPECT_EQ(array.shape, entry["shape"].get<Shape>());
        const auto &[descr, size] = dtypes.at(entry["dtype"].get<std::string>());
        EXPECT_EQ(array.descr, descr);
        EXPECT_EQ(array.data.size(), size_t(array.numel()) * size);
        ++checked;
    }
    EXPECT_GE(checked, 40u);
}

TEST(Npy, TextTokensMatchTheIndexList) {
    const NpyArray tokens = read_npy(golden_path("text_tokens.npy"));
    EXPECT_EQ(tokens.descr, "<i4");
    EXPECT_EQ(tokens.shape, Shape({55}));
    EXPECT_EQ(tokens.i64(), golden_index()["text_tokens_list"].get<std::vector<int64_t>>());
    EXPECT_THROW(tokens.f32(), Error);
}

TEST(Npy, T3TextTokensWrapTheTextInStartAndStop) {
    const NpyArray t3 = read_npy(golden_path("t3_text_tokens.npy"));
    EXPECT_EQ(t3.descr, "<i8");
    ASSERT_EQ(t3.shape, Shape({2, 57}));
    const auto text = golden_index()["text_tokens_list"].get<std::vector<int64_t>>();
    const std::vector<int64_t> values = t3.i64();
    for (int row = 0; row < 2; ++row) { // row 1 is the CFG copy
        const auto begin = values.begin() + row * 57;
        EXPECT_EQ(begin[0], 255);
        EXPECT_EQ(std::vector<int64_t>(begin + 1, begin + 56), text);
        EXPECT_EQ(begin[56], 0);
    }
}

TEST(Npy, FloatValuesMatchTheRawFileBytes) {
    const std::string path = golden_path("flow_mel.npy");
    const NpyArray mel = read_npy(path);
    ASSERT_EQ(mel.shape, Shape({1, 80, 90}));
    const std::vector<float> values = mel.f32();
    ASSERT_EQ(values.size(), 7200u);
    const std::string file = read_bytes(path);
    for (size_t i : {size_t(0), size_t(1), size_t(89), size_t(90), size_t(3333), size_t(7199)})
        EXPECT_EQ(values[i], raw_f32(file, i)) << "element " << i;
    for (float v : values) ASSERT_TRUE(std::isfinite(v));
    EXPECT_THROW(mel.i64(), Error);
}

TEST(Npy, FortranOrderIsReorderedToCOrder) {
    // The index says prompt_feat (1,350,80) is the reference mel (1,80,350) transposed; numpy stored the
    // transposed view in Fortran order.
    const NpyArray feat = read_npy(golden_path("s3gen_prompt_feat.npy"));
    const NpyArray mel = read_npy(golden_path("s3gen_ref_mel_24k.npy"));
    ASSERT_EQ(feat.shape, Shape({1, 350, 80}));
    ASSERT_EQ(mel.shape, Shape({1, 80, 350}));
    const std::vector<float> f = feat.f32(), m = mel.f32();
    size_t mismatches = 0;
    for (size_t t = 0; t < 350; ++t)
        for (size_t c = 0; c < 80; ++c) mismatches += f[t * 80 + c] != m[c * 350 + t];
    EXPECT_EQ(mismatches, 0u);
    EXPECT_NE(f[1], m[1]); // the raw orders differ, so the check above is not trivially true
}

TEST(Npy, WriteThenReadRoundTrips) {
    const std::string dir = test::temp_dir("npy");
    const std::vector<NpyArray> arrays = {
        NpyArray::from_f32({2, 3}, {0.5f, -1.0f, 3.25f, 1e-30f, -0.0f, 7.0f}),
        NpyArray::from_i64({4}, {0, -1, int64_t(1) << 40, INT64_MIN}),
        NpyArray::from_i32({1, 2, 1}, {-7, 2147483647}),
        NpyArray::from_f32({}, {42.0f}),
        NpyArray::from_f32({0, 3}, {}),
    };
    for (size_t i = 0; i < arrays.size(); ++i) {
        const std::string path = dir + "/a" + std::to_string(i) + ".npy";
        write_npy(path, arrays[i]);
        const NpyArray back = read_npy(path);
        EXPECT_EQ(back.descr, arrays[i].descr);
        EXPECT_EQ(back.shape, arrays[i].shape);
        EXPECT_EQ(back.data, arrays[i].data);
        const std::string file = read_bytes(path);
        EXPECT_EQ(file.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
        EXPECT_EQ((file.size() - arrays[i].data.size()) % 64, 0u) << "the header is padded to 64 bytes";
    }
    EXPECT_EQ(NpyArray::from_i32({1, 2, 1}, {-7, 2147483647}).i64(), std::vector<int64_t>({-7, 2147483647}));
    // numpy's own header text, so numpy (and the reference scripts) read these files back.
    for (const auto &[file, dict] :
         {std::pair<std::string, std::string>{"a0", "{'descr': '<f4', 'fortran_order': False, "
                                                    "'shape': (2, 3), }"},
          {"a1", "{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }"},
          {"a3", "{'descr': '<f4', 'fortran_order': False, 'shape': (), }"}})
        EXPECT_EQ(read_bytes(dir + "/" + file + ".npy").substr(10, dict.size()), dict);
}

TEST(Npy, OtherDtypesConvert) {
    const double doubles[] = {0.1, -3.0};
    NpyArray f64{"<f8", {2}, std::vector<uint8_t>(sizeof doubles)};
    std::memcpy(f64.data.data(), doubles, sizeof doubles);
    EXPECT_EQ(f64.f32(), std::vector<float>({0.1f, -3.0f}));
    const NpyArray f16{"<f2", {3}, {0x00, 0x38, 0x00, 0xc0, 0xff, 0x7b}}; // 0.5, -2, 65504
    EXPECT_EQ(f16.f32(), std::vector<float>({0.5f, -2.0f, 65504.0f}));
    const NpyArray u8{"|u1", {2}, {0, 255}}, b1{"|b1", {2}, {1, 0}}, i16{"<i2", {1}, {0x00, 0x80}};
    EXPECT_EQ(u8.i64(), std::vector<int64_t>({0, 255}));
    EXPECT_EQ(b1.i64(), std::vector<int64_t>({1, 0}));
    EXPECT_EQ(i16.i64(), std::vector<int64_t>({-32768}));
    EXPECT_THROW(u8.f32(), Error);
    EXPECT_THROW(NpyArray::from_f32({2, 2}, {1.0f}), Error);
}

TEST(Npy, ReadsFormatVersions2And3) {
    const std::string dir = test::temp_dir("npy");
    const std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n";
    const std::string data("\x05\x00\x00\x00\xfe\xff\xff\xff", 8);
    for (char major : {'\x02', '\x03'}) {
        const uint32_t n = uint32_t(header.size());
        std::string file = std::string("\x93NUMPY", 6) + major + '\0';
        file.append(reinterpret_cast<const char *>(&n), 4);
        const std::string path = dir + "/v" + std::to_string(int(major)) + ".npy";
        write_bytes(path, file + header + data);
        const NpyArray array = read_npy(path);
        EXPECT_EQ(array.shape, Shape({2}));
        EXPECT_EQ(array.i64(), std::vector<int64_t>({5, -2}));
    }
}

TEST(Npy, BrokenFilesGiveClearErrors) {
    const std::string dir = test::temp_dir("npy");
    const std::string good = read_bytes(golden_path("text_tokens.npy"));
    auto check = [&](const std::string &name, const std::string &bytes, std::initializer_list<std::string> parts) {
        SCOPED_TRACE(name);
        const std::string path = dir + "/" + name;
        write_bytes(path, bytes);
        std::vector<std::string> all(parts);
        all.push_back(path);
        try {
            read_npy(path);
            ADD_FAILURE() << "no error thrown";
        } catch (const Error &e) {
            for (const std::string &part : all)
                EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
        }
    };
    check("cut_data.npy", good.substr(0, good.size() - 3), {"truncated", "needs 220 data bytes", "holds 217"});
    check("cut_header.npy", good.substr(0, 60), {"truncated", "header"});
    check("cut_length.npy", good.substr(0, 9), {"truncated"});
    check("extra.npy", good + "junk", {"corrupt", "holds 224"});
    check("magic.npy", "PK\x03\x04" + good.substr(4), {"not a .npy file"});
    check("version.npy", good.substr(0, 6) + "\x04" + good.substr(7), {"unsupported .npy format version 4.0"});
    const std::string four_ints(16, '\0');
    auto with_header = [&](const std::string &dict) { return npy_file(dict, four_ints); };
    check("big_endian.npy", with_header("{'descr': '>i4', 'fortran_order': False, 'shape': (4,), }"),
          {"dtype '>i4' is not supported"});
    check("no_tuple.npy", with_header("{'descr': '<i4', 'fortran_order': False, 'shape': [4], }"),
          {"malformed header", "expected '('"});
    check("negative.npy", with_header("{'descr': '<i4', 'fortran_order': False, 'shape': (-4,), }"),
          {"malformed header", "expected a dimension"});
    check("unknown_key.npy", with_header("{'descr': '<i4', 'fortran_order': False, 'shapz': (4,), }"),
          {"unexpected key 'shapz'"});
    check("no_shape.npy", with_header("{'descr': '<i4', 'fortran_order': False}"), {"lacks 'shape'"});
    check("bad_bool.npy", with_header("{'descr': '<i4', 'fortran_order': 0, 'shape': (4,), }"),
          {"expected True or False"});
    check("huge.npy", with_header("{'descr': '<i4', 'fortran_order': False, 'shape': (99999999999999999999,), }"),
          {"overflows 64 bits"});
    check("too_many.npy", with_header("{'descr': '<i4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"),
          {"more elements than 64 bits can count"});
    check("mismatch.npy", with_header("{'descr': '<i4', 'fortran_order': False, 'shape': (5,), }"),
          {"truncated", "needs 20 data bytes", "holds 16"});
    // A well-formed header without padding or trailing comma is fine.
    write_bytes(dir + "/ok.npy", with_header("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2)}"));
    EXPECT_EQ(read_npy(dir + "/ok.npy").shape, Shape({2, 2}));
    expect_error([&] { read_npy(dir + "/missing.npy"); }, {"cannot open", "missing.npy"});
    expect_error([&] { write_npy(dir + "/no/such/dir/x.npy", NpyArray::from_f32({1}, {1.0f})); },
                 {"cannot write", "x.npy"});
    expect_error(
        [&] {
            write_npy(dir + "/bad.npy", NpyArray{"<f4", {3}, {0, 0, 0, 0}});
        },
        {"needs 12 bytes", "holds 4"});
}

} // namespace
} // namespace chatterbox
