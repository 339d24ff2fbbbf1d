#include "core/npy.h"

#include "core/error.h"
#include "core/mapped_file.h"

#include <cctype>
#include <cstring>
#include <fstream>

// Arrays stored in Fortran order (numpy writes some transposed views that way) are reordered to C
// order on reading, so NpyArray::data is always C order.

namespace chatterbox {

namespace {

const char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kAlignment = 64; // numpy pads the header so the data starts on this boundary
constexpr size_t kMaxDims = 64;

struct Dtype {
    const char *descr;
    size_t size;
};
const Dtype kDtypes[] = {{"<f4", 4}, {"<f8", 8}, {"<f2", 2}, {"<i8", 8},
                         {"<i4", 4}, {"<i2", 2}, {"|u1", 1}, {"|b1", 1}};

const Dtype *find_dtype(const std::string &descr) {
    for (const Dtype &d : kDtypes)
        if (descr == d.descr) return &d;
    return nullptr;
}

std::string supported_dtypes() {
    std::string list;
    for (const Dtype &d : kDtypes) list += (list.empty() ? "" : " ") + std::string(d.descr);
    return list;
}

size_t dtype_size(const std::string &descr) {
    const Dtype *d = find_dtype(descr);
    if (!d) fail("dtype '", descr, "' is not supported (supported: ", supported_dtypes(), ")");
    return d->size;
}

// The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
  public:
    explicit HeaderParser(const std::string &text) : text_(text) {}

    void parse(NpyArray &array, bool &fortran_order) {
        bool have_descr = false, have_order = false, have_shape = false;
        expect('{');
        while (!consume('}')) {
            const std::string key = parse_string();
            expect(':');
            if (key == "descr") {
                array.descr = parse_string();
                have_descr = true;
            } else if (key == "fortran_order") {
                fortran_order = parse_bool();
                have_order = true;
            } else if (key == "shape") {
                array.shape = parse_shape();
                have_shape = true;
            } else {
                fail("unexpected key '", key, "' in the header");
            }
            if (!consume(',')) {
                expect('}');
                break;
            }
        }
        skip_space();
        if (pos_ != text_.size()) fail("unexpected text after the header dict at header byte ", pos_);
        if (!have_descr || !have_order || !have_shape)
            fail("the header lacks ", !have_descr ? "'descr'" : !have_order ? "'fortran_order'" : "'shape'");
    }

  private:
    void skip_space() {
        while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    bool consume(char c) {
        skip_space();
        if (pos_ < text_.size() && text_[pos_] == c) {
            ++pos_;
            return true;
        }
        return false;
    }
    void expect(char c) {
        if (!consume(c)) fail("malformed header: expected '", c, "' at header byte ", pos_, " in \"", text_, "\"");
    }
    std::string parse_string() {
        skip_space();
        if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
            fail("malformed header: expected a quoted string at header byte ", pos_, " in \"", text_, "\"");
        const char quote = text_[pos_++];
        const size_t end = text_.find(quote, pos_);
        if (end == std::string::npos) fail("malformed header: unterminated string in \"", text_, "\"");
        std::string s = text_.substr(pos_, end - pos_);
        pos_ = end + 1;
        return s;
    }
    bool parse_bool() {
        skip_space();
        for (const auto &[word, value] : {std::pair<const char *, bool>{"True", true}, {"False", false}}) {
            if (text_.compare(pos_, std::strlen(word), word) == 0) {
                pos_ += std::strlen(word);
                return value;
            }
        }
        fail("malformed header: expected True or False at header byte ", pos_, " in \"", text_, "\"");
    }
    Shape parse_shape() {
        Shape shape;
        expect('(');
        while (!consume(')')) {
            skip_space();
            const size_t start = pos_;
            int64_t dim = 0;
            while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
                if (__builtin_mul_overflow(dim, int64_t(10), &dim) ||
                    __builtin_add_overflow(dim, int64_t(text_[pos_] - '0'), &dim))
                    fail("shape dimension overflows 64 bits in \"", text_, "\"");
                ++pos_;
            }
            if (pos_ == start)
                fail("malformed header: expected a dimension at header byte ", pos_, " in \"", text_, "\"");
            if (shape.size() == kMaxDims) fail("shape has more than ", kMaxDims, " dimensions");
            shape.push_back(dim);
            if (!consume(',')) {
                expect(')');
                break;
            }
        }
        return shape;
    }

