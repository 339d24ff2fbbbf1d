#pragma once
// Memory that the kernels stream through at every step (the packed q4_K weights, T3's KV caches),
// backed by 2 MiB pages where Linux gives them (transparent huge pages, in its "madvise" mode too):
// a pass over hundreds of MB then takes a TLB miss per 2 MiB instead of per 4 KiB (bench/history/
// 2026-12-04-zen4-kv-q8-huge-pages.md).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

namespace chatterbox {

constexpr size_t kHugePageBytes = size_t(2) << 20;

// Asks for the whole 2 MiB pages inside [data, data + bytes) to be huge pages when first touched, so
// call it before writing there; does nothing where the system cannot.
void advise_huge_pages(void *data, size_t bytes);

// Blocks carved from a few large 2 MiB-aligned chunks advised as huge pages (whole huge pages per
// block would waste up to 2 MiB on each), each block 64-byte aligned; all freed with the arena.
// Thread-safe.
class HugePageArena {
  public:
    explicit HugePageArena(size_t chunk_bytes = 64 * kHugePageBytes) : chunk_bytes_(chunk_bytes) {}
    uint8_t *allocate(size_t bytes); // throws std::bad_alloc

  private:
    struct Free {
        void operator()(uint8_t *p) const { std::free(p); }
    };
    const size_t chunk_bytes_;
    std::mutex mutex_;
    std::vector<std::unique_ptr<uint8_t, Free>> chunks_;
    size_t used_ = 0, size_ = 0; // of the last chunk
};

} // namespace chatterbox
