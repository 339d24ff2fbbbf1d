#pragma once
// GGUF files through ggml's gguf API: a memory-mapped reader and a streaming writer.
//
// Tensor names: GGUF limits names to 63 bytes, and many official S3Gen names are longer.
// The writer stores a name that fits (the full name when short enough, otherwise a shortened
// name with a hash) and records every full name, in tensor order, in the string array
// "chatterbox.tensor_names"; the reader gives back full names.
// Shapes: GGUF stores ggml's ne, where trailing ones (PyTorch's leading ones) vanish, so the
// writer also records each tensor's PyTorch rank in the int32 array "chatterbox.tensor_ranks";
// the reader restores (1, 256) or a scalar () exactly. Files without these arrays (written by other
// tools) read with their stored names and the rank ggml reports.

#include "core/mapped_file.h"
#include "core/tensor.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

struct gguf_context;

namespace chatterbox {

class GgufFile {
public:
    // Parses the header with ggml's gguf reader, maps the file, checks every tensor's data lies
    // inside the file. Throws Error naming the file and the problem.
    explicit GgufFile(const std::string &path);
    ~GgufFile();

    const std::string &path() const { return file_->path(); }
    const std::vector<TensorView> &tensors() const { return tensors_; } // full names
    const TensorView *find(const std::string &name) const;

    bool has_key(const std::string &key) const;
    std::string get_string(const std::string &key) const; // throws when missing / wrong type
    int64_t get_int(const std::string &key) const;        // any integer type
    double get_float(const std::string &key) const;       // f32/f64 (or integer)
    std::vector<std::string> get_string_array(const std::string &key) const;
    std::vector<int64_t> get_int_array(const std::string &key) const; // any integer element type
    std::vector<std::string> keys() const;
    gguf_context *raw() const { return ctx_; }

private:
    std::shared_ptr<const MappedFile> file_;
    gguf_context *ctx_ = nullptr;
    std::vector<TensorView> tensors_;
    std::map<std::string, size_t> index_;
};

class GgufWriter {
public:
    GgufWriter();
    ~GgufWriter();
    void set_string(const std::string &key, const std::string &value);
    void set_int(const std::string &key, int64_t value);
    void set_float(const std::string &key, double value);
    void set_string_array(const std::string &key, const std::vector<std::string> &values);
    void set_int_array(const std::string &key, const std::vector<int64_t> &values);
    // Adds a tensor; its bytes (tensor_nbytes(type, shape)) come from `fill` at write time.
    void add_tensor(const std::string &name, ggml_type type, const Shape &shape, std::function<void(void *dst)> fill);
    // Streams header and data to a temporary file, then renames it to `path`.
    void write(const std::string &path);

private:
    struct Pending;
    std::vector<Pending> pending_;
    gguf_context *ctx_ = nullptr;
};

} // namespace chatterbox
