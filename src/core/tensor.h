#pragma once
// Host-side tensors as files store them: a ggml type, a shape in PyTorch order
// (outermost dimension first) and raw little-endian bytes.

#include "ggml.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace chatterbox {

class MappedFile;

using Shape = std::vector<int64_t>; // PyTorch order: shape[0] is the slowest-varying dimension

int64_t shape_numel(const Shape &shape);
std::string shape_str(const Shape &shape); // "[1024, 40]"

// Bytes a tensor of this type and shape occupies; throws when the innermost dimension is
// not a whole number of quantisation blocks.
size_t tensor_nbytes(ggml_type type, const Shape &shape);

// A tensor whose bytes live elsewhere (a mapped file, a HostTensor).
struct TensorView {
    std::string name;
    ggml_type type = GGML_TYPE_F32;
    Shape shape;
    const void *data = nullptr;
    size_t nbytes = 0;
    // The mapped file `data` lies in, or nullptr for bytes in memory; holding it keeps `data` valid
    // (a CPU backend's weights use the mapped bytes in place: ModuleWeights).
    std::shared_ptr<const MappedFile> mapping;

    int64_t numel() const { return shape_numel(shape); }
};

// A tensor that owns its bytes.
struct HostTensor {
    std::string name;
    ggml_type type = GGML_TYPE_F32;
    Shape shape;
    std::vector<uint8_t> bytes;

    HostTensor() = default;
    HostTensor(std::string name, ggml_type type, Shape shape); // zero-filled
    static HostTensor from_f32(std::string name, Shape shape, const std::vector<float> &values);
    static HostTensor from_view(const TensorView &view);

    int64_t numel() const { return shape_numel(shape); }
    TensorView view() const;
    template <class T> T *data_as() { return reinterpret_cast<T *>(bytes.data()); }
    template <class T> const T *data_as() const { return reinterpret_cast<const T *>(bytes.data()); }
};

// Values of a float tensor (f32, f16, bf16 or any quantised type ggml can dequantise) as f32.
std::vector<float> to_f32(const TensorView &view);
// Values of an integer tensor (i32, i64) as int64.
std::vector<int64_t> to_i64(const TensorView &view);

// The (cols, rows) row-major transpose of the (rows, cols) row-major matrix m.
std::vector<float> transposed(const std::vector<float> &m, int64_t rows, int64_t cols);

} // namespace chatterbox
