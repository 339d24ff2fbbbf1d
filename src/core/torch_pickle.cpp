#include "core/torch_pickle.h"

#include "core/error.h"
#include "core/pickle_vm.h"

#include <zip.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_map>

// Dtype policy: float32/float16/bfloat16/int64/int32 tensors keep their type; float64 becomes F32
// (ggml computes in f32 anyway); bool, uint8, int8 and int16 become I32 (lossless, and readable by
// to_i64). Tensors are copied into contiguous HostTensors whatever their strides and offset.

namespace chatterbox {

namespace {

using pickle::Object;
using Kind = pickle::Object::Kind;

constexpr zip_uint64_t kMaxPickleBytes = zip_uint64_t(64) << 20;
constexpr zip_uint64_t kMaxCompressionRatio = 64; // beyond this a compressed record is treated as a zip bomb
constexpr size_t kMaxDims = 64;
constexpr size_t kMaxDepth = 256;              // nesting of the converted value tree
constexpr size_t kMaxValues = size_t(1) << 20; // values in the converted tree (shared references count each time)
constexpr uint64_t kOutputSlackBytes = uint64_t(64) << 20;

// A disallowed global: reported as "refusing to load <path>: ...".
class Refusal : public Error {
  public:
    using Error::Error;
};

enum class Convert { Copy, F64ToF32, U8ToI32, I8ToI32, I16ToI32 };

struct StorageType {
    const char *name;  // the torch class, e.g. "FloatStorage"
    const char *dtype; // for messages
    size_t element_size;
    ggml_type output;
    Convert convert;
};

const StorageType kStorageTypes[] = {
    {"FloatStorage", "float32", 4, GGML_TYPE_F32, Convert::Copy},
    {"HalfStorage", "float16", 2, GGML_TYPE_F16, Convert::Copy},
    {"BFloat16Storage", "bfloat16", 2, GGML_TYPE_BF16, Convert::Copy},
    {"DoubleStorage", "float64", 8, GGML_TYPE_F32, Convert::F64ToF32},
    {"LongStorage", "int64", 8, GGML_TYPE_I64, Convert::Copy},
    {"IntStorage", "int32", 4, GGML_TYPE_I32, Convert::Copy},
    {"ShortStorage", "int16", 2, GGML_TYPE_I32, Convert::I16ToI32},
    {"CharStorage", "int8", 1, GGML_TYPE_I32, Convert::I8ToI32},
    {"ByteStorage", "uint8", 1, GGML_TYPE_I32, Convert::U8ToI32},
    {"BoolStorage", "bool", 1, GGML_TYPE_I32, Convert::U8ToI32},
};

const StorageType *find_storage_type(const std::string &global) { // "torch.FloatStorage"
    for (const StorageType &type : kStorageTypes)
        if (global == std::string("torch.") + type.name) return &type;
    return nullptr;
}

const char *const kRebuildTensor = "torch._utils._rebuild_tensor_v2";
const char *const kRebuildParameter = "torch._utils._rebuild_parameter";
const char *const kOrderedDict = "collections.OrderedDict";

// What a persistent id ('storage', torch.<Type>Storage, key, location, numel) names.
struct StorageRef {
    const StorageType *type = nullptr;
    std::string key;
    uint64_t numel = 0;
    zip_int64_t record = -1; // zip index of <root>/data/<key>
};

std::string describe(const Object &o) { return o.kind == Kind::Custom ? "storage" : o.kind_name(); }

// A name from the file, safe to print: control and non-ASCII bytes as \xNN, at most 200 characters.
std::string printable(const std::string &name) {
    std::string out;
    for (size_t i = 0; i < name.size() && i < 200; ++i) {
        const auto c = static_cast<unsigned char>(name[i]);
        if (c >= 0x20 && c < 0x7f) {
            out += char(c);
        } else {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        }
    }
    return name.size() > 200 ? out + "..." : out;
}

// ---- the zip archive ------------------------------------------------------------------------------------------------

bool starts_like_zip(const std::string &path) {
    char magic[4] = {};
    std::ifstream(path, std::ios::binary).read(magic, sizeof magic);
    return std::memcmp(magic, "PK\x03\x04", 4) == 0;
}

class TorchArchive {
  public:
    explicit TorchArchive(const std::string &path) : path_(path) {
        std::error_code missing;
        if (!std::filesystem::is_regular_file(path, missing)) fail("cannot open: no such file");
        int code = 0;
        zip_ = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
        if (!zip_) {
            zip_error_t error;
            zip_error_init_with_code(&error, code);
            const std::string reason = zip_error_strerror(&error);
            zip_error_fini(&error);
            if (code == ZIP_ER_NOZIP && starts_like_zip(path))
                fail("damaged zip archive: it starts like one but its central directory is missing (truncated?)");
            if (code == ZIP_ER_NOZIP)
                fail("not a zip archive (torch.save's zip format expected; the legacy pre-1.6 format is not "
                     "supported)");
            fail("cannot open as a zip archive: ", reason);
        }
        try {
            find_root();
        } catch (...) {
            zip_discard(zip_);
            throw;
        }
    }
    ~TorchArchive() { zip_discard(zip_); }
    TorchArchive(const TorchArchive &) = delete;
    TorchArchive &operator=(const TorchArchive &) = delete;

