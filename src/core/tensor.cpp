#include "core/tensor.h"

#include "core/error.h"

#include <cstring>

namespace chatterbox {

int64_t shape_numel(const Shape &shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

std::string shape_str(const Shape &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

size_t tensor_nbytes(ggml_type type, const Shape &shape) {
    for (int64_t d : shape)
        if (d < 0) fail("negative dimension in shape ", shape_str(shape));
    const int64_t block = ggml_blck_size(type);
    const int64_t inner = shape.empty() ? 1 : shape.back();
    if (inner % block != 0)
        fail("innermost dimension ", inner, " of shape ", shape_str(shape), " is not a multiple of the ",
             ggml_type_name(type), " block size ", block);
    return size_t(shape_numel(shape) / block) * ggml_type_size(type);
}

HostTensor::HostTensor(std::string name_, ggml_type type_, Shape shape_)
    : name(std::move(name_)), type(type_), shape(std::move(shape_)), bytes(tensor_nbytes(type, shape), 0) {}

HostTensor HostTensor::from_f32(std::string name, Shape shape, const std::vector<float> &values) {
    HostTensor t(std::move(name), GGML_TYPE_F32, std::move(shape));
    if (int64_t(values.size()) != t.numel())
        fail("tensor ", t.name, ": ", values.size(), " values for shape ", shape_str(t.shape));
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    return t;
}

HostTensor HostTensor::from_view(const TensorView &view) {
    HostTensor t(view.name, view.type, view.shape);
    if (t.bytes.size() != view.nbytes) fail("tensor ", view.name, ": byte size does not match its shape");
    if (view.nbytes) std::memcpy(t.bytes.data(), view.data, view.nbytes);
    return t;
}

TensorView HostTensor::view() const { return TensorView{name, type, shape, bytes.data(), bytes.size()}; }

std::vector<float> to_f32(const TensorView &view) {
    std::vector<float> out(size_t(view.numel()));
    if (view.type == GGML_TYPE_F32) {
        if (view.nbytes) std::memcpy(out.data(), view.data, view.nbytes);
        return out;
    }
    const auto *traits = ggml_get_type_traits(view.type);
    const bool is_float = view.type == GGML_TYPE_F16 || view.type == GGML_TYPE_BF16 || ggml_is_quantized(view.type);
    if (!is_float || !traits->to_float)
        fail("tensor ", view.name, ": type ", ggml_type_name(view.type), " cannot be read as float");
    traits->to_float(view.data, out.data(), view.numel());
    return out;
}

std::vector<float> transposed(const std::vector<float> &m, int64_t rows, int64_t cols) {
    std::vector<float> t(m.size());
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) t[size_t(c * rows + r)] = m[size_t(r * cols + c)];
    return t;
}

std::vector<int64_t> to_i64(const TensorView &view) {
    std::vector<int64_t> out(size_t(view.numel()));
    if (view.type == GGML_TYPE_I64) {
        if (view.nbytes) std::memcpy(out.data(), view.data, view.nbytes);
    } else if (view.type == GGML_TYPE_I32) {
        const auto *p = static_cast<const int32_t *>(view.data);
        for (size_t i = 0; i < out.size(); ++i) out[i] = p[i];
    } else {
        fail("tensor ", view.name, ": type ", ggml_type_name(view.type), " is not an integer type");
    }
    return out;
}

} // namespace chatterbox
