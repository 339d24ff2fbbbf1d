#pragma once
// What the CLI tells the user on stderr: a progress bar rewritten in place (only on a terminal and
// without -q) and one-line messages (without -q).

#include <chrono>
#include <string>

namespace cli {

class Progress {
  public:
    explicit Progress(bool quiet);
    ~Progress();

    // "label [#######-----]  58% detail", at most ~10 redraws a second.
    void update(const std::string &label, double fraction, const std::string &detail = "");
    void clear(); // erases the bar, so that a message can follow
    // A line of information (cleared bar first); nothing with -q.
    void note(const std::string &line);

  private:
    bool quiet_;
    bool bar_; // stderr is a terminal and not quiet
    bool shown_ = false;
    std::chrono::steady_clock::time_point last_draw_{};
};

// "1.2 GB", "350.0 MB", "12.0 kB".
std::string human_bytes(double bytes);

} // namespace cli
