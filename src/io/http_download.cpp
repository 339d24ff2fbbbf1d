#include "io/http_download.h"

#include "core/error.h"
#include "io/file_digest.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>

namespace chatterbox::io {

namespace fs = std::filesystem;

ResumeAction plan_resume(int64_t part_bytes, int64_t remote_bytes) {
    if (part_bytes <= 0) return ResumeAction::start;
    if (remote_bytes == kUnknownSize) return ResumeAction::start; // nothing to check a partial file against
    if (part_bytes < remote_bytes) return ResumeAction::resume;
    if (part_bytes == remote_bytes) return ResumeAction::complete;
    return ResumeAction::restart;
}

namespace {

// One curl handle with the settings every request shares; curl's error text lands in `error`.
class CurlRequest {
  public:
    CurlRequest(const std::string &url, const DownloadOptions &options) : url_(url) {
        static std::once_flag global_init;
        std::call_once(global_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
        handle_ = curl_easy_init();
        if (!handle_) fail("download of ", url, ": libcurl could not start a transfer");
        error_[0] = '\0';
        set(CURLOPT_URL, url.c_str());
        set(CURLOPT_ERRORBUFFER, error_);
        set(CURLOPT_FOLLOWLOCATION, 1L); // the model hub redirects large files to its storage
        set(CURLOPT_MAXREDIRS, 10L);
        set(CURLOPT_FAILONERROR, 1L); // HTTP >= 400 is an error, not a body to save
        set(CURLOPT_NOSIGNAL, 1L);
        set(CURLOPT_USERAGENT, "chatterbox-engine");
        set(CURLOPT_CONNECTTIMEOUT, options.connect_timeout_s);
        set(CURLOPT_LOW_SPEED_LIMIT, 1L);
        set(CURLOPT_LOW_SPEED_TIME, options.stall_timeout_s);
    }
    ~CurlRequest() { curl_easy_cleanup(handle_); }
    CurlRequest(const CurlRequest &) = delete;
    CurlRequest &operator=(const CurlRequest &) = delete;

    template <class T> void set(CURLoption option, T value) { curl_easy_setopt(handle_, option, value); }
    CURL *handle() const { return handle_; }

    CURLcode perform() { return curl_easy_perform(handle_); }

    // "Could not resolve host: huggingface.co" rather than curl's generic text when it has one.
    std::string reason(CURLcode code) const { return error_[0] ? error_ : curl_easy_strerror(code); }

    [[noreturn]] void fail_with(CURLcode code) const { fail("download of ", url_, " failed: ", reason(code)); }

  private:
    std::string url_;
    CURL *handle_ = nullptr;
    char error_[CURL_ERROR_SIZE];
};

struct FileCloser {
    void operator()(std::FILE *file) const { std::fclose(file); }
};

struct Transfer {
    std::FILE *out = nullptr;
    int write_errno = 0;
    int64_t offset = 0; // bytes already in the .part file before this transfer
    int64_t remote_bytes = kUnknownSize;
    const DownloadProgress *progress = nullptr;
};

size_t write_body(char *data, size_t size, size_t count, void *user) {
    auto *transfer = static_cast<Transfer *>(user);
    const size_t written = std::fwrite(data, size, count, transfer->out);
    if (written != count) transfer->write_errno = errno;
    return written * size;
}

int report_progress(void *user, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
    const auto *transfer = static_cast<const Transfer *>(user);
    const int64_t whole = transfer->remote_bytes != kUnknownSize ? transfer->remote_bytes
                          : total > 0                            ? transfer->offset + total
                                                                 : kUnknownSize;
    return (*transfer->progress)(transfer->offset + now, whole) ? 0 : 1;
}

int64_t file_size_or_zero(const std::string &path) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    return ec ? 0 : static_cast<int64_t>(size);
}

// Appends the bytes from `offset` on to `part` (offset 0: rewrites it). Returns curl's result so that
// the caller can retry from the start when the server refuses byte ranges.
CURLcode transfer_into(const std::string &url, const std::string &part, int64_t offset, int64_t remote_bytes,
                       const DownloadOptions &options) {
    std::unique_ptr<std::FILE, FileCloser> out(std::fopen(part.c_str(), offset > 0 ? "ab" : "wb"));
    if (!out) fail("cannot write ", part, ": ", std::strerror(errno));
    Transfer transfer{out.get(), 0, offset, remote_bytes, &options.progress};

    CurlRequest request(url, options);
    request.set(CURLOPT_WRITEFUNCTION, write_body);
    request.set(CURLOPT_WRITEDATA, &transfer);
    if (offset > 0) request.set(CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(offset));
    if (options.progress) {
        request.set(CURLOPT_XFERINFOFUNCTION, report_progress);
        request.set(CURLOPT_XFERINFODATA, &transfer);
        request.set(CURLOPT_NOPROGRESS, 0L);
    }
    const CURLcode code = request.perform();
    if (transfer.write_errno != 0) fail("cannot write ", part, ": ", std::strerror(transfer.write_errno));
    if (std::fflush(out.get()) != 0) fail("cannot write ", part, ": ", std::strerror(errno));
    if (code == CURLE_ABORTED_BY_CALLBACK) fail("download of ", url, " stopped (", part, " is kept for resuming)");
    if (code != CURLE_OK && code != CURLE_RANGE_ERROR) request.fail_with(code);
    return code;
}

// The hub's LFS digest: `X-Linked-Etag: "<64 hex>"` on the response that redirects to the storage.
// Any other value (a git blob's SHA-1 for a file outside LFS, a weak W/ tag) is no SHA-256 and is ignored.
size_t read_linked_etag(char *data, size_t size, size_t count, void *user) {
    const std::string line(data, size * count);
    const std::string name = "x-linked-etag:";
    const auto same_letter = [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); };
    if (line.size() <= name.size() || !std::equal(name.begin(), name.end(), line.begin(), same_letter))
        return size * count;
    std::string value;
    for (const char c : line.substr(name.size())) {
        if (std::isxdigit(static_cast<unsigned char>(c)))
            value += char(std::tolower(static_cast<unsigned char>(c)));
        else if (c != ' ' && c != '"' && c != '\r' && c != '\n' && c != '\t')
            return size * count;
    }
    if (value.size() == 64) *static_cast<std::string *>(user) = value;
    return size * count;
}

} // namespace

