#include "core/cpu_contention.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#if defined(__linux__)
#include <dirent.h>
#include <sched.h>
#include <unistd.h>
#endif

namespace chatterbox {

namespace {

// The fields of a /proc/self/task/<tid>/stat after the parenthesised name (which may itself contain
// spaces and parentheses), starting with the state letter; empty when it cannot be read.
std::string task_fields(const std::string &tid) {
    FILE *f = std::fopen(("/proc/self/task/" + tid + "/stat").c_str(), "r");
    if (!f) return {};
    char line[512];
    const size_t n = std::fread(line, 1, sizeof line - 1, f);
    std::fclose(f);
    line[n] = '\0';
    const char *close = std::strrchr(line, ')');
    return close && close[1] == ' ' ? std::string(close + 2) : std::string();
}

// Calls visit(tid, fields) for each readable thread of this process; false where the list cannot be read.
template <class Visit> bool for_each_own_thread(Visit visit) {
#if defined(__linux__)
    DIR *tasks = opendir("/proc/self/task");
    if (!tasks) return false;
    while (const dirent *entry = readdir(tasks)) {
        if (entry->d_name[0] == '.') continue;
        const std::string fields = task_fields(entry->d_name);
        if (!fields.empty()) visit(std::string(entry->d_name), fields);
    }
    closedir(tasks);
    return true;
#else
    (void)visit;
    return false;
#endif
}

// CPU time (user + system, clock ticks) in a thread's stat fields (its fields 14 and 15), -1 where unreadable.
long long cpu_ticks(const std::string &fields) {
    long long user = 0, system = 0;
    return std::sscanf(fields.c_str(), "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld", &user, &system) == 2
               ? user + system
               : -1;
}

// Smoothing of the samples: a new one counts half.
constexpr double kNewSampleWeight = 0.5;

} // namespace

int CpuContention::own_runnable() {
    int runnable = 0;
    const bool read = for_each_own_thread([&](const std::string &, const std::string &fields) {
        if (fields[0] == 'R') ++runnable;
    });
    return read ? runnable : -1;
}

int CpuContention::busy_own_threads() {
#if defined(__linux__)
    const auto now = std::chrono::steady_clock::now();
    if (now < next_own_sample_) return busy_own_;
    // Before the first sample own_ticks_ is empty: no thread has a baseline, none counts.
    const double elapsed_ticks = std::chrono::duration<double>(now - last_own_sample_).count() * double(ticks_per_s_);
    next_own_sample_ = now + kOwnPeriod;
    last_own_sample_ = now;
    const std::string caller = std::to_string(gettid());
    std::map<std::string, long long> ticks;
    int busy = 0;
    for_each_own_thread([&](const std::string &tid, const std::string &fields) {
        const long long used = cpu_ticks(fields);
        if (tid == caller || used < 0) return;
        ticks[tid] = used;
        const auto before = own_ticks_.find(tid);
        if (before != own_ticks_.end() && double(used - before->second) >= 0.5 * elapsed_ticks) ++busy;
    });
    own_ticks_ = std::move(ticks);
    return busy_own_ = busy;
#else
    return 0;
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
    : max_threads_(std::max(1, max_threads)), cpus_(usable_cpus()), threads_(max_threads_) {
#if defined(__linux__)
    ticks_per_s_ = sysconf(_SC_CLK_TCK);
#endif
}

int CpuContention::threads_now() {
    if (max_threads_ == 1) return 1;
    const auto now = std::chrono::steady_clock::now();
    if (now < next_sample_) return threads_;
    next_sample_ = now + kSamplePeriod;
    const int others = others_runnable();
    if (others < 0) return threads_;
    others_ += kNewSampleWeight * (others - others_);
    // A CPU counts as taken from 0.75 on: two samples in a row, not one (0.5), take it.
    const int free_cpus = cpus_ - int(std::floor(others_ + 0.25)) - busy_own_threads();
    threads_ = std::clamp(free_cpus, 1, max_threads_);
    return threads_;
}

} // namespace chatterbox
