// core/mapped_file.h: the bytes of a whole file, read-only; a released range leaves the process's
// resident set (what /proc/self/smaps counts for the mapping) and reads back unchanged; a range
// outside the file is refused.
#include "core/mapped_file.h"

#include "core/error.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace chatterbox {
namespace {

// The resident KiB of this process's mapping of `path`, from /proc/self/smaps (-1: no such mapping).
long resident_kib(const std::string &path) {
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool in_mapping = false;
    while (std::getline(smaps, line)) {
        const bool header = line.find('-') < line.find(' ') && line.find(':') > line.find(' ');
        if (header)
            in_mapping = line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0;
        if (in_mapping && line.rfind("Rss:", 0) == 0) return std::stol(line.substr(4));
    }
    return -1;
}

std::vector<uint8_t> pattern(size_t bytes) {
    std::vector<uint8_t> values(bytes);
    for (size_t i = 0; i < bytes; ++i) values[i] = uint8_t(i * 7 + i / 4096);
    return values;
}

TEST(MappedFile, ReleasedPagesLeaveTheResidentSetAndReadBackUnchanged) {
    const std::string path = test::temp_dir("mapped_file") + "/data.bin";
    const std::vector<uint8_t> expected = pattern(size_t(8) << 20);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char *>(expected.data()), std::streamsize(expected.size()));
    MappedFile file(path);
    ASSERT_EQ(file.size(), expected.size());
    EXPECT_EQ(std::vector<uint8_t>(file.data(), file.data() + file.size()), expected);
    const long before = resident_kib(path);
    if (before < 0) GTEST_SKIP() << "no /proc/self/smaps entry for the mapping";
    EXPECT_GE(before, 8 * 1024 - 64) << "every page was read";
    file.release(file.data() + 1000, (size_t(6) << 20) + 5); // whole pages inside only
    const long after = resident_kib(path);
    EXPECT_LE(after, before - 6 * 1024 + 8);
    EXPECT_GE(after, 2 * 1024 - 8) << "the pages around the range stay";
    EXPECT_EQ(std::vector<uint8_t>(file.data(), file.data() + file.size()), expected);
}

TEST(MappedFile, ARangeOutsideTheFileIsRefused) {
    const std::string path = test::temp_dir("mapped_file_range") + "/data.bin";
    std::ofstream(path, std::ios::binary) << std::string(10000, 'x');
    MappedFile file(path);
    EXPECT_THROW(file.release(file.data() + 9000, 2000), Error);
    EXPECT_THROW(file.release(file.data() - 1, 10), Error);
    EXPECT_NO_THROW(file.release(file.data(), file.size()));
}

} // namespace
} // namespace chatterbox
