#pragma once
// Files compiled into the server (cmake/embed_files.cmake writes their definition at build time):
// the web page's sources under web/.

#include <cstddef>
#include <string_view>
#include <vector>

namespace chatterbox::server {

struct EmbeddedFile {
    const char *path; // relative to web/: "index.html", "app.js"
    const unsigned char *data;
    size_t size;

    std::string_view bytes() const { return {reinterpret_cast<const char *>(data), size}; }
};

extern const std::vector<EmbeddedFile> kEmbeddedFiles;

} // namespace chatterbox::server
