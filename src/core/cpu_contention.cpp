#include "core/cpu_contention.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#if defined(__linux__)
#include <dirent.h>
#include <sched.h>
#endif

namespace chatterbox {

namespace {

// The state letter of /proc/<pid>/task/<tid>/stat: the field after the parenthesised name, which
// may itself contain spaces and parentheses.
char task_state(const char *stat_path) {
    FILE *f = std::fopen(stat_path, "r");
    if (!f) return '?';
    char line[512];
    const size_t n = std::fread(line, 1, sizeof line - 1, f);
    std::fclose(f);
    line[n] = '\0';
    const char *close = std::strrchr(line, ')');
    return close && close[1] == ' ' ? close[2] : '?';
}

// Smoothing of the samples: a new one counts half.
constexpr double kNewSampleWeight = 0.5;

} // namespace

int CpuContention::own_runnable() {
#if defined(__linux__)
    DIR *tasks = opendir("/proc/self/task");
    if (!tasks) return -1;
    int runnable = 0;
    while (const dirent *entry = readdir(tasks)) {
        if (entry->d_name[0] == '.') continue;
        const std::string path = std::string("/proc/self/task/") + entry->d_name + "/stat";
        if (task_state(path.c_str()) == 'R') ++runnable;
    }
    closedir(tasks);
    return runnable;
#else
    return -1;
#endif
}

int CpuContention::others_runnable() {
    FILE *f = std::fopen("/proc/loadavg", "r");
    if (!f) return -1;
    int runnable = -1, total = 0;
    const int fields = std::fscanf(f, "%*f %*f %*f %d/%d", &runnable, &total);
    std::fclose(f);
    const int own = own_runnable();
    if (fields != 2 || runnable < 0 || own < 0) return -1;
    return std::max(0, runnable - own);
}

int CpuContention::usable_cpus() {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
    return 1;
}

CpuContention::CpuContention(int max_threads)
    : max_threads_(std::max(1, max_threads)), cpus_(usable_cpus()), threads_(max_threads_) {}

int CpuContention::threads_now() {
    if (max_threads_ == 1) return 1;
    const auto now = std::chrono::steady_clock::now();
    if (now < next_sample_) return threads_;
    next_sample_ = now + kSamplePeriod;
    const int others = others_runnable();
    if (others < 0) return threads_;
    others_ += kNewSampleWeight * (others - others_);
    const int free_cpus = cpus_ - int(std::lround(others_));
    threads_ = std::clamp(free_cpus, 1, max_threads_);
    return threads_;
}

} // namespace chatterbox
