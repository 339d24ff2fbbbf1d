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
        if (!std::getenv("MALLOC_MMAP_THRESHOLD_")) mallopt(M_MMAP_THRESHOLD, 1 << 20);
    });
#endif
}

} // namespace chatterbox
