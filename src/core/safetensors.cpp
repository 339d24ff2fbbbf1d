#include "core/safetensors.h"

#include "core/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>

namespace chatterbox {
namespace {

// A header larger than this is not a plausible tensor index (the official files need well under 1 MB).
constexpr uint64_t kMaxHeaderBytes = 100u * 1000u * 1000u;
constexpr const char *kMetadataKey = "__metadata__";

struct DtypeName {
    const char *name;
    ggml_type type;
};
constexpr DtypeName kDtypes[] = {{"F32", GGML_TYPE_F32},
                                 {"F16", GGML_TYPE_F16},
                                 {"BF16", GGML_TYPE_BF16},
                                 {"I64", GGML_TYPE_I64},
                                 {"I32", GGML_TYPE_I32}};

const DtypeName *find_dtype(const std::string &name) {
    for (const auto &d : kDtypes)
        if (name == d.name) return &d;
    return nullptr;
}

const DtypeName *find_dtype(ggml_type type) {
    for (const auto &d : kDtypes)
        if (type == d.type) return &d;
    return nullptr;
}

std::string supported_dtypes() {
    std::string s;
    for (const auto &d : kDtypes) s += std::string(s.empty() ? "" : ", ") + d.name;
    return s;
}

uint64_t read_le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

// A byte range [begin, end) of the data section owned by one tensor.
struct DataRange {
    uint64_t begin, end;
    size_t tensor; // index into tensors_
};

// Validates one header entry and returns its view (data pointer not yet set) and byte range.
TensorView parse_entry(const std::string &path, const std::string &name, const nlohmann::json &entry,
                       uint64_t data_size, DataRange &range) {
    const std::string where = concat(path, ": tensor '", name, "'");
    if (!entry.is_object()) fail(where, ": header entry is ", entry.type_name(), ", expected an object");
    for (const char *key : {"dtype", "shape", "data_offsets"})
        if (!entry.contains(key)) fail(where, ": header entry has no '", key, "'");

    const auto &dtype = entry["dtype"];
    if (!dtype.is_string()) fail(where, ": dtype is ", dtype.type_name(), ", expected a string");
    const DtypeName *known = find_dtype(dtype.get<std::string>());
    if (!known)
        fail(where, ": dtype '", dtype.get<std::string>(), "' is not supported (supported: ", supported_dtypes(), ")");

    TensorView view;
    view.name = name;
    view.type = known->type;
    const auto &shape = entry["shape"];
    if (!shape.is_array()) fail(where, ": shape is ", shape.type_name(), ", expected an array");
    uint64_t numel = 1;
    for (const auto &d : shape) {
        if (!d.is_number_unsigned()) fail(where, ": shape ", shape.dump(), " has an entry that is not a size");
        const uint64_t dim = d.get<uint64_t>();
        if (dim > uint64_t(std::numeric_limits<int64_t>::max()) || __builtin_mul_overflow(numel, dim, &numel))
            fail(where, ": shape ", shape.dump(), " has more elements than fit in 64 bits");
        view.shape.push_back(int64_t(dim));
    }
    uint64_t expected_bytes = 0;
    if (__builtin_mul_overflow(numel, uint64_t(ggml_type_size(view.type)), &expected_bytes))
        fail(where, ": shape ", shape.dump(), " needs more bytes than fit in 64 bits");

    const auto &offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
        fail(where, ": data_offsets ", offsets.dump(), " is not a pair of byte offsets");
    range.begin = offsets[0].get<uint64_t>();
    range.end = offsets[1].get<uint64_t>();
    if (range.end < range.begin)
        fail(where, ": data_offsets [", range.begin, ", ", range.end, ") end before they begin");
    if (range.end - range.begin != expected_bytes)
        fail(where, ": data [", range.begin, ", ", range.end, ") is ", range.end - range.begin, " bytes but ",
             known->name, " ", shape_str(view.shape), " needs ", expected_bytes, " bytes");
    if (range.end > data_size)
        fail(where, ": data [", range.begin, ", ", range.end, ") lies outside the file (data section is ", data_size,
             " bytes) — file truncated?");
    view.nbytes = size_t(expected_bytes);
    return view;
}

std::map<std::string, std::string> parse_metadata(const std::string &path, const nlohmann::json &metadata) {
    if (!metadata.is_object()) fail(path, ": ", kMetadataKey, " is ", metadata.type_name(), ", expected an object");
    std::map<std::string, std::string> out;
    for (const auto &[key, value] : metadata.items()) {
        if (!value.is_string())
            fail(path, ": ", kMetadataKey, " entry '", key, "' is ", value.type_name(), ", expected a string");
        out[key] = value.get<std::string>();
    }
    return out;
}

// Parses the header JSON, rejecting duplicate top-level keys (a plain parse would keep the last one silently).
nlohmann::json parse_header(const std::string &path, const char *begin, const char *end) {
    std::set<std::string> keys;
    std::string duplicate;
    auto on_event = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json &parsed) {
        if (event == nlohmann::json::parse_event_t::key && depth == 1 && !keys.insert(parsed.get<std::string>()).second)
            duplicate = parsed.get<std::string>();
        return true;
    };
    nlohmann::json header;
    try {
        header = nlohmann::json::parse(begin, end, on_event);
    } catch (const nlohmann::json::exception &e) {
        fail(path, ": header is not valid JSON (", e.what(), ")");
    }
    if (!duplicate.empty()) fail(path, ": header lists '", duplicate, "' twice");
    if (!header.is_object()) fail(path, ": header is a JSON ", header.type_name(), ", expected an object");
    return header;
}

} // namespace

