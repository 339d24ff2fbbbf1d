#include "core/huge_pages.h"

#include <algorithm>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace chatterbox {

void advise_huge_pages(void *data, size_t bytes) {
#if defined(MADV_HUGEPAGE)
    const uintptr_t begin = reinterpret_cast<uintptr_t>(data), end = begin + bytes;
    const uintptr_t first = (begin + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    const uintptr_t last = end / kHugePageBytes * kHugePageBytes;
    // A refusal (no THP in this kernel, or THP off) leaves ordinary pages: nothing to report.
    if (last > first) (void)madvise(reinterpret_cast<void *>(first), last - first, MADV_HUGEPAGE);
#else
    (void)data, (void)bytes;
#endif
}

uint8_t *HugePageArena::allocate(size_t bytes) {
    constexpr size_t kAlign = 64;
    bytes = (bytes + kAlign - 1) / kAlign * kAlign;
    std::lock_guard<std::mutex> lock(mutex_);
    if (chunks_.empty() || size_ - used_ < bytes) {
        const size_t size = (std::max(bytes, chunk_bytes_) + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
        std::unique_ptr<uint8_t, Free> chunk(static_cast<uint8_t *>(std::aligned_alloc(kHugePageBytes, size)));
        if (!chunk) throw std::bad_alloc();
        advise_huge_pages(chunk.get(), size);
        chunks_.push_back(std::move(chunk));
        used_ = 0;
        size_ = size;
    }
    uint8_t *block = chunks_.back().get() + used_;
    used_ += bytes;
    return block;
}

} // namespace chatterbox
