#include "core/gguf_file.h"

#include "core/error.h"
#include "core/shape.h"

#include "gguf.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>

namespace chatterbox {

namespace {

constexpr const char *kTensorNamesKey = "chatterbox.tensor_names";
constexpr const char *kTensorRanksKey = "chatterbox.tensor_ranks";
constexpr size_t kMaxStoredName = GGML_MAX_NAME - 1; // ggml keeps names NUL-terminated in char[64]

struct GgufDeleter {
    void operator()(gguf_context *ctx) const { gguf_free(ctx); }
};
using GgufPtr = std::unique_ptr<gguf_context, GgufDeleter>;

struct GgmlDeleter {
    void operator()(ggml_context *ctx) const { ggml_free(ctx); }
};

uint64_t fnv1a64(const std::string &bytes) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char b : bytes) {
        h ^= b;
        h *= 0x100000001b3ull;
    }
    return h;
}

// A name that fits in GGUF: the full name when short enough, otherwise its head and tail around a
// hash of the full name (salted when that ever collides with another stored name).
std::string stored_name(const std::string &full, unsigned salt) {
    if (full.size() <= kMaxStoredName && salt == 0) return full;
    char hash[20];
    const std::string keyed = salt ? full + "#" + std::to_string(salt) : full;
    std::snprintf(hash, sizeof hash, "~%016llx~", static_cast<unsigned long long>(fnv1a64(keyed)));
    const size_t head = 22, tail = kMaxStoredName - head - std::strlen(hash); // 22 + 18 + 23 = 63 bytes
    if (full.size() <= head + tail) return full.substr(0, head) + hash;
    return full.substr(0, head) + hash + full.substr(full.size() - tail);
}

std::string printable_magic(const uint8_t *bytes, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) {
        char c = char(bytes[i]);
        if (c >= 32 && c < 127) {
            out += c;
        } else {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02x", bytes[i]);
            out += hex;
        }
    }
    return out;
}

bool is_integer_type(gguf_type t) {
    switch (t) {
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_INT8:
    case GGUF_TYPE_UINT16:
    case GGUF_TYPE_INT16:
    case GGUF_TYPE_UINT32:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_UINT64:
    case GGUF_TYPE_INT64:
        return true;
    default:
        return false;
    }
}

// Reads element i of integer type t at p; u64 values beyond int64 are refused by the caller's check.
int64_t integer_at(const void *p, gguf_type t, size_t i, const std::string &what) {
    switch (t) {
    case GGUF_TYPE_UINT8:
        return static_cast<const uint8_t *>(p)[i];
    case GGUF_TYPE_INT8:
        return static_cast<const int8_t *>(p)[i];
    case GGUF_TYPE_UINT16:
        return static_cast<const uint16_t *>(p)[i];
    case GGUF_TYPE_INT16:
        return static_cast<const int16_t *>(p)[i];
    case GGUF_TYPE_UINT32:
        return static_cast<const uint32_t *>(p)[i];
    case GGUF_TYPE_INT32:
        return static_cast<const int32_t *>(p)[i];
    case GGUF_TYPE_INT64:
        return static_cast<const int64_t *>(p)[i];
    case GGUF_TYPE_UINT64: {
        const uint64_t v = static_cast<const uint64_t *>(p)[i];
        if (v > uint64_t(std::numeric_limits<int64_t>::max())) fail(what, ": value ", v, " does not fit in int64");
        return int64_t(v);
    }
    default:
        fail(what, ": ", gguf_type_name(t), " is not an integer type");
    }
}