    const std::string &text_;
    size_t pos_ = 0;
};

// Reorders a Fortran-order (first index fastest) array into C order (last index fastest).
std::vector<uint8_t> fortran_to_c(const uint8_t *src, const Shape &shape, size_t element_size) {
    const size_t ndim = shape.size();
    std::vector<uint64_t> fortran_stride(ndim);
    for (size_t d = 0, step = 1; d < ndim; ++d) {
        fortran_stride[d] = step;
        step *= size_t(shape[d]);
    }
    const uint64_t numel = uint64_t(shape_numel(shape));
    std::vector<uint8_t> out(numel * element_size);
    std::vector<int64_t> index(ndim, 0);
    uint64_t offset = 0; // element offset in the Fortran-order source
    for (uint64_t n = 0; n < numel; ++n) {
        std::memcpy(out.data() + n * element_size, src + offset * element_size, element_size);
        for (size_t d = ndim; d-- > 0;) {
            if (++index[d] < shape[d]) {
                offset += fortran_stride[d];
                break;
            }
            offset -= fortran_stride[d] * uint64_t(shape[d] - 1);
            index[d] = 0;
        }
    }
    return out;
}

uint64_t checked_numel(const Shape &shape) {
    uint64_t n = 1;
    for (int64_t d : shape) {
        if (d < 0) fail("negative dimension in shape ", shape_str(shape));
        if (__builtin_mul_overflow(n, uint64_t(d), &n) || n > uint64_t(INT64_MAX))
            fail("shape ", shape_str(shape), " has more elements than 64 bits can count");
    }
    return n;
}

template <class T> T load_le(const uint8_t *p) {
    T v;
    std::memcpy(&v, p, sizeof v); // the files are little-endian, as is every machine this engine targets
    return v;
}

NpyArray parse_npy(const uint8_t *bytes, size_t size) {
    if (size < kMagicSize + 2 || std::memcmp(bytes, kMagic, kMagicSize) != 0)
        fail("not a .npy file (no \\x93NUMPY magic at the start)");
    const unsigned major = bytes[6], minor = bytes[7];
    if (major < 1 || major > 3 || minor != 0) fail("unsupported .npy format version ", major, ".", minor);
    const size_t length_size = major == 1 ? 2 : 4;
    const size_t header_start = kMagicSize + 2 + length_size;
    if (size < header_start) fail("truncated: the file ends inside the header length");
    const size_t header_length =
        major == 1 ? load_le<uint16_t>(bytes + kMagicSize + 2) : load_le<uint32_t>(bytes + kMagicSize + 2);
    if (header_length > size - header_start)
        fail("truncated: the header announces ", header_length, " bytes, the file has ", size - header_start, " left");
    const std::string header(reinterpret_cast<const char *>(bytes + header_start), header_length);

    NpyArray array;
    bool fortran_order = false;
    HeaderParser(header).parse(array, fortran_order);
    const size_t element_size = dtype_size(array.descr);
    const uint64_t numel = checked_numel(array.shape);
    if (numel > uint64_t(SIZE_MAX) / element_size) fail("shape ", shape_str(array.shape), " is too large");
    const uint64_t nbytes = numel * element_size;
    const size_t data_start = header_start + header_length;
    if (size - data_start != nbytes)
        fail(size - data_start < nbytes ? "truncated" : "corrupt", ": shape ", shape_str(array.shape), " of ",
             array.descr, " needs ", nbytes, " data bytes, the file holds ", size - data_start);
    const uint8_t *data = bytes + data_start;
    if (fortran_order && array.shape.size() > 1)
        array.data = fortran_to_c(data, array.shape, element_size);
    else
        array.data.assign(data, data + nbytes);
    return array;
}

template <class T> NpyArray from_values(const char *descr, Shape shape, const std::vector<T> &values) {
    const uint64_t numel = checked_numel(shape);
    if (numel != values.size())
        fail("npy array: ", values.size(), " values for shape ", shape_str(shape), " (", numel, " elements)");
    NpyArray array;
    array.descr = descr;
    array.shape = std::move(shape);
    array.data.resize(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(array.data.data(), values.data(), array.data.size());
    return array;
}

} // namespace

std::vector<float> NpyArray::f32() const {
    const size_t n = data.size() / dtype_size(descr);
    std::vector<float> out(n);
    if (descr == "<f4") {
        if (n) std::memcpy(out.data(), data.data(), n * 4);
    } else if (descr == "<f8") {
        for (size_t i = 0; i < n; ++i) out[i] = float(load_le<double>(data.data() + 8 * i));
    } else if (descr == "<f2") {
        for (size_t i = 0; i < n; ++i) out[i] = ggml_fp16_to_fp32(load_le<ggml_fp16_t>(data.data() + 2 * i));
    } else {
        fail("npy array of dtype '", descr, "' cannot be read as float (only <f4, <f8 and <f2 can)");
    }
    return out;
}

std::vector<int64_t> NpyArray::i64() const {
    if (descr != "<i8" && descr != "<i4" && descr != "<i2" && descr != "|u1" && descr != "|b1")
        fail("npy array of dtype '", descr, "' cannot be read as integers (only <i8, <i4, <i2, |u1 and |b1 can)");
    const size_t size = dtype_size(descr);
    std::vector<int64_t> out(data.size() / size);
    const uint8_t *p = data.data();
    for (size_t i = 0; i < out.size(); ++i, p += size) {
        switch (size) {
        case 8:
            out[i] = load_le<int64_t>(p);
            break;
        case 4:
            out[i] = load_le<int32_t>(p);
            break;
        case 2:
            out[i] = load_le<int16_t>(p);
            break;
        default:
            out[i] = *p;
            break; // |u1, |b1
        }
    }
    return out;
}

NpyArray NpyArray::from_f32(Shape shape, const std::vector<float> &values) {
    return from_values("<f4", std::move(shape), values);
}
NpyArray NpyArray::from_i64(Shape shape, const std::vector<int64_t> &values) {
    return from_values("<i8", std::move(shape), values);
}
NpyArray NpyArray::from_i32(Shape shape, const std::vector<int32_t> &values) {
    return from_values("<i4", std::move(shape), values);
}

NpyArray read_npy(const std::string &path) {
    MappedFile file(path);
    try {
        return parse_npy(file.data(), file.size());
    } catch (const Error &e) {
        fail(path, ": ", e.what());
    }
}

void write_npy(const std::string &path, const NpyArray &array) {
    try {
        const size_t element_size = dtype_size(array.descr);
        const uint64_t numel = checked_numel(array.shape);
        if (array.data.size() != numel * element_size)
            fail("array of shape ", shape_str(array.shape), " and dtype ", array.descr, " needs ", numel * element_size,
                 " bytes, it holds ", array.data.size());
        std::string dims; // as Python writes tuples: (), (55,), (2, 57)
        for (size_t i = 0; i < array.shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(array.shape[i]);
        if (array.shape.size() == 1) dims += ",";
        std::string header = "{'descr': '" + array.descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
        const size_t unpadded = kMagicSize + 2 + 2 + header.size() + 1; // + the final newline
        header.append((kAlignment - unpadded % kAlignment) % kAlignment, ' ');
        header += '\n';
        if (header.size() > UINT16_MAX)
            fail("the header of shape ", shape_str(array.shape), " is too long for format 1.0");

        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        if (!out) fail("cannot create the file");
        const uint8_t length[2] = {uint8_t(header.size() & 0xff), uint8_t(header.size() >> 8)};
        out.write(kMagic, kMagicSize);
        out.put(1).put(0);
        out.write(reinterpret_cast<const char *>(length), 2);
        out.write(header.data(), std::streamsize(header.size()));
        out.write(reinterpret_cast<const char *>(array.data.data()), std::streamsize(array.data.size()));
        out.close();
        if (!out) fail("write failed (disk full?)");
    } catch (const Error &e) {
        fail("cannot write ", path, ": ", e.what());
    }
}

} // namespace chatterbox
