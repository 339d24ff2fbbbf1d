#pragma once
// NumPy .npy arrays (format 1.0/2.0/3.0, little-endian, C order): read and write.

#include "core/tensor.h"

#include <string>
#include <vector>

namespace chatterbox {

struct NpyArray {
    std::string descr; // "<f4", "<i8", "<i4", "<f8", "|b1" ...
    Shape shape;
    std::vector<uint8_t> data; // little-endian, C order

    int64_t numel() const { return shape_numel(shape); }
    std::vector<float> f32() const;   // from <f4 / <f8 (throws for other dtypes)
    std::vector<int64_t> i64() const; // from <i8 / <i4 (throws for other dtypes)

    static NpyArray from_f32(Shape shape, const std::vector<float> &values);
    static NpyArray from_i64(Shape shape, const std::vector<int64_t> &values);
    static NpyArray from_i32(Shape shape, const std::vector<int32_t> &values);
};

NpyArray read_npy(const std::string &path); // throws Error naming the file and the problem
void write_npy(const std::string &path, const NpyArray &array);

} // namespace chatterbox