    std::vector<uint8_t> read_pickle() {
        const std::string name = root_ + "/data.pkl";
        const zip_int64_t index = locate(name);
        const zip_uint64_t size = record_size(index, name);
        if (size > kMaxPickleBytes)
            fail("'", name, "' holds ", size, " bytes, more than the limit of ", kMaxPickleBytes);
        std::vector<uint8_t> bytes(size);
        read(index, name, 0, size, bytes.data());
        return bytes;
    }

    std::string storage_record_name(const std::string &key) const { return root_ + "/data/" + key; }
    zip_int64_t locate(const std::string &name) const { return zip_name_locate(zip_, name.c_str(), ZIP_FL_ENC_RAW); }

    zip_uint64_t record_size(zip_int64_t index, const std::string &name) const {
        zip_stat_t st;
        zip_stat_init(&st);
        if (index < 0 || zip_stat_index(zip_, zip_uint64_t(index), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
            fail("cannot read the size of record '", name, "': ", zip_strerror(zip_));
        if (st.comp_method != ZIP_CM_STORE && (st.valid & ZIP_STAT_COMP_SIZE) &&
            st.size / kMaxCompressionRatio > st.comp_size)
            fail("record '", name, "' claims to inflate ", st.comp_size, " bytes to ", st.size, " (more than ",
                 kMaxCompressionRatio, "x; refusing a possible zip bomb)");
        return st.size;
    }

    // Reads bytes [offset, offset + n) of a record into dst.
    void read(zip_int64_t index, const std::string &name, zip_uint64_t offset, zip_uint64_t n, uint8_t *dst) const {
        const zip_uint64_t size = record_size(index, name);
        if (offset > size || n > size - offset)
            fail("record '", name, "' holds ", size, " bytes, cannot read bytes ", offset, "..", offset + n);
        zip_file_t *file = open_at(index, name, offset);
        zip_uint64_t done = 0;
        while (done < n) {
            const zip_int64_t got = zip_fread(file, dst + done, n - done);
            if (got <= 0) {
                const std::string reason = got < 0 ? zip_file_strerror(file) : "unexpected end of data";
                zip_fclose(file);
                fail("cannot read record '", name, "': ", reason);
            }
            done += zip_uint64_t(got);
        }
        zip_fclose(file);
    }

    uint64_t storage_bytes() const { return storage_bytes_; }

  private:
    void find_root() {
        const zip_int64_t count = zip_get_num_entries(zip_, 0);
        std::vector<std::string> roots;
        for (zip_int64_t i = 0; i < count; ++i) {
            const char *raw = zip_get_name(zip_, zip_uint64_t(i), ZIP_FL_ENC_RAW);
            const std::string name = raw ? raw : "";
            const size_t slash = name.find('/');
            if (slash != std::string::npos && slash > 0 && name.compare(slash, std::string::npos, "/data.pkl") == 0)
                roots.push_back(name.substr(0, slash));
        }
        if (roots.empty()) fail("the zip archive has no <folder>/data.pkl record (not written by torch.save?)");
        if (roots.size() > 1)
            fail("the zip archive has several data.pkl records ('", roots[0], "', '", roots[1], "'...)");
        root_ = roots[0];

        // What the storages can hold at most: their sizes as the directory states them, but no more than the
        // file could inflate to (directory sizes are not trusted).
        const std::string data_prefix = root_ + "/data/";
        for (zip_int64_t i = 0; i < count; ++i) {
            zip_stat_t st;
            if (zip_stat_index(zip_, zip_uint64_t(i), ZIP_FL_ENC_RAW, &st) == 0 && (st.valid & ZIP_STAT_NAME) &&
                (st.valid & ZIP_STAT_SIZE) && std::strncmp(st.name, data_prefix.c_str(), data_prefix.size()) == 0)
                storage_bytes_ += st.size;
        }
        std::error_code error;
        const uint64_t file_size = std::filesystem::file_size(path_, error);
        storage_bytes_ = std::min(storage_bytes_, error ? 0 : file_size * kMaxCompressionRatio);

        const std::string byteorder_name = root_ + "/byteorder";
        const zip_int64_t byteorder = locate(byteorder_name);
        if (byteorder >= 0) {
            const zip_uint64_t size = record_size(byteorder, byteorder_name);
            std::string order(size > 16 ? 16 : size, '\0');
            read(byteorder, byteorder_name, 0, order.size(), reinterpret_cast<uint8_t *>(order.data()));
            if (order != "little") fail("byte order '", order, "' is not supported (only little-endian archives)");
        }
    }

    zip_file_t *open_at(zip_int64_t index, const std::string &name, zip_uint64_t offset) const {
        zip_file_t *file = zip_fopen_index(zip_, zip_uint64_t(index), 0);
        if (!file) fail("cannot open record '", name, "': ", zip_strerror(zip_));
        if (offset == 0 || zip_fseek(file, zip_int64_t(offset), SEEK_SET) == 0) return file;
        // Compressed records cannot seek: reopen and skip by reading.
        zip_fclose(file);
        file = zip_fopen_index(zip_, zip_uint64_t(index), 0);
        if (!file) fail("cannot open record '", name, "': ", zip_strerror(zip_));
        std::vector<uint8_t> scratch(size_t(1) << 16);
        for (zip_uint64_t skipped = 0; skipped < offset;) {
            const zip_int64_t got =
                zip_fread(file, scratch.data(), std::min<zip_uint64_t>(scratch.size(), offset - skipped));
            if (got <= 0) {
                zip_fclose(file);
                fail("cannot read record '", name, "' up to byte ", offset);
            }
            skipped += zip_uint64_t(got);
        }
        return file;
    }

    std::string path_;
    zip_t *zip_ = nullptr;
    std::string root_;
    uint64_t storage_bytes_ = 0;
};

// ---- tensors --------------------------------------------------------------------------------------------------------

void convert_element(const StorageType &type, const uint8_t *src, uint8_t *dst) {
    switch (type.convert) {
    case Convert::Copy:
        std::memcpy(dst, src, type.element_size);
        return;
    case Convert::F64ToF32: {
        double d;
        std::memcpy(&d, src, sizeof d);
        const float f = float(d);
        std::memcpy(dst, &f, sizeof f);
        return;
    }
    case Convert::U8ToI32:
    case Convert::I8ToI32:
    case Convert::I16ToI32: {
        int32_t v = 0;
        if (type.convert == Convert::U8ToI32) v = src[0];
        if (type.convert == Convert::I8ToI32) v = int8_t(src[0]);
        if (type.convert == Convert::I16ToI32) v = int16_t(uint16_t(src[0] | (src[1] << 8)));
        std::memcpy(dst, &v, sizeof v);
        return;
    }
    }
}

int64_t as_int(const Object &o, const char *what) {
    if (o.kind != Kind::Int) fail("_rebuild_tensor_v2: ", what, " must be an int, got ", describe(o));
    return o.integer;
}

Shape as_int_tuple(const Object &o, const char *what) {
    if (o.kind != Kind::Tuple) fail("_rebuild_tensor_v2: ", what, " must be a tuple, got ", describe(o));
    if (o.items.size() > kMaxDims)
        fail("_rebuild_tensor_v2: ", what, " has ", o.items.size(), " dimensions (max ", kMaxDims, ")");
    Shape dims;
    for (const Object *item : o.items) dims.push_back(as_int(*item, what));
    return dims;
}

class TorchResolver : public pickle::Resolver {
  public:
    explicit TorchResolver(const TorchArchive &archive)
        : archive_(archive), output_budget_(4 * archive.storage_bytes() + kOutputSlackBytes) {}

    void check_global(const std::string &module, const std::string &name) override {
        const std::string global = module + "." + name;
        if (global == kRebuildTensor || global == kRebuildParameter || global == kOrderedDict ||
            find_storage_type(global))
            return;
        throw Refusal(concat("pickle global '", printable(global),
                             "' is not allowed (only tensors, dicts, lists, tuples, None, numbers and strings)"));
    }

    Object *call(pickle::Arena &arena, const Object &callable, const Object &args) override {
        const std::string &global = callable.text;
        if (global == kRebuildTensor) return rebuild_tensor(arena, args);
        if (global == kOrderedDict) {
            if (!args.items.empty()) fail("OrderedDict called with ", args.items.size(), " arguments, expected none");
            return arena.make(Kind::Dict);
        }
        if (global == kRebuildParameter) { // (data, requires_grad, backward_hooks): the parameter is its tensor
            if (args.items.size() != 3 || args.items[0]->kind != Kind::Tensor)
                fail("_rebuild_parameter expects (tensor, requires_grad, hooks)");
            return args.items[0];
        }
        throw Refusal(concat("pickle global '", global, "' may name a storage type but cannot be called"));
    }

    Object *persistent_load(pickle::Arena &arena, const Object &pid) override {
        const auto &f = pid.items;
        if (pid.kind != Kind::Tuple || f.size() != 5 || f[0]->kind != Kind::String || f[0]->text != "storage")
            fail("persistent id must be ('storage', type, key, location, numel), got a ", describe(pid),
                 pid.kind == Kind::Tuple ? concat(" of ", f.size(), " items") : "");
        const StorageType *type = f[1]->kind == Kind::Global ? find_storage_type(f[1]->text) : nullptr;
        if (!type) fail("persistent id: storage type must be a torch storage class, got ", describe(*f[1]));
        if (f[2]->kind != Kind::String || f[3]->kind != Kind::String || f[4]->kind != Kind::Int)
            fail("persistent id: key, location and numel must be string, string, int; got ", describe(*f[2]), ", ",
                 describe(*f[3]), ", ", describe(*f[4]));
        if (f[4]->integer < 0) fail("storage '", f[2]->text, "' has negative numel ", f[4]->integer);

        StorageRef ref{type, f[2]->text, uint64_t(f[4]->integer), -1};
        const std::string name = archive_.storage_record_name(ref.key);
        auto [seen, inserted] = storage_types_.emplace(ref.key, type);
        if (!inserted && seen->second != type)
            fail("storage '", ref.key, "' is used as both ", seen->second->dtype, " and ", type->dtype);
        ref.record = archive_.locate(name);
        if (ref.record < 0) fail("storage record '", name, "' is missing from the archive");
        const zip_uint64_t size = archive_.record_size(ref.record, name);
        if (ref.numel > size / type->element_size)
            fail("storage record '", name, "' is too short: it holds ", size, " bytes, the pickle declares ", ref.numel,
                 " ", type->dtype, " elements (", ref.numel, " x ", type->element_size, " bytes)");

        Object *storage = arena.make(Kind::Custom);
        storage->custom = std::move(ref);
        return storage;
    }

    // nn.Module.state_dict() is an OrderedDict with a `_metadata` attribute (each module's version), which
    // pickles as BUILD on the dict. Attributes are not items: a dict's state is read and left out.
    void build(Object &target, const Object &state) override {
        if (target.kind != Kind::Dict || (state.kind != Kind::Dict && state.kind != Kind::None))
            throw Refusal(concat("BUILD (setting an object's state) on a ", describe(target), " with a ",
                                 describe(state),
                                 " is not allowed (only a dict's attributes, as a state dict's "
                                 "_metadata)"));
    }

  private:
    // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
    Object *rebuild_tensor(pickle::Arena &arena, const Object &args) {
        const auto &a = args.items;
        if (a.size() != 6 && a.size() != 7) fail("_rebuild_tensor_v2 takes 6 or 7 arguments, got ", a.size());
        if (a[0]->kind != Kind::Custom) fail("_rebuild_tensor_v2: argument 0 must be a storage, got ", describe(*a[0]));
        const StorageRef &storage = std::any_cast<const StorageRef &>(a[0]->custom);
        const int64_t offset = as_int(*a[1], "storage_offset");
        const Shape size = as_int_tuple(*a[2], "size");
        const Shape stride = as_int_tuple(*a[3], "stride");
        if (a[4]->kind != Kind::Bool) fail("_rebuild_tensor_v2: requires_grad must be a bool, got ", describe(*a[4]));
        if (a[5]->kind != Kind::Dict) fail("_rebuild_tensor_v2: backward_hooks must be a dict, got ", describe(*a[5]));
        if (a.size() == 7) check_metadata(*a[6]);

        const std::string where = concat("tensor of storage '", storage.key, "' (size ", shape_str(size), ", stride ",
                                         shape_str(stride), ", offset ", offset, ")");
        if (size.size() != stride.size()) fail(where, ": size and stride have different lengths");
        if (offset < 0) fail(where, ": negative storage offset");
        uint64_t numel = 1;
        uint64_t last = uint64_t(offset); // the highest storage element the view touches
        for (size_t d = 0; d < size.size(); ++d) {
            if (size[d] < 0) fail(where, ": negative dimension ", size[d]);
            if (stride[d] < 0) fail(where, ": negative stride ", stride[d]);
            uint64_t reach = 0;
            if (__builtin_mul_overflow(numel, uint64_t(size[d]), &numel) || numel > uint64_t(INT64_MAX) ||
                (size[d] > 0 && (__builtin_mul_overflow(uint64_t(size[d] - 1), uint64_t(stride[d]), &reach) ||
                                 __builtin_add_overflow(last, reach, &last))))
                fail(where, ": element count or extent overflows 64 bits");
        }
        if (numel > 0 ? last >= storage.numel : uint64_t(offset) > storage.numel)
            fail(where, ": reaches element ", last, " but the storage holds ", storage.numel, " elements");

        const size_t out_size = ggml_type_size(storage.type->output);
        if (numel > output_budget_ / out_size)
            fail(where, ": the tensors would take more than ", output_budget_,
                 " bytes, far more than the archive's storages (refusing a hostile view)");
        output_budget_ -= numel * out_size;

        auto tensor = std::make_shared<HostTensor>("", storage.type->output, size);
        if (numel > 0) copy_view(storage, uint64_t(offset), last, size, stride, *tensor);
        Object *result = arena.make(Kind::Tensor);
        result->tensor = std::move(tensor);
        return result;
    }

    static void check_metadata(const Object &metadata) {
        if (metadata.kind != Kind::Dict) fail("_rebuild_tensor_v2: metadata must be a dict, got ", describe(metadata));
        for (const auto &[key, value] : metadata.entries)
            if (value->kind != Kind::Bool || value->boolean)
                fail("_rebuild_tensor_v2: tensor metadata '", key->kind == Kind::String ? key->text : describe(*key),
                     "' is set (conjugate/negative views are not supported)");
    }

    // Copies elements [first, last] of the storage, seen through size/stride, into a contiguous tensor.
    void copy_view(const StorageRef &storage, uint64_t first, uint64_t last, const Shape &size, const Shape &stride,
                   HostTensor &out) const {
        const StorageType &type = *storage.type;
        const std::string name = archive_.storage_record_name(storage.key);
        const uint64_t span = last - first + 1;
        bool contiguous = true;
        for (int64_t d = int64_t(size.size()) - 1, expected = 1; d >= 0; --d) {
            if (size[d] != 1 && stride[d] != expected) contiguous = false;
            expected *= size[d];
        }
        if (contiguous && type.convert == Convert::Copy) { // the common case: read straight into the tensor
            archive_.read(storage.record, name, first * type.element_size, out.bytes.size(), out.bytes.data());
            return;
        }
        std::vector<uint8_t> bytes(span * type.element_size);
        archive_.read(storage.record, name, first * type.element_size, bytes.size(), bytes.data());
        const size_t out_size = ggml_type_size(out.type);
        const size_t ndim = size.size();
        std::vector<int64_t> index(ndim, 0);
        uint64_t src = 0; // element offset from `first`
        const uint64_t numel = uint64_t(out.numel());
        for (uint64_t n = 0; n < numel; ++n) {
            convert_element(type, bytes.data() + src * type.element_size, out.bytes.data() + n * out_size);
            for (size_t d = ndim; d-- > 0;) { // odometer over the output index, last dimension fastest
                if (++index[d] < size[d]) {
                    src += uint64_t(stride[d]);
                    break;
                }
                src -= uint64_t(stride[d]) * uint64_t(size[d] - 1);
                index[d] = 0;
            }
        }
    }

    const TorchArchive &archive_;
    uint64_t output_budget_;
    std::unordered_map<std::string, const StorageType *> storage_types_;
};

// ---- from pickle objects to PtValue ---------------------------------------------------------------------------------

// Where a value sits ("gen.prompt_feat", "labels[3]"); spelled out only for tensor names and errors.
struct Path {
    const Path *parent = nullptr;     // nullptr: the top level
    const std::string *key = nullptr; // dict key, or nullptr for a list/tuple index
    size_t index = 0;

    std::string str() const {
        if (!parent) return "";
        const std::string head = parent->str();
        if (key) return head.empty() ? *key : head + "." + *key;
        return concat(head, "[", index, "]");
    }
    std::string where() const {
        const std::string s = str();
        if (s.empty()) return "the top level";
        return s.size() > 120 ? "'..." + s.substr(s.size() - 100) + "'" : "'" + s + "'";
    }
};

class Converter {
  public:
    PtValue run(const Object &root) {
        if (measure(root, Path{}, 0) > kMaxValues) fail("the data expands to more than ", kMaxValues, " values");
        return convert(root, Path{});
    }

  private:
    // How many values the tree below `o` expands to (shared objects count at every reference), found
    // without building it; saturates above kMaxValues. Cycles surface as nesting beyond kMaxDepth.
    uint64_t measure(const Object &o, const Path &path, size_t depth) {
        if (depth > kMaxDepth)
            fail("the data nests deeper than ", kMaxDepth, " levels (or refers to itself) at ", path.where());
        if (o.items.empty() && o.entries.empty()) return 1;
        if (auto it = sizes_.find(&o); it != sizes_.end()) return it->second;
        uint64_t n = 1;
        for (size_t i = 0; i < o.items.size() && n <= kMaxValues; ++i)
            n += measure(*o.items[i], Path{&path, nullptr, i}, depth + 1);
        for (size_t i = 0; i < o.entries.size() && n <= kMaxValues; ++i) {
            const auto &[key, value] = o.entries[i];
            const std::string label = key->kind == Kind::String ? key->text : concat("<", key->kind_name(), ">");
            n += measure(*key, path, depth + 1) + measure(*value, Path{&path, &label}, depth + 1);
        }
        return sizes_[&o] = std::min<uint64_t>(n, kMaxValues + 1);
    }

    PtValue convert(const Object &o, const Path &path) {
        PtValue v;
        switch (o.kind) {
        case Kind::None:
            v.kind = PtValue::Kind::None;
            break;
        case Kind::Bool:
            v.kind = PtValue::Kind::Bool;
            v.boolean = o.boolean;
            break;
        case Kind::Int:
            v.kind = PtValue::Kind::Int;
            v.integer = o.integer;
            break;
        case Kind::Float:
            v.kind = PtValue::Kind::Float;
            v.real = o.real;
            break;
        case Kind::String:
            v.kind = PtValue::Kind::String;
            v.string = o.text;
            break;
        case Kind::List:
        case Kind::Tuple:
            v.kind = o.kind == Kind::List ? PtValue::Kind::List : PtValue::Kind::Tuple;
            v.items.reserve(o.items.size());
            for (size_t i = 0; i < o.items.size(); ++i)
                v.items.push_back(convert(*o.items[i], Path{&path, nullptr, i}));
            break;
        case Kind::Dict: {
            v.kind = PtValue::Kind::Dict;
            std::unordered_map<std::string, size_t> string_keys; // a repeated key replaces the value, as in Python
            for (const auto &[key_object, value_object] : o.entries) {
                PtValue key = convert(*key_object, path);
                const std::string label = key.kind == PtValue::Kind::String ? "" : concat("<", key.kind_name(), ">");
                PtValue value = convert(*value_object, Path{&path, label.empty() ? &key.string : &label});
                if (key.kind == PtValue::Kind::String) {
                    auto [it, inserted] = string_keys.emplace(key.string, v.entries.size());
                    if (!inserted) {
                        v.entries[it->second].second = std::move(value);
                        continue;
                    }
                }
                v.entries.emplace_back(std::move(key), std::move(value));
            }
            break;
        }
        case Kind::Tensor:
            v.kind = PtValue::Kind::Tensor;
            v.tensor = o.tensor;
            if (v.tensor->name.empty()) v.tensor->name = path.str();
            break;
        case Kind::Global:
        case Kind::Custom:
            fail("the data holds a bare ", describe(o), " at ", path.where(), ", which is not a value");
        }
        return v;
    }

    std::unordered_map<const Object *, uint64_t> sizes_;
};

} // namespace

const PtValue *PtValue::find(const std::string &key) const {
    if (kind != Kind::Dict) fail("cannot look up '", key, "' in a ", kind_name(), " (not a dict)");
    for (const auto &[k, v] : entries)
        if (k.kind == Kind::String && k.string == key) return &v;
    return nullptr;
}

const PtValue &PtValue::at(const std::string &key) const {
    if (const PtValue *v = find(key)) return *v;
    std::string keys;
    for (const auto &[k, v] : entries)
        if (k.kind == Kind::String) keys += (keys.empty() ? "'" : ", '") + k.string + "'";
    fail("key '", key, "' not found in the dict (keys: ", keys.empty() ? "none" : keys, ")");
}

std::string PtValue::kind_name() const {
    switch (kind) {
    case Kind::None:
        return "None";
    case Kind::Bool:
        return "bool";
    case Kind::Int:
        return "int";
    case Kind::Float:
        return "float";
    case Kind::String:
        return "string";
    case Kind::List:
        return "list";
    case Kind::Tuple:
        return "tuple";
    case Kind::Dict:
        return "dict";
    case Kind::Tensor:
        return "tensor";
    }
    return "?";
}

PtValue load_torch_pt(const std::string &path) {
    try {
        TorchArchive archive(path);
        const std::vector<uint8_t> pickle_bytes = archive.read_pickle();
        pickle::Arena arena;
        TorchResolver resolver(archive);
        const Object *root = pickle::unpickle(pickle_bytes.data(), pickle_bytes.size(), arena, resolver);
        return Converter().run(*root);
    } catch (const Refusal &e) {
        fail("refusing to load ", path, ": ", e.what());
    } catch (const Error &e) {
        fail(path, ": ", e.what());
    }
}

} // namespace chatterbox
