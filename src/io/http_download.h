#pragma once
// Resumable file download through libcurl (http, https, and file:// for local copies and tests).
//
// The transfer goes into "<dest>.part"; an interrupted run leaves it there and the next run asks the
// server for the rest (HTTP Range) instead of starting over. The expected size comes from a HEAD
// request (Content-Length after redirects); the finished file must have exactly that size before it
// is renamed to <dest>, so a cut-off transfer never passes for a complete file. When the server
// publishes the file's SHA-256 (the model hub's X-Linked-Etag header on an LFS file, seen on the
// redirect to its storage), the finished file must also have that digest.

#include <cstdint>
#include <functional>
#include <string>

namespace chatterbox::io {

constexpr int64_t kUnknownSize = -1;

// What to do with an existing .part file, given its size and the size of the remote file.
enum class ResumeAction {
    start,    // no usable partial file: download from the first byte
    resume,   // a shorter partial file: ask for the remaining bytes
    complete, // the partial file already has every byte
    restart,  // the partial file is longer than the remote file (it changed): discard it
};
ResumeAction plan_resume(int64_t part_bytes, int64_t remote_bytes);

// Bytes received so far (counting a resumed file's earlier part) and the total (kUnknownSize when
// the server does not say). Return false to stop the transfer (it then throws Error).
using DownloadProgress = std::function<bool(int64_t done_bytes, int64_t total_bytes)>;

struct DownloadOptions {
    DownloadProgress progress;   // optional
    long connect_timeout_s = 20; // give up on a server that does not answer
    long stall_timeout_s = 60;   // give up when no byte arrives for this long
};

// What a HEAD request (following redirects) tells about the remote file.
struct RemoteFile {
    int64_t bytes = kUnknownSize; // Content-Length of the last response
    std::string sha256;           // lower-case hex from X-Linked-Etag; "" when no response carried one
};
// Throws Error when the server cannot be reached or answers with an error status.
RemoteFile remote_file_info(const std::string &url, const DownloadOptions &options = {});
// remote_file_info(...).bytes
int64_t remote_file_size(const std::string &url, const DownloadOptions &options = {});

// Downloads `url` to `dest` through "<dest>.part" as described above. Throws Error naming the URL
// and the cause (no network, HTTP status, size mismatch, local write failure); the .part file is
// kept so that the next call resumes. A SHA-256 mismatch deletes the .part file (resuming it could
// not help) and leaves an existing `dest` as it was; the message gives both digests.
void download_file(const std::string &url, const std::string &dest, const DownloadOptions &options = {});

} // namespace chatterbox::io