SafetensorsFile::SafetensorsFile(const std::string &path) : file_(std::make_shared<const MappedFile>(path)) {
    const uint64_t file_size = file_->size();
    if (file_size < 8)
        fail(path, ": file is ", file_size, " bytes, too short for the 8-byte header length — not a safetensors file");
    const uint64_t header_size = read_le64(file_->data());
    if (header_size > kMaxHeaderBytes)
        fail(path, ": header length ", header_size, " exceeds the ", kMaxHeaderBytes,
             "-byte limit — not a safetensors file?");
    if (header_size > file_size - 8)
        fail(path, ": header length ", header_size, " exceeds the ", file_size - 8,
             " bytes after the length field — file truncated?");
    const char *header_begin = reinterpret_cast<const char *>(file_->data() + 8);
    const nlohmann::json header = parse_header(path, header_begin, header_begin + header_size);

    const uint8_t *data = file_->data() + 8 + header_size;
    const uint64_t data_size = file_size - 8 - header_size;
    std::vector<DataRange> ranges;
    std::vector<TensorView> views;
    for (const auto &[name, entry] : header.items()) {
        if (name == kMetadataKey) {
            metadata_ = parse_metadata(path, entry);
            continue;
        }
        DataRange range{};
        views.push_back(parse_entry(path, name, entry, data_size, range));
        range.tensor = views.size() - 1;
        ranges.push_back(range);
    }

    // File order is data order; empty tensors sort by name so the order is well defined.
    std::sort(ranges.begin(), ranges.end(), [&](const DataRange &a, const DataRange &b) {
        if (a.begin != b.begin) return a.begin < b.begin;
        if (a.end != b.end) return a.end < b.end;
        return views[a.tensor].name < views[b.tensor].name;
    });
    const DataRange *previous = nullptr;
    for (const DataRange &range : ranges) {
        if (range.begin == range.end) continue; // an empty tensor overlaps nothing
        if (previous && range.begin < previous->end)
            fail(path, ": tensor '", views[range.tensor].name, "' data [", range.begin, ", ", range.end,
                 ") overlaps tensor '", views[previous->tensor].name, "' data [", previous->begin, ", ", previous->end,
                 ")");
        previous = &range;
    }

    tensors_.reserve(ranges.size());
    for (const DataRange &range : ranges) {
        TensorView view = std::move(views[range.tensor]);
        view.data = data + range.begin;
        view.mapping = file_;
        index_[view.name] = tensors_.size();
        tensors_.push_back(std::move(view));
    }
}

