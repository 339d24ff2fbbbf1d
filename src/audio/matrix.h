#pragma once
// A dense row-major float matrix: what spectrograms, filterbanks and feature front ends return.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace chatterbox::audio {

struct Matrix {
    int64_t rows = 0;
    int64_t cols = 0;
    std::vector<float> values; // rows * cols, row-major

    Matrix() = default;
    Matrix(int64_t rows_, int64_t cols_) : rows(rows_), cols(cols_), values(size_t(rows_ * cols_), 0.0f) {}

    float &at(int64_t r, int64_t c) { return values[size_t(r * cols + c)]; }
    float at(int64_t r, int64_t c) const { return values[size_t(r * cols + c)]; }
    float *row(int64_t r) { return values.data() + r * cols; }
    const float *row(int64_t r) const { return values.data() + r * cols; }
    Matrix transposed() const {
        Matrix t(cols, rows);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) t.at(c, r) = at(r, c);
        return t;
    }
};

} // namespace chatterbox::audio
