// core/huge_pages.h: an arena's blocks are 64-byte aligned, apart and writable, blocks larger than a
// chunk get their own, and where Linux's transparent huge pages are on, a touched chunk is backed by
// them, as is a graph's compute buffer (GraphRunner); advising any range, aligned or not, is harmless.
#include "core/huge_pages.h"

#include "core/graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace chatterbox {
namespace {

TEST(HugePageArena, BlocksAreAlignedApartAndWritable) {
    HugePageArena arena(kHugePageBytes);
    std::vector<std::pair<uint8_t *, size_t>> blocks;
    for (size_t bytes : {size_t(1), size_t(100), size_t(4096), kHugePageBytes / 3, kHugePageBytes / 3,
                         kHugePageBytes / 3, 3 * kHugePageBytes + 5, size_t(64)}) {
        uint8_t *block = arena.allocate(bytes);
        ASSERT_NE(block, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % 64, 0u) << bytes << " bytes";
        std::memset(block, int(blocks.size() + 1), bytes);
        blocks.emplace_back(block, bytes);
    }
    for (size_t i = 0; i < blocks.size(); ++i) {
        const auto [block, bytes] = blocks[i];
        EXPECT_TRUE(std::all_of(block, block + bytes, [&](uint8_t b) { return b == uint8_t(i + 1); }))
            << "block " << i << " was overwritten";
    }
}

// "[madvise]" or "[always]" in the kernel's setting: the system gives huge pages to advised memory.
bool transparent_huge_pages_on() {
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string setting;
    std::getline(in, setting);
    return setting.find("[madvise]") != std::string::npos || setting.find("[always]") != std::string::npos;
}

// Kilobytes of AnonHugePages in the mapping of /proc/self/smaps that holds `address`.
long huge_kilobytes_at(const void *address) {
    std::ifstream smaps("/proc/self/smaps");
    const uintptr_t at = reinterpret_cast<uintptr_t>(address);
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        uintptr_t begin = 0, end = 0;
        char dash = 0;
        std::istringstream range(line);
        if (range >> std::hex >> begin >> dash >> end && dash == '-' && line.find(':') > line.find(' ')) {
            inside = begin <= at && at < end;
        } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
            return std::stol(line.substr(14));
        }
    }
    return -1;
}

TEST(HugePageArena, ATouchedChunkIsInHugePagesWhereTheSystemGivesThem) {
    if (!transparent_huge_pages_on()) GTEST_SKIP() << "transparent huge pages are off here";
    HugePageArena arena(4 * kHugePageBytes);
    uint8_t *block = arena.allocate(4 * kHugePageBytes);
    std::memset(block, 1, 4 * kHugePageBytes);
    EXPECT_GE(huge_kilobytes_at(block), long(kHugePageBytes / 1024))
        << "no huge page backs the arena's chunk (memory too fragmented to give one?)";
}

// GraphRunner asks for huge pages in the compute buffer it places a graph's tensors in, before the
// first values are written there.
TEST(GraphRunner, ItsComputeBufferIsInHugePagesWhereTheSystemGivesThem) {
    if (!transparent_huge_pages_on()) GTEST_SKIP() << "transparent huge pages are off here";
    Backend backend(BackendOptions{"cpu", 2});
    GraphRunner graph(backend);
    const int64_t n = int64_t(4 * kHugePageBytes / sizeof(float));
    ggml_tensor *x = graph.input("x", GGML_TYPE_F32, {n});
    ggml_tensor *doubled = ggml_scale(graph.ctx(), x, 2.0f);
    ggml_tensor *y = ggml_scale(graph.ctx(), doubled, 0.5f);
    graph.build({y});
    graph.set_input(x, std::vector<float>(size_t(n), 1.0f));
    graph.compute();
    EXPECT_EQ(graph.read_f32(y), std::vector<float>(size_t(n), 1.0f));
    for (const ggml_tensor *t : {x, doubled, y}) // the middle: the buffer's start need not be on a huge page
        EXPECT_GE(huge_kilobytes_at(static_cast<const char *>(t->data) + ggml_nbytes(t) / 2),
                  long(kHugePageBytes / 1024))
            << ggml_get_name(t) << ": no huge page backs it (memory too fragmented to give one?)";
}

TEST(AdviseHugePages, AnyRangeIsHarmless) {
    std::vector<uint8_t> small(100, 7);
    advise_huge_pages(small.data(), small.size()); // no whole huge page inside: nothing happens
    advise_huge_pages(small.data() + 1, 0);
    EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](uint8_t b) { return b == 7; }));
    std::vector<uint8_t> large(3 * kHugePageBytes + 123, 9); // touched before: the advice changes no value
    advise_huge_pages(large.data() + 1, large.size() - 1);
    EXPECT_TRUE(std::all_of(large.begin(), large.end(), [](uint8_t b) { return b == 9; }));
}

} // namespace
} // namespace chatterbox
