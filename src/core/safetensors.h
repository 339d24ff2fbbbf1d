#pragma once
// safetensors files: a memory-mapped reader and a streaming writer.
// Format: 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}},
// then the raw data; offsets are relative to the end of the header.

#include "core/mapped_file.h"
#include "core/tensor.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace chatterbox {

class SafetensorsFile {
public:
    // Maps and validates the whole file: header JSON, dtypes (F32, F16, BF16, I64, I32), shapes,
    // offsets inside the file and not overlapping. Throws Error naming the file and the problem.
    explicit SafetensorsFile(const std::string &path);

    const std::string &path() const { return file_->path(); }
    const std::vector<TensorView> &tensors() const { return tensors_; } // in file order
    const TensorView *find(const std::string &name) const;              // nullptr if absent
    const std::map<std::string, std::string> &metadata() const { return metadata_; }

private:
    std::shared_ptr<const MappedFile> file_;
    std::vector<TensorView> tensors_;
    std::map<std::string, size_t> index_;
    std::map<std::string, std::string> metadata_;
};

// One tensor to write: its bytes are produced by `fill` into a buffer of tensor_nbytes(type, shape).
struct SafetensorsEntry {
    std::string name;
    ggml_type type = GGML_TYPE_F32; // F32, F16, BF16, I64 or I32
    Shape shape;
    std::function<void(void *dst)> fill;
};

// Writes entries in the layout of the official files (see shared WEIGHTS.md): tensors ordered by
// element size descending then name, compact JSON header padded with spaces to a multiple of 8.
// Writes to a temporary file and renames it, so a crash never leaves a half-written file behind.
void write_safetensors(const std::string &path, std::vector<SafetensorsEntry> entries,
                       const std::map<std::string, std::string> &metadata = {});

} // namespace chatterbox
