#pragma once
// Which owner holds the side data (reordered or packed copies) of the weights in a ggml buffer, for
// a custom op's builder that knows a weight tensor, hence its buffer, and nothing of its owner.

#include "ggml-backend.h"

#include <map>
#include <mutex>

namespace chatterbox::kernels {

template <class Owner> class BufferRegistry {
  public:
    void add(ggml_backend_buffer_t buffer, Owner *owner) {
        std::lock_guard<std::mutex> lock(mutex_);
        owners_[buffer] = owner;
    }
    // Forgets `buffer` if `owner` still holds it (a later owner of a reused address keeps it).
    void remove(ggml_backend_buffer_t buffer, const Owner *owner) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto found = owners_.find(buffer);
        if (found != owners_.end() && found->second == owner) owners_.erase(found);
    }
    Owner *find(ggml_backend_buffer_t buffer) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto found = owners_.find(buffer);
        return found == owners_.end() ? nullptr : found->second;
    }

  private:
    std::mutex mutex_;
    std::map<ggml_backend_buffer_t, Owner *> owners_;
};

} // namespace chatterbox::kernels
