#pragma once
// A process-lifetime copy of a small value, one per distinct value (T ordered by operator<): an
// address that a ggml custom op's userdata can hold for as long as any graph using it lives.
// Thread-safe.

#include <mutex>
#include <set>

namespace chatterbox::kernels {

template <class T> const T *interned(const T &value) {
    static std::mutex mutex;
    static std::set<T> values;
    std::lock_guard<std::mutex> lock(mutex);
    return &*values.insert(value).first;
}

} // namespace chatterbox::kernels
