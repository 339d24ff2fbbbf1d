#pragma once
// Cancellation of one request, safe across threads: any thread may request it; the computing
// thread polls it between steps and ggml polls it between graph nodes (Backend's abort callback),
// so a request stops within one node of a long graph.

#include <atomic>

namespace chatterbox {

class CancelFlag {
  public:
    // Also honours an external flag of the C API (nonzero: cancel), read with an atomic load; nullptr: none.
    void watch(const volatile int *external) { external_.store(external, std::memory_order_relaxed); }
    void request() { requested_.store(true, std::memory_order_relaxed); }
    void clear() {
        requested_.store(false, std::memory_order_relaxed);
        watch(nullptr);
    }
    bool requested() const {
        if (requested_.load(std::memory_order_relaxed)) return true;
        const volatile int *external = external_.load(std::memory_order_relaxed);
        return external && __atomic_load_n(external, __ATOMIC_RELAXED) != 0;
    }

  private:
    std::atomic<bool> requested_{false};
    std::atomic<const volatile int *> external_{nullptr};
};

} // namespace chatterbox
