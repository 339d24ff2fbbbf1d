#pragma once
// A read-only memory map of a whole file.

#include <cstddef>
#include <cstdint>
#include <string>

namespace chatterbox {

class MappedFile {
public:
    explicit MappedFile(const std::string &path); // throws Error naming the file and the reason
    ~MappedFile();
    MappedFile(const MappedFile &) = delete;
    MappedFile &operator=(const MappedFile &) = delete;

    const uint8_t *data() const { return data_; }
    size_t size() const { return size_; }
    const std::string &path() const { return path_; }
    // Takes the whole pages of [data, data + bytes) (inside the file) out of this process's resident
    // set: the page cache keeps them, and a later read maps them again. For bytes read once (a weight
    // packed into a kernel's own copy at load), which would otherwise count in the process's memory
    // beside that copy.
    void release(const void *data, size_t bytes) const;

private:
    std::string path_;
    const uint8_t *data_ = nullptr;
    size_t size_ = 0;
};

} // namespace chatterbox