// ggml's reader checks a tensor's element count only after multiplying its dimensions, which wraps
// for a hostile shape; the count and the byte size are checked here again, without overflow, so a
// view never claims more elements than its bytes hold.
void check_tensor_size(const std::string &path, const std::string &name, ggml_type type, const int64_t *ne,
                       size_t nbytes) {
    int64_t numel = 1;
    bool overflow = false;
    for (int d = 0; d < GGML_MAX_DIMS; ++d)
        overflow = overflow || ne[d] < 0 || __builtin_mul_overflow(numel, ne[d], &numel);
    uint64_t expected = 0;
    overflow = overflow || __builtin_mul_overflow(uint64_t(numel / ggml_blck_size(type)),
                                                  uint64_t(ggml_type_size(type)), &expected);
    if (overflow || expected != nbytes)
        fail(path, ": tensor ", name, " has ggml shape ne = [", ne[0], ", ", ne[1], ", ", ne[2], ", ", ne[3], "] of ",
             ggml_type_name(type),
             overflow ? std::string(", whose size overflows 64 bits")
                      : concat(", which is ", expected, " bytes, but the header gives it ", nbytes));
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Reader

GgufFile::GgufFile(const std::string &path) {
    file_ = std::make_shared<const MappedFile>(path);
    const uint8_t *bytes = file_->data();
    const size_t size = file_->size();

    // Sharper messages than ggml's generic failure for the two common cases.
    if (size < 4 || std::memcmp(bytes, GGUF_MAGIC, 4) != 0)
        fail(path, ": not a GGUF file (bad magic: expected \"GGUF\", got \"",
             printable_magic(bytes, std::min<size_t>(size, 4)), "\"",
             size < 4 ? concat(", file has only ", size, " bytes") : std::string(), ")");
    if (size >= 8) {
        uint32_t version;
        std::memcpy(&version, bytes + 4, 4);
        if (version < 2 || version > GGUF_VERSION)
            fail(path, ": unsupported GGUF version ", version, " (this build reads versions 2 to ", GGUF_VERSION, ")");
    }

    gguf_init_params params{/*no_alloc =*/true, /*ctx =*/nullptr};
    GgufPtr ctx(gguf_init_from_buffer(bytes, size, params));
    if (!ctx) fail(path, ": not a valid GGUF file (bad magic, version, or corrupt/truncated header)");
    ctx_ = ctx.get();

    const int64_t n_tensors = gguf_get_n_tensors(ctx_);
    std::vector<std::string> full_names;
    if (has_key(kTensorNamesKey)) {
        full_names = get_string_array(kTensorNamesKey);
        if (int64_t(full_names.size()) != n_tensors)
            fail(path, ": ", kTensorNamesKey, " lists ", full_names.size(), " names but the file has ", n_tensors,
                 " tensors");
    }
    std::vector<int64_t> ranks;
    if (has_key(kTensorRanksKey)) {
        ranks = get_int_array(kTensorRanksKey);
        if (int64_t(ranks.size()) != n_tensors)
            fail(path, ": ", kTensorRanksKey, " lists ", ranks.size(), " ranks but the file has ", n_tensors,
                 " tensors");
    }

    const size_t data_offset = gguf_get_data_offset(ctx_);
    tensors_.reserve(size_t(n_tensors));
    for (int64_t i = 0; i < n_tensors; ++i) {
        const std::string stored = gguf_get_tensor_name(ctx_, i);
        std::string name = stored;
        if (!full_names.empty()) {
            name = full_names[size_t(i)];
            if (name.size() <= kMaxStoredName && name != stored)
                fail(path, ": tensor ", i, " is stored as ", stored, " but ", kTensorNamesKey, " names it ", name);
        }
        const int64_t *ne = gguf_get_tensor_ne(ctx_, i);
        int rank = 1;
        for (int d = 1; d < GGML_MAX_DIMS; ++d)
            if (ne[d] != 1) rank = d + 1;
        if (!ranks.empty()) {
            const int64_t want = ranks[size_t(i)];
            bool fits = want >= 0 && want <= GGML_MAX_DIMS;
            for (int64_t d = std::max<int64_t>(want, 0); fits && d < GGML_MAX_DIMS; ++d) fits = ne[d] == 1;
            if (!fits)
                fail(path, ": tensor ", name, " has rank ", want, " in ", kTensorRanksKey, " but ggml shape ne = [",
                     ne[0], ", ", ne[1], ", ", ne[2], ", ", ne[3], "]");
            rank = int(want);
        }
        TensorView view;
        view.name = name;
        view.type = gguf_get_tensor_type(ctx_, i);
        for (int d = rank - 1; d >= 0; --d) view.shape.push_back(ne[d]);
        view.nbytes = gguf_get_tensor_size(ctx_, i);
        check_tensor_size(path, name, view.type, ne, view.nbytes);
        const size_t offset = gguf_get_tensor_offset(ctx_, i);
        if (offset > size || data_offset > size - offset || view.nbytes > size - offset - data_offset)
            fail(path, ": tensor ", name, " (", ggml_type_name(view.type), " ", shape_str(view.shape), ", ",
                 view.nbytes, " bytes at offset ", data_offset + offset, ") extends past the end of the file (", size,
                 " bytes; file truncated?)");
        view.data = bytes + data_offset + offset;
        view.mapping = file_;
        if (!index_.emplace(name, tensors_.size()).second) fail(path, ": tensor name ", name, " appears twice");
        tensors_.push_back(std::move(view));
    }
    ctx.release();
}

GgufFile::~GgufFile() { gguf_free(ctx_); }

const TensorView *GgufFile::find(const std::string &name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

bool GgufFile::has_key(const std::string &key) const { return gguf_find_key(ctx_, key.c_str()) >= 0; }

namespace {

int64_t key_id_or_fail(const gguf_context *ctx, const std::string &path, const std::string &key) {
    const int64_t id = gguf_find_key(ctx, key.c_str());
    if (id < 0) fail(path, ": no metadata key ", key);
    return id;
}

[[noreturn]] void wrong_type(const gguf_context *ctx, int64_t id, const std::string &path, const std::string &key,
                             const char *expected) {
    const gguf_type t = gguf_get_kv_type(ctx, id);
    const std::string got = t == GGUF_TYPE_ARRAY ? concat("an array of ", gguf_type_name(gguf_get_arr_type(ctx, id)))
                                                 : concat("of type ", gguf_type_name(t));
    fail(path, ": metadata key ", key, " is ", got, ", expected ", expected);
}

} // namespace

std::string GgufFile::get_string(const std::string &key) const {
    const int64_t id = key_id_or_fail(ctx_, path(), key);
    if (gguf_get_kv_type(ctx_, id) != GGUF_TYPE_STRING) wrong_type(ctx_, id, path(), key, "a string");
    return gguf_get_val_str(ctx_, id);
}

int64_t GgufFile::get_int(const std::string &key) const {
    const int64_t id = key_id_or_fail(ctx_, path(), key);
    const gguf_type t = gguf_get_kv_type(ctx_, id);
    if (!is_integer_type(t)) wrong_type(ctx_, id, path(), key, "an integer");
    return integer_at(gguf_get_val_data(ctx_, id), t, 0, concat(path(), ": metadata key ", key));
}

double GgufFile::get_float(const std::string &key) const {
    const int64_t id = key_id_or_fail(ctx_, path(), key);
    const gguf_type t = gguf_get_kv_type(ctx_, id);
    if (t == GGUF_TYPE_FLOAT32) return gguf_get_val_f32(ctx_, id);
    if (t == GGUF_TYPE_FLOAT64) return gguf_get_val_f64(ctx_, id);
    if (is_integer_type(t)) return double(get_int(key));
    wrong_type(ctx_, id, path(), key, "a number");
}

std::vector<std::string> GgufFile::get_string_array(const std::string &key) const {
    const int64_t id = key_id_or_fail(ctx_, path(), key);
    if (gguf_get_kv_type(ctx_, id) != GGUF_TYPE_ARRAY || gguf_get_arr_type(ctx_, id) != GGUF_TYPE_STRING)
        wrong_type(ctx_, id, path(), key, "an array of strings");
    std::vector<std::string> out(gguf_get_arr_n(ctx_, id));
    for (size_t i = 0; i < out.size(); ++i) out[i] = gguf_get_arr_str(ctx_, id, i);
    return out;
}

std::vector<int64_t> GgufFile::get_int_array(const std::string &key) const {
    const int64_t id = key_id_or_fail(ctx_, path(), key);
    if (gguf_get_kv_type(ctx_, id) != GGUF_TYPE_ARRAY || !is_integer_type(gguf_get_arr_type(ctx_, id)))
        wrong_type(ctx_, id, path(), key, "an array of integers");
    const gguf_type t = gguf_get_arr_type(ctx_, id);
    std::vector<int64_t> out(gguf_get_arr_n(ctx_, id));
    const void *data = out.empty() ? nullptr : gguf_get_arr_data(ctx_, id);
    for (size_t i = 0; i < out.size(); ++i) out[i] = integer_at(data, t, i, concat(path(), ": metadata key ", key));
    return out;
}

std::vector<std::string> GgufFile::keys() const {
    std::vector<std::string> out(size_t(gguf_get_n_kv(ctx_)));
    for (size_t i = 0; i < out.size(); ++i) out[i] = gguf_get_key(ctx_, int64_t(i));
    return out;
}

// ---------------------------------------------------------------------------------------------
// Writer

struct GgufWriter::Pending {
    std::string name;
    ggml_type type;
    Shape shape;
    size_t nbytes;
    std::function<void(void *dst)> fill;
};

GgufWriter::GgufWriter() : ctx_(gguf_init_empty()) {}

GgufWriter::~GgufWriter() { gguf_free(ctx_); }

namespace {

void check_key(const std::string &key) {
    if (key.empty()) fail("GGUF metadata key must not be empty");
    if (key == kTensorNamesKey || key == kTensorRanksKey)
        fail("GGUF metadata key ", key, " is reserved: the writer fills it from the tensors");
    // ggml's writer keeps its own alignment (32) whatever this key says, so a file with it would lie.
    if (key == GGUF_KEY_GENERAL_ALIGNMENT)
        fail("GGUF metadata key ", key, " cannot be set: tensor data is always aligned to ", GGUF_DEFAULT_ALIGNMENT,
             " bytes");
}

} // namespace

void GgufWriter::set_string(const std::string &key, const std::string &value) {
    check_key(key);
    if (value.find('\0') != std::string::npos) fail("GGUF metadata ", key, ": string values cannot hold NUL bytes");
    gguf_set_val_str(ctx_, key.c_str(), value.c_str());
}

void GgufWriter::set_int(const std::string &key, int64_t value) {
    check_key(key);
    gguf_set_val_i64(ctx_, key.c_str(), value);
}

void GgufWriter::set_float(const std::string &key, double value) {
    check_key(key);
    gguf_set_val_f64(ctx_, key.c_str(), value);
}

void GgufWriter::set_string_array(const std::string &key, const std::vector<std::string> &values) {
    check_key(key);
    std::vector<const char *> ptrs;
    for (const auto &v : values) {
        if (v.find('\0') != std::string::npos) fail("GGUF metadata ", key, ": string values cannot hold NUL bytes");
        ptrs.push_back(v.c_str());
    }
    gguf_set_arr_str(ctx_, key.c_str(), ptrs.data(), ptrs.size());
}

void GgufWriter::set_int_array(const std::string &key, const std::vector<int64_t> &values) {
    check_key(key);
    gguf_set_arr_data(ctx_, key.c_str(), GGUF_TYPE_INT64, values.data(), values.size());
}

void GgufWriter::add_tensor(const std::string &name, ggml_type type, const Shape &shape,
                            std::function<void(void *dst)> fill) {
    if (name.empty()) fail("GGUF tensor name must not be empty");
    if (name.find('\0') != std::string::npos) fail("GGUF tensor name ", name, " holds a NUL byte");
    if (shape.size() > size_t(GGML_MAX_DIMS))
        fail("GGUF tensor ", name, ": shape ", shape_str(shape), " has more than ", GGML_MAX_DIMS, " dimensions");
    if (!fill) fail("GGUF tensor ", name, ": no fill function");
    size_t nbytes;
    try {
        nbytes = tensor_nbytes(type, shape);
    } catch (const Error &e) {
        fail("GGUF tensor ", name, ": ", e.what());
    }
    pending_.push_back(Pending{name, type, shape, nbytes, std::move(fill)});
}

void GgufWriter::write(const std::string &path) {
    // A fresh context per call: tensor infos are added here, so write() can be called again.
    GgufPtr out(gguf_init_empty());
    gguf_set_kv(out.get(), ctx_);

    std::vector<std::string> full_names;
    std::vector<int32_t> ranks;
    std::set<std::string> seen;
    for (const auto &p : pending_) {
        if (!seen.insert(p.name).second) fail(path, ": tensor ", p.name, " was added twice");
        full_names.push_back(p.name);
        ranks.push_back(int32_t(p.shape.size()));
    }
    std::set<std::string> stored;
    std::vector<std::string> stored_names;
    for (const auto &name : full_names) {
        unsigned salt = 0;
        std::string s = stored_name(name, salt);
        // A shortened name must not equal another tensor's (full or stored) name.
        while ((s != name && seen.count(s)) || stored.count(s)) s = stored_name(name, ++salt);
        stored.insert(s);
        stored_names.push_back(s);
    }
    std::vector<const char *> name_ptrs;
    for (const auto &n : full_names) name_ptrs.push_back(n.c_str());
    gguf_set_arr_str(out.get(), kTensorNamesKey, name_ptrs.data(), name_ptrs.size());
    gguf_set_arr_data(out.get(), kTensorRanksKey, GGUF_TYPE_INT32, ranks.data(), ranks.size());

    ggml_init_params gp{/*mem_size =*/ggml_tensor_overhead() * (pending_.size() + 1), /*mem_buffer =*/nullptr,
                        /*no_alloc =*/true};
    std::unique_ptr<ggml_context, GgmlDeleter> meta_ctx(ggml_init(gp));
    if (!meta_ctx) fail(path, ": cannot allocate tensor metadata for ", pending_.size(), " tensors");
    for (size_t i = 0; i < pending_.size(); ++i) {
        const auto ne = ggml_ne_from_torch(pending_[i].shape);
        ggml_tensor *t = ggml_new_tensor(meta_ctx.get(), pending_[i].type, GGML_MAX_DIMS, ne.data());
        ggml_set_name(t, stored_names[i].c_str());
        gguf_add_tensor(out.get(), t);
    }

    const std::string tmp = path + ".tmp";
    std::FILE *f = std::fopen(tmp.c_str(), "wb");
    if (!f) fail("cannot create ", tmp, ": ", std::strerror(errno));
    auto abandon = [&](const std::string &why) {
        if (f) std::fclose(f);
        std::remove(tmp.c_str());
        fail(why);
    };
    auto put = [&](const void *data, size_t n) {
        if (n && std::fwrite(data, 1, n, f) != n) abandon(concat("cannot write ", tmp, ": ", std::strerror(errno)));
    };

    std::vector<uint8_t> buffer(gguf_get_meta_size(out.get()));
    gguf_get_meta_data(out.get(), buffer.data());
    put(buffer.data(), buffer.size());

    const size_t alignment = gguf_get_alignment(out.get());
    const std::vector<uint8_t> zeros(alignment, 0);
    size_t written = 0; // bytes of the data section so far
    for (size_t i = 0; i < pending_.size(); ++i) {
        const Pending &p = pending_[i];
        if (written != gguf_get_tensor_offset(out.get(), int64_t(i)))
            abandon(concat(path, ": internal error: tensor ", p.name, " at data offset ", written, ", ggml expects ",
                           gguf_get_tensor_offset(out.get(), int64_t(i))));
        buffer.assign(p.nbytes, 0);
        try {
            p.fill(buffer.data());
        } catch (const std::exception &e) {
            abandon(concat(path, ": tensor ", p.name, ": ", e.what()));
        }
        put(buffer.data(), p.nbytes);
        const size_t pad = (alignment - p.nbytes % alignment) % alignment;
        put(zeros.data(), pad);
        written += p.nbytes + pad;
    }
    const bool closed = std::fclose(f) == 0;
    f = nullptr;
    if (!closed) abandon(concat("cannot finish writing ", tmp, ": ", std::strerror(errno)));
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) abandon(concat("cannot rename ", tmp, " to ", path, ": ", ec.message()));
}

} // namespace chatterbox
