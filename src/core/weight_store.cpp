#include "core/weight_store.h"

#include "core/error.h"

#include <set>

namespace chatterbox {

void WeightStore::add_safetensors(const std::string &path, const std::string &prefix) {
    auto file = std::make_unique<SafetensorsFile>(path);
    add_views(file->tensors(), prefix, path);
    safetensors_.push_back(std::move(file));
}

void WeightStore::add_gguf(const std::string &path) {
    if (gguf_) fail("cannot add ", path, ": the model already has a GGUF file (", gguf_->path(), ")");
    auto file = std::make_unique<GgufFile>(path);
    add_views(file->tensors(), "", path);
    gguf_ = std::move(file);
}

void WeightStore::add_tensor(HostTensor tensor) {
    auto owned = std::make_unique<HostTensor>(std::move(tensor));
    add_views({owned->view()}, "", "memory");
    owned_.push_back(std::move(owned));
}

void WeightStore::add_views(const std::vector<TensorView> &views, const std::string &prefix,
                            const std::string &source) {
    std::set<std::string> added;
    for (const TensorView &view : views) {
        const std::string name = prefix + view.name;
        auto it = sources_.find(name);
        if (it != sources_.end()) fail("tensor ", name, " appears twice: in ", it->second, " and in ", source);
        if (!added.insert(name).second) fail("tensor ", name, " appears twice in ", source);
    }
    for (const TensorView &view : views) {
        TensorView named = view;
        named.name = prefix + view.name;
        sources_.emplace(named.name, source);
        index_.emplace(named.name, std::move(named));
    }
}

const TensorView *WeightStore::find(const std::string &name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &it->second;
}

const TensorView &WeightStore::get(const std::string &name) const {
    const TensorView *view = find(name);
    if (!view) fail("model has no tensor ", name);
    return *view;
}

std::vector<std::string> WeightStore::names_with_prefix(const std::string &prefix) const {
    std::vector<std::string> out;
    for (auto it = index_.lower_bound(prefix); it != index_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
         ++it)
        out.push_back(it->first);
    return out;
}

} // namespace chatterbox
