#include "support/torch_state_dict.h"

#include "core/error.h"

#include <zip.h>

#include <cstring>
#include <memory>

namespace chatterbox::test {

namespace {

// torch's storage class of a ggml type.
const char *storage_class(ggml_type type) {
    switch (type) {
    case GGML_TYPE_F32:
        return "FloatStorage";
    case GGML_TYPE_F16:
        return "HalfStorage";
    case GGML_TYPE_BF16:
        return "BFloat16Storage";
    case GGML_TYPE_I64:
        return "LongStorage";
    case GGML_TYPE_I32:
        return "IntStorage";
    default:
        fail("torch state dict writer: no torch storage for ", ggml_type_name(type));
    }
}

// The opcodes Python's pickler (protocol 2) writes for a state dict.
class Pickle {
  public:
    Pickle() { op(0x80).byte(2); } // PROTO 2
    std::string finish() {
        op('.'); // STOP
        return std::move(out_);
    }

    Pickle &op(uint8_t code) { return byte(code); }
    Pickle &global(const char *module, const char *name) {
        op('c');
        out_ += concat(module, "\n", name, "\n");
        return *this;
    }
    Pickle &string(const std::string &s) { // BINUNICODE
        op('X');
        le(uint64_t(s.size()), 4);
        out_ += s;
        return *this;
    }
    Pickle &integer(int64_t v) { // BININT1 / BININT2 / BININT / LONG1, as Python chooses
        if (v >= 0 && v < 256) return op('K').le(uint64_t(v), 1);
        if (v >= 0 && v < 65536) return op('M').le(uint64_t(v), 2);
        if (v >= INT32_MIN && v <= INT32_MAX) return op('J').le(uint64_t(uint32_t(int32_t(v))), 4);
        return op(0x8a).byte(8).le(uint64_t(v), 8);
    }
    Pickle &int_tuple(const Shape &values) { // EMPTY_TUPLE, TUPLE1..3, or MARK ... TUPLE
        if (values.empty()) return op(')');
        if (values.size() > 3) op('(');
        for (int64_t v : values) integer(v);
        return op(values.size() > 3 ? 't' : uint8_t(0x84 + values.size())); // TUPLE1 = 0x85
    }
    Pickle &empty_ordered_dict() { return global("collections", "OrderedDict").op(')').op('R'); }

  private:
    Pickle &byte(uint8_t b) {
        out_ += char(b);
        return *this;
    }
    Pickle &le(uint64_t v, int n) {
        for (int i = 0; i < n; ++i) out_ += char((v >> (8 * i)) & 0xff);
        return *this;
    }
    std::string out_;
};

Shape contiguous_strides(const Shape &shape) {
    Shape strides(shape.size());
    int64_t step = 1;
    for (size_t d = shape.size(); d-- > 0;) {
        strides[d] = step;
        step *= shape[d];
    }
    return strides;
}

std::string state_dict_pickle(const std::vector<TensorView> &tensors) {
    constexpr size_t kBatch = 1000; // Python's pickler writes SETITEMS every 1000 items
    Pickle p;
    p.empty_ordered_dict();
    for (size_t i = 0; i < tensors.size(); ++i) {
        if (i % kBatch == 0) p.op('('); // MARK
        const TensorView &t = tensors[i];
        p.string(t.name).global("torch._utils", "_rebuild_tensor_v2").op('(');
        p.op('(').string("storage").global("torch", storage_class(t.type)).string(std::to_string(i)).string("cpu");
        p.integer(t.numel()).op('t').op('Q');                                            // TUPLE, BINPERSID
        p.integer(0).int_tuple(t.shape).int_tuple(contiguous_strides(t.shape)).op(0x89); // NEWFALSE
        p.empty_ordered_dict().op('t').op('R');                                          // TUPLE, REDUCE
        if (i % kBatch == kBatch - 1 || i + 1 == tensors.size()) p.op('u');              // SETITEMS
    }
    // state_dict()'s attribute: BUILD with {'_metadata': OrderedDict({'': {'version': 1}})}.
    p.op('}').string("_metadata").empty_ordered_dict();
    p.string("").op('}').string("version").integer(1).op('s').op('s').op('s').op('b'); // SETITEM x3, BUILD
    return p.finish();
}

struct ZipCloser {
    void operator()(zip_t *zip) const { zip_discard(zip); }
};

} // namespace

std::vector<TensorView> state_dict_of(const WeightStore &store, const std::string &prefix) {
    std::vector<TensorView> out;
    for (const std::string &name : store.names_with_prefix(prefix)) {
        TensorView view = store.get(name);
        view.name = name.substr(prefix.size());
        out.push_back(view);
    }
    return out;
}

void write_torch_state_dict(const std::string &path, const std::vector<TensorView> &tensors, const std::string &root) {
    write_torch_archive(path, state_dict_pickle(tensors), tensors, root);
}

void write_torch_archive(const std::string &path, const std::string &data_pkl, const std::vector<TensorView> &tensors,
                         const std::string &root) {
    const std::vector<std::pair<std::string, std::string>> small = {
        {"data.pkl", data_pkl}, {".format_version", "1"}, {".storage_alignment", "64"}, {"byteorder", "little"}};
    int code = 0;
    std::unique_ptr<zip_t, ZipCloser> zip(zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code));
    if (!zip) fail(path, ": cannot create the zip archive (libzip error ", code, ")");
    // libzip reads the buffers at zip_close: they must outlive it, so the tensors' own bytes are used.
    const auto add = [&](const std::string &name, const void *data, size_t size) {
        zip_source_t *source = zip_source_buffer(zip.get(), data, size, 0);
        const zip_int64_t index = source ? zip_file_add(zip.get(), (root + "/" + name).c_str(), source, 0) : -1;
        if (index < 0) {
            if (source) zip_source_free(source);
            fail(path, ": cannot add ", name, ": ", zip_strerror(zip.get()));
        }
        zip_set_file_compression(zip.get(), zip_uint64_t(index), ZIP_CM_STORE, 0);
    };
    for (const auto &[name, bytes] : small) add(name, bytes.data(), bytes.size());
    for (size_t i = 0; i < tensors.size(); ++i) add("data/" + std::to_string(i), tensors[i].data, tensors[i].nbytes);
    static const std::string version = "3\n", serialization_id(40, '0');
    add("version", version.data(), version.size());
    add(".data/serialization_id", serialization_id.data(), serialization_id.size());
    if (zip_close(zip.get()) != 0) fail(path, ": cannot write the zip archive: ", zip_strerror(zip.get()));
    zip.release(); // zip_close freed it
}

} // namespace chatterbox::test
