#include "timing.h"

#include "core/error.h"

#include <algorithm>
#include <fstream>
#include <numeric>
#include <string>
#include <time.h>

namespace chatterbox::bench {

double process_cpu_ms() {
    timespec now{};
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now) != 0) fail("cannot read the process CPU time");
    return double(now.tv_sec) * 1e3 + double(now.tv_nsec) / 1e6;
}

void reset_peak_rss() {
    std::ofstream clear("/proc/self/clear_refs");
    if (clear) clear << "5"; // resets VmHWM to the current RSS
}

double peak_rss_mib() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmHWM:", 0) == 0) return double(std::stoll(line.substr(6))) / 1024.0; // kB
    return 0;
}

Spread spread_of(std::vector<double> samples) {
    if (samples.empty()) fail("spread_of: no samples");
    std::sort(samples.begin(), samples.end());
    const double sum = std::accumulate(samples.begin(), samples.end(), 0.0);
    return Spread{samples.front(), samples[samples.size() / 2], sum / double(samples.size())};
}

} // namespace chatterbox::bench
