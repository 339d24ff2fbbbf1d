#include "core/mapped_file.h"

#include "core/error.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace chatterbox {

MappedFile::MappedFile(const std::string &path) : path_(path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("cannot open ", path, ": ", std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        fail("cannot read ", path, ": not a regular file");
    }
    size_ = size_t(st.st_size);
    if (size_ > 0) {
        void *p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int err = errno;
            ::close(fd);
            fail("cannot map ", path, ": ", std::strerror(err));
        }
        data_ = static_cast<const uint8_t *>(p);
    }
    ::close(fd);
}

void MappedFile::release(const void *data, size_t bytes) const {
    const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<uintptr_t>(data), end = begin + bytes;
    if (begin < reinterpret_cast<uintptr_t>(data_) || end > reinterpret_cast<uintptr_t>(data_) + size_)
        fail("MappedFile::release: a range outside ", path_);
    const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
    // A refusal leaves the pages resident: nothing to report.
    if (last > first) (void)::madvise(reinterpret_cast<void *>(first), last - first, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
    if (data_) ::munmap(const_cast<uint8_t *>(data_), size_);
}

} // namespace chatterbox