RemoteFile remote_file_info(const std::string &url, const DownloadOptions &options) {
    RemoteFile remote;
    CurlRequest request(url, options);
    request.set(CURLOPT_NOBODY, 1L);
    request.set(CURLOPT_HEADERFUNCTION, read_linked_etag);
    request.set(CURLOPT_HEADERDATA, &remote.sha256);
    const CURLcode code = request.perform();
    if (code != CURLE_OK) request.fail_with(code);
    curl_off_t length = -1;
    curl_easy_getinfo(request.handle(), CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    remote.bytes = length >= 0 ? static_cast<int64_t>(length) : kUnknownSize;
    return remote;
}

int64_t remote_file_size(const std::string &url, const DownloadOptions &options) {
    return remote_file_info(url, options).bytes;
}

void download_file(const std::string &url, const std::string &dest, const DownloadOptions &options) {
    const RemoteFile remote = remote_file_info(url, options);
    const int64_t remote_bytes = remote.bytes;
    const std::string part = dest + ".part";
    const int64_t part_bytes = file_size_or_zero(part);

    switch (plan_resume(part_bytes, remote_bytes)) {
    case ResumeAction::complete:
        break;
    case ResumeAction::resume:
        // A server that ignores Range would send the whole file again: start over instead.
        if (transfer_into(url, part, part_bytes, remote_bytes, options) == CURLE_RANGE_ERROR)
            transfer_into(url, part, 0, remote_bytes, options);
        break;
    case ResumeAction::start:
    case ResumeAction::restart:
        transfer_into(url, part, 0, remote_bytes, options);
        break;
    }

    const int64_t received = file_size_or_zero(part);
    if (remote_bytes != kUnknownSize && received != remote_bytes)
        fail("download of ", url, " is incomplete: ", received, " of ", remote_bytes, " bytes in ", part,
             " (run again to resume)");
    if (!remote.sha256.empty()) {
        const std::string received_sha256 = file_sha256(part);
        if (received_sha256 != remote.sha256) {
            std::error_code ignored;
            fs::remove(part, ignored);
            fail("download of ", url, " is damaged: its SHA-256 is ", received_sha256, ", the server publishes ",
                 remote.sha256, "; the received copy was deleted and ",
                 fs::exists(dest, ignored) ? dest + " is kept as it was" : dest + " was not created",
                 " (run again to download it anew)");
        }
    }
    std::error_code ec;
    fs::rename(part, dest, ec);
    if (ec) fail("cannot rename ", part, " to ", dest, ": ", ec.message());
}

} // namespace chatterbox::io
