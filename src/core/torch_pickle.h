#pragma once
// A safe reader for PyTorch .pt files (a zip archive holding a pickle plus raw storages).
// Only plain data is accepted: tensors, dicts, lists, tuples, None, bools, numbers and
// strings (plus the few torch/collections globals needed to rebuild them). Any other global
// or opcode is refused with a clear error: nothing is ever executed.

#include "core/tensor.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace chatterbox {

struct PtValue {
    enum class Kind { None, Bool, Int, Float, String, List, Tuple, Dict, Tensor };
    Kind kind = Kind::None;
    bool boolean = false;
    int64_t integer = 0;
    double real = 0;
    std::string string;
    std::vector<PtValue> items;                          // List, Tuple
    std::vector<std::pair<PtValue, PtValue>> entries;    // Dict, in insertion order
    std::shared_ptr<HostTensor> tensor;                  // Tensor (contiguous copy, PyTorch shape)

    bool is_none() const { return kind == Kind::None; }
    // Dict lookup by string key; throws Error (naming the key) when missing or not a dict.
    const PtValue &at(const std::string &key) const;
    const PtValue *find(const std::string &key) const; // nullptr when missing
    std::string kind_name() const;
};

PtValue load_torch_pt(const std::string &path); // throws Error naming the file and the problem

} // namespace chatterbox
