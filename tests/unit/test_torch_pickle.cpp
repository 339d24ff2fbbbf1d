// The torch .pt reader on the fixtures of tests/data/pt (written by make_pt_fixtures.py exactly as
// torch.save lays them out): values, shapes, dtypes, strided views, plain Python values, and every
// hostile or broken file refused with a message that names the file and the problem.

#include "core/error.h"
#include "core/torch_pickle.h"
#include "support/test_support.h"
#include "support/torch_state_dict.h"

#include <gtest/gtest.h>

#include <climits>

namespace chatterbox {
namespace {

std::string pt(const std::string &name) { return test::data_path("pt/" + name); }

const HostTensor &tensor_at(const PtValue &dict, const std::string &key) {
    const PtValue &v = dict.at(key);
    EXPECT_EQ(v.kind, PtValue::Kind::Tensor) << key << " is a " << v.kind_name();
    if (!v.tensor) throw Error("no tensor at " + key);
    return *v.tensor;
}

std::vector<float> floats(const HostTensor &t) { return to_f32(t.view()); }
std::vector<int64_t> ints(const HostTensor &t) { return to_i64(t.view()); }

template <class F> std::vector<float> float_table(size_t n, F f) {
    std::vector<float> out(n);
    for (size_t i = 0; i < n; ++i) out[i] = float(f(i));
    return out;
}
template <class F> std::vector<int64_t> int_table(size_t n, F f) {
    std::vector<int64_t> out(n);
    for (size_t i = 0; i < n; ++i) out[i] = f(int64_t(i));
    return out;
}

std::vector<std::string> keys_of(const PtValue &dict) {
    std::vector<std::string> keys;
    for (const auto &[k, v] : dict.entries) keys.push_back(k.string);
    return keys;
}

// Loads `file` expecting an Error whose message holds the path and every one of `parts`.
void expect_refused(const std::string &file, std::initializer_list<std::string> parts) {
    SCOPED_TRACE(file);
    const std::string path = pt(file);
    try {
        load_torch_pt(path);
        ADD_FAILURE() << "no error thrown";
    } catch (const Error &e) {
        const std::string message = e.what();
        EXPECT_NE(message.find(path), std::string::npos) << message;
        for (const std::string &part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
    }
}

TEST(TorchPickle, LoadsTheConditionalsStructure) {
    const PtValue conds = load_torch_pt(pt("conds.pt"));
    ASSERT_EQ(conds.kind, PtValue::Kind::Dict);
    EXPECT_EQ(keys_of(conds), std::vector<std::string>({"t3", "gen"}));

    const PtValue &t3 = conds.at("t3");
    EXPECT_EQ(keys_of(t3), std::vector<std::string>({"speaker_emb", "clap_emb", "cond_prompt_speech_tokens",
                                                     "cond_prompt_speech_emb", "emotion_adv"}));
    const HostTensor &speaker = tensor_at(t3, "speaker_emb");
    EXPECT_EQ(speaker.type, GGML_TYPE_F32);
    EXPECT_EQ(speaker.shape, Shape({1, 256}));
    EXPECT_EQ(speaker.name, "t3.speaker_emb");
    EXPECT_EQ(floats(speaker), float_table(256, [](size_t i) { return (double(i) - 128) / 64; }));
    EXPECT_TRUE(t3.at("clap_emb").is_none());
    EXPECT_TRUE(t3.at("cond_prompt_speech_emb").is_none());
    const HostTensor &tokens = tensor_at(t3, "cond_prompt_speech_tokens");
    EXPECT_EQ(tokens.type, GGML_TYPE_I64);
    EXPECT_EQ(tokens.shape, Shape({1, 150}));
    EXPECT_EQ(ints(tokens), int_table(150, [](int64_t i) { return i * 37 % 6561; }));
    const HostTensor &emotion = tensor_at(t3, "emotion_adv"); // saved from 'cuda:0': the location is irrelevant
    EXPECT_EQ(emotion.shape, Shape({1, 1, 1}));
    EXPECT_EQ(floats(emotion), std::vector<float>({0.5f}));

    const PtValue &gen = conds.at("gen");
    EXPECT_EQ(keys_of(gen), std::vector<std::string>(
                                {"prompt_token", "prompt_token_len", "prompt_feat", "prompt_feat_len", "embedding"}));
    const HostTensor &prompt_token = tensor_at(gen, "prompt_token");
    EXPECT_EQ(prompt_token.type, GGML_TYPE_I64);
    EXPECT_EQ(prompt_token.shape, Shape({1, 12}));
    EXPECT_EQ(ints(prompt_token), int_table(12, [](int64_t i) { return i * 101 % 6561; }));
    EXPECT_EQ(tensor_at(gen, "prompt_token_len").shape, Shape({1}));
    EXPECT_EQ(ints(tensor_at(gen, "prompt_token_len")), std::vector<int64_t>({12}));
    const HostTensor &feat = tensor_at(gen, "prompt_feat");
    EXPECT_EQ(feat.shape, Shape({1, 24, 80}));
    EXPECT_EQ(floats(feat),
              float_table(24 * 80, [](size_t i) { return (double(i % 80) - 40) / 8 + double(i / 80) / 32; }));
    EXPECT_TRUE(gen.at("prompt_feat_len").is_none());
    const HostTensor &embedding = tensor_at(gen, "embedding");
    EXPECT_EQ(embedding.shape, Shape({1, 192}));
    EXPECT_EQ(floats(embedding), float_table(192, [](size_t i) { return (double(i % 13) - 6) / 4; }));
}

TEST(TorchPickle, CopiesStridedViewsOfASharedStorage) {
    const PtValue views = load_torch_pt(pt("views.pt")); // all views of one storage holding 0..23
    const HostTensor &base = tensor_at(views, "base");
    EXPECT_EQ(base.shape, Shape({4, 6}));
    EXPECT_EQ(floats(base), float_table(24, [](size_t i) { return i; }));

    const HostTensor &rows = tensor_at(views, "rows"); // base[1:, ::2]
    EXPECT_EQ(rows.shape, Shape({3, 3}));
    EXPECT_EQ(floats(rows), std::vector<float>({6, 8, 10, 12, 14, 16, 18, 20, 22}));

    const HostTensor &transposed = tensor_at(views, "transposed"); // base.t()
    EXPECT_EQ(transposed.shape, Shape({6, 4}));
    EXPECT_EQ(floats(transposed), float_table(24, [](size_t i) { return (i % 4) * 6 + i / 4; }));

    const HostTensor &element = tensor_at(views, "element"); // base[2, 3], a 0-d tensor
    EXPECT_EQ(element.shape, Shape({}));
    EXPECT_EQ(floats(element), std::vector<float>({15}));

    const HostTensor &broadcast = tensor_at(views, "broadcast"); // base[0, 4:7].expand(2, 3)
    EXPECT_EQ(broadcast.shape, Shape({2, 3}));
    EXPECT_EQ(floats(broadcast), std::vector<float>({4, 5, 6, 4, 5, 6}));

    const HostTensor &empty = tensor_at(views, "empty");
    EXPECT_EQ(empty.shape, Shape({0, 5}));
    EXPECT_TRUE(empty.bytes.empty());

    // The same tensor object pickled twice is one tensor, as in Python.
    EXPECT_EQ(views.at("base_again").tensor, views.at("base").tensor);

    const PtValue &labels = views.at("labels");
    ASSERT_EQ(labels.kind, PtValue::Kind::List);
    ASSERT_EQ(labels.items.size(), 300u);
    for (size_t i = 0; i < labels.items.size(); ++i) ASSERT_EQ(labels.items[i].string, "v" + std::to_string(i));
    EXPECT_EQ(views.at("last_label_again").string, "v299");
}

TEST(TorchPickle, ConvertsEveryStorageType) {
    const PtValue file = load_torch_pt(pt("dtypes.pt"));
    const HostTensor &f16 = tensor_at(file, "f16");
    EXPECT_EQ(f16.type, GGML_TYPE_F16);
    EXPECT_EQ(f16.shape, Shape({2, 3}));
    EXPECT_EQ(floats(f16), std::vector<float>({0.5f, -1.0f, 2.0f, 65504.0f, -0.25f, 0.0f}));
    const HostTensor &bf16 = tensor_at(file, "bf16");
    EXPECT_EQ(bf16.type, GGML_TYPE_BF16);
    EXPECT_EQ(floats(bf16), std::vector<float>({1.5f, -2.0f, 0.15625f}));
    const HostTensor &f64 = tensor_at(file, "f64"); // float64 becomes f32
    EXPECT_EQ(f64.type, GGML_TYPE_F32);
    EXPECT_EQ(floats(f64), std::vector<float>({0.1f, -3.0f}));
    const HostTensor &i32 = tensor_at(file, "i32");
    EXPECT_EQ(i32.type, GGML_TYPE_I32);
    EXPECT_EQ(i32.shape, Shape({2, 2}));
    EXPECT_EQ(ints(i32), std::vector<int64_t>({-7, 0, INT32_MAX, INT32_MIN}));
    const HostTensor &flags = tensor_at(file, "bool"); // bool and uint8 become i32
    EXPECT_EQ(flags.type, GGML_TYPE_I32);
    EXPECT_EQ(ints(flags), std::vector<int64_t>({1, 0, 1}));
    EXPECT_EQ(ints(tensor_at(file, "u8")), std::vector<int64_t>({0, 255}));
    EXPECT_EQ(floats(tensor_at(file, "parameter")), std::vector<float>({0.25f, -4.0f})); // nn.Parameter
    EXPECT_EQ(floats(tensor_at(file, "with_metadata")), std::vector<float>({3.0f}));     // metadata flags all False
}

TEST(TorchPickle, ReadsPlainPythonValues) {
    const PtValue file = load_torch_pt(pt("dtypes.pt")); // protocol 4: FRAME, MEMOIZE, STACK_GLOBAL ...
    const PtValue &v = file.at("values");
    EXPECT_TRUE(v.at("none").is_none());
    EXPECT_EQ(v.at("true").kind, PtValue::Kind::Bool);
    EXPECT_TRUE(v.at("true").boolean);
    EXPECT_FALSE(v.at("false").boolean);
    EXPECT_EQ(v.at("small").integer, 7);
    EXPECT_EQ(v.at("negative").integer, -3);
    EXPECT_EQ(v.at("medium").integer, 40000);
    EXPECT_EQ(v.at("large").integer, int64_t(1) << 40);
    EXPECT_EQ(v.at("min_i64").integer, INT64_MIN);
    EXPECT_EQ(v.at("real").kind, PtValue::Kind::Float);
    EXPECT_EQ(v.at("real").real, 1.5);
    EXPECT_EQ(v.at("text").string, "h\xc3\xa9llo");

    const PtValue &list = v.at("list");
    ASSERT_EQ(list.kind, PtValue::Kind::List);
    ASSERT_EQ(list.items.size(), 3u);
    EXPECT_EQ(list.items[0].integer, 1);
    EXPECT_EQ(list.items[1].string, "two");
    ASSERT_EQ(list.items[2].kind, PtValue::Kind::Tuple);
    EXPECT_EQ(list.items[2].items[0].real, 3.0);
    EXPECT_TRUE(list.items[2].items[1].is_none());
    EXPECT_EQ(v.at("single").items.at(0).string, "only");
    for (const auto &[key, n] : {std::pair<std::string, size_t>{"tuple1", 1}, {"tuple3", 3}, {"tuple4", 4}}) {
        const PtValue &t = v.at(key);
        EXPECT_EQ(t.kind, PtValue::Kind::Tuple) << key;
        ASSERT_EQ(t.items.size(), n) << key;
        for (size_t i = 0; i < n; ++i) EXPECT_EQ(t.items[i].integer, int64_t(i + 1)) << key;
    }
    const PtValue &b = v.at("nested").at("a").at("b");
    ASSERT_EQ(b.items.size(), 2u);
    EXPECT_EQ(b.items[0].kind, PtValue::Kind::List);
    EXPECT_EQ(b.items[1].kind, PtValue::Kind::Dict);
    EXPECT_EQ(file.at("many").items.size(), 300u);
    EXPECT_EQ(file.at("many_last_again").string, "s299");
    EXPECT_EQ(load_torch_pt(pt("binunicode8.pt")).string, "hi");
}

TEST(TorchPickle, LookupsNameTheMissingKey) {
    const PtValue conds = load_torch_pt(pt("conds.pt"));
    EXPECT_EQ(conds.find("nope"), nullptr);
    EXPECT_NE(conds.find("gen"), nullptr);
    try {
        conds.at("t3").at("speaker");
        ADD_FAILURE() << "no error thrown";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("key 'speaker' not found"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("'speaker_emb'"), std::string::npos) << e.what();
    }
    EXPECT_THROW(conds.at("t3").at("clap_emb").at("x"), Error); // None is not a dict
    EXPECT_EQ(conds.at("t3").at("clap_emb").kind_name(), "None");
    EXPECT_EQ(conds.at("t3").at("speaker_emb").kind_name(), "tensor");
}

TEST(TorchPickle, RefusesCodeExecution) {
    expect_refused("malicious.pt",
                   {"refusing to load", "pickle global 'os.system' is not allowed (only tensors, dicts, "
                                        "lists, tuples, None, numbers and strings)"});
    expect_refused("malicious_stack_global.pt", {"refusing to load", "pickle global 'builtins.eval' is not allowed"});
    expect_refused("escape_global.pt", {"refusing to load", "pickle global 'os\\x1b[2J.system' is not allowed"});
    expect_refused("call_storage_class.pt", {"refusing to load", "'torch.FloatStorage'", "cannot be called"});
}

TEST(TorchPickle, RefusesResourceBombs) {
    expect_refused("self_reference.pt", {"nests deeper than", "refers to itself"});
    expect_refused("billion_laughs.pt", {"expands to more than"});
    expect_refused("deep_marks.pt", {"MARKs nested deeper than 1000"});
    expect_refused("broadcast_bomb.pt", {"size [1099511627776]", "stride [0]", "refusing a hostile view"});
}

// BUILD (an object's pickled state): only a dict's attributes, as the `_metadata` of nn.Module.state_dict()
// (tests/support/torch_state_dict.h writes whole state dicts; test_mtl_folder loads them).
TEST(TorchPickle, BuildSetsOnlyADictsAttributes) {
    const std::string path = test::temp_dir("pt") + "/build.pt";
    // {'a': 1} (PROTO 2, EMPTY_DICT, BINUNICODE "a", BININT1 1, SETITEM), then BUILD with the state {}.
    test::write_torch_archive(path,
                              std::string("\x80\x02}X\x01\x00\x00\x00"
                                          "aK\x01"
                                          "s}b.",
                                          15),
                              {});
    const PtValue dict = load_torch_pt(path);
    ASSERT_EQ(dict.kind, PtValue::Kind::Dict);
    EXPECT_EQ(dict.at("a").integer, 1); // the items, not the attributes
    EXPECT_EQ(dict.entries.size(), 1u);
    for (const char *pickle : {"\x80\x02]}b.", "\x80\x02}K\x01"
                                               "b."}) { // a list's state; an int as state
        test::write_torch_archive(path, pickle, {});
        try {
            load_torch_pt(path);
            ADD_FAILURE() << "BUILD accepted";
        } catch (const Error &e) {
            EXPECT_TRUE(test::contains(e.what(), "refusing to load " + path));
            EXPECT_TRUE(test::contains(e.what(), "BUILD"));
        }
    }
}

TEST(TorchPickle, BrokenArchivesGiveClearErrors) {
    expect_refused("not_a_zip.pt", {"not a zip archive"});
    expect_refused("truncated.pt", {"damaged zip archive", "truncated?"});
    expect_refused("missing_pkl.pt", {"no <folder>/data.pkl record"});
    expect_refused("big_endian.pt", {"byte order 'big' is not supported"});
    expect_refused("does_not_exist.pt", {"cannot open: no such file"});
}

TEST(TorchPickle, BrokenPicklesGiveClearErrors) {
    expect_refused("truncated_pickle.pt", {"pickle byte 5", "BINUNICODE (0x58)", "truncated pickle", "10 more bytes"});
    expect_refused("unknown_opcode.pt", {"pickle byte 2", "unknown opcode 0xff"});
    expect_refused("stack_underflow.pt", {"SETITEM (0x73)", "stack underflow"});
    expect_refused("bad_memo.pt", {"BINGET (0x68)", "bad memo index 5"});
    expect_refused("no_stop.pt", {"truncated pickle", "without a STOP opcode"});
}

TEST(TorchPickle, BadTensorsGiveClearErrors) {
    expect_refused("short_storage.pt",
                   {"storage record 'archive/data/0' is too short", "holds 8 bytes", "100 float32"});
    expect_refused("missing_storage.pt", {"storage record 'archive/data/0' is missing"});
    expect_refused("view_out_of_range.pt", {"size [3, 3]", "reaches element 8", "storage holds 6 elements"});
    expect_refused("negative_shape.pt", {"negative dimension -1"});
    expect_refused("overflow_shape.pt", {"overflows 64 bits"});
    expect_refused("negated_view.pt", {"tensor metadata 'neg' is set"});
}

} // namespace
} // namespace chatterbox
