#pragma once
// All the tensors of a model, from any number of files, by full name.
// A safetensors file is added under a prefix ("t3." + its names); a GGUF file brings full
// names already. Files stay mapped for the store's lifetime, so views never dangle.

#include "core/gguf_file.h"
#include "core/safetensors.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace chatterbox {

class WeightStore {
public:
    void add_safetensors(const std::string &path, const std::string &prefix);
    void add_gguf(const std::string &path); // also keeps the file for metadata (gguf())
    void add_tensor(HostTensor tensor);     // an in-memory tensor under its own name

    const TensorView *find(const std::string &name) const; // nullptr when absent
    // Throws Error "model has no tensor NAME" when absent.
    const TensorView &get(const std::string &name) const;
    std::vector<std::string> names_with_prefix(const std::string &prefix) const; // sorted
    size_t size() const { return index_.size(); }
    const GgufFile *gguf() const { return gguf_.get(); } // nullptr for a folder of safetensors

private:
    // Adds views (names given the prefix) all or none, so a failed add leaves no dangling view.
    void add_views(const std::vector<TensorView> &views, const std::string &prefix, const std::string &source);

    std::vector<std::unique_ptr<SafetensorsFile>> safetensors_;
    std::unique_ptr<GgufFile> gguf_;
    std::vector<std::unique_ptr<HostTensor>> owned_;
    std::map<std::string, TensorView> index_;
    std::map<std::string, std::string> sources_; // name -> file (or "memory") it came from, for errors
};

} // namespace chatterbox
