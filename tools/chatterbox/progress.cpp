#include "progress.h"

#include <algorithm>
#include <cstdio>
#include <unistd.h>

namespace cli {

Progress::Progress(bool quiet) : quiet_(quiet), bar_(!quiet && isatty(STDERR_FILENO)) {}

Progress::~Progress() { clear(); }

void Progress::update(const std::string &label, double fraction, const std::string &detail) {
    if (!bar_) return;
    const auto now = std::chrono::steady_clock::now();
    if (shown_ && fraction < 1.0 && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    constexpr int kWidth = 30;
    const double clamped = std::clamp(fraction, 0.0, 1.0);
    const int filled = static_cast<int>(clamped * kWidth + 0.5);
    std::fprintf(stderr, "\r\033[K%-8s [%s%s] %3d%% %s", label.c_str(), std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '-').c_str(), static_cast<int>(clamped * 100 + 0.5), detail.c_str());
    std::fflush(stderr);
    shown_ = true;
}

void Progress::clear() {
    if (!shown_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    shown_ = false;
}

void Progress::note(const std::string &line) {
    if (quiet_) return;
    clear();
    std::fprintf(stderr, "%s\n", line.c_str());
}

std::string human_bytes(double bytes) {
    const char *units[] = {"B", "kB", "MB", "GB", "TB"};
    int unit = 0;
    while (bytes >= 1000 && unit < 4) {
        bytes /= 1000;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, units[unit]);
    return text;
}

} // namespace cli
