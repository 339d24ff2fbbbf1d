#include "core/heap_policy.h"

#include <cstdlib>
#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace chatterbox {

void keep_large_buffers_off_the_heap() {
#if defined(__GLIBC__)
    static std::once_flag once;
    std::call_once(once, [] {
        if (std::getenv("MALLOC_MMAP_THRESHOLD_") || std::getenv("MALLOC_TRIM_THRESHOLD_")) return;
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
        // A fixed mmap threshold also freezes the trim threshold (128 KiB), and the heaps then gave
        // freed pages back and faulted them in again all the time: the flow took twice as long in the
        // pipeline. 64 MiB is where glibc's own adjustment takes it.
        mallopt(M_TRIM_THRESHOLD, 64 << 20);
    });
#endif
}

} // namespace chatterbox