const TensorView *SafetensorsFile::find(const std::string &name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

// Closes and deletes a temporary file unless released: no half-written file survives an error.
class TemporaryFile {
  public:
    explicit TemporaryFile(std::string path) : path_(std::move(path)) {
        file_ = std::fopen(path_.c_str(), "wb");
        if (!file_) fail("cannot create ", path_, ": ", std::strerror(errno));
    }
    ~TemporaryFile() {
        if (file_) std::fclose(file_);
        if (!committed_) std::remove(path_.c_str());
    }
    TemporaryFile(const TemporaryFile &) = delete;
    TemporaryFile &operator=(const TemporaryFile &) = delete;

    void write(const void *bytes, size_t n) {
        if (n && std::fwrite(bytes, 1, n, file_) != n) fail("cannot write ", path_, ": ", std::strerror(errno));
    }
    // Closes the file and renames it to its final path.
    void commit(const std::string &final_path) {
        const int closed = std::fclose(file_);
        file_ = nullptr;
        if (closed != 0) fail("cannot write ", path_, ": ", std::strerror(errno));
        if (std::rename(path_.c_str(), final_path.c_str()) != 0)
            fail("cannot rename ", path_, " to ", final_path, ": ", std::strerror(errno));
        committed_ = true;
    }

  private:
    std::string path_;
    std::FILE *file_ = nullptr;
    bool committed_ = false;
};

} // namespace

void write_safetensors(const std::string &path, std::vector<SafetensorsEntry> entries,
                       const std::map<std::string, std::string> &metadata) {
    std::set<std::string> names;
    for (const auto &e : entries) {
        if (e.name.empty() || e.name == kMetadataKey) fail(path, ": invalid tensor name '", e.name, "'");
        if (!names.insert(e.name).second) fail(path, ": tensor '", e.name, "' is listed twice");
        if (!find_dtype(e.type))
            fail(path, ": tensor '", e.name, "' has type ", ggml_type_name(e.type),
                 ", which safetensors cannot store (supported: ", supported_dtypes(), ")");
        if (!e.fill) fail(path, ": tensor '", e.name, "' has no fill function");
        for (int64_t d : e.shape)
            if (d < 0) fail(path, ": tensor '", e.name, "' has a negative dimension in shape ", shape_str(e.shape));
    }
    // The official layout: larger elements first (keeps every tensor aligned to its element size), then by name.
    std::sort(entries.begin(), entries.end(), [](const SafetensorsEntry &a, const SafetensorsEntry &b) {
        const size_t size_a = ggml_type_size(a.type), size_b = ggml_type_size(b.type);
        return size_a != size_b ? size_a > size_b : a.name < b.name;
    });

    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) header[kMetadataKey] = metadata;
    std::vector<size_t> sizes;
    uint64_t offset = 0;
    for (const auto &e : entries) {
        sizes.push_back(tensor_nbytes(e.type, e.shape));
        header[e.name] = {
            {"dtype", find_dtype(e.type)->name}, {"shape", e.shape}, {"data_offsets", {offset, offset + sizes.back()}}};
        offset += sizes.back();
    }
    std::string header_text;
    try {
        header_text = header.dump();
    } catch (const nlohmann::json::exception &e) {
        fail(path, ": cannot encode the header (", e.what(), ")");
    }
    header_text.append((8 - header_text.size() % 8) % 8, ' ');

    TemporaryFile out(path + ".tmp");
    uint8_t length_field[8];
    for (int i = 0; i < 8; ++i) length_field[i] = uint8_t(uint64_t(header_text.size()) >> (8 * i));
    out.write(length_field, sizeof length_field);
    out.write(header_text.data(), header_text.size());
    std::vector<uint8_t> buffer; // reused: holds one tensor at a time
    for (size_t i = 0; i < entries.size(); ++i) {
        if (sizes[i] == 0) continue; // nothing to produce (and no buffer to hand out)
        buffer.resize(sizes[i]);
        entries[i].fill(buffer.data());
        out.write(buffer.data(), buffer.size());
    }
    out.commit(path);
}

} // namespace chatterbox
