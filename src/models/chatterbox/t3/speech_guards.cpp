#include "models/chatterbox/t3/speech_guards.h"

#include "core/error.h"
#include "models/chatterbox/t3/hparams.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace chatterbox::t3 {

GuardHParams GuardHParams::with_aligned_heads() {
    GuardHParams g;
    g.aligned_heads = {{12, 15}, {13, 11}, {9, 2}}; // LLAMA_ALIGNED_HEADS
    return g;
}

const char *piece_end_name(PieceEnd end) {
    // In the order of PieceEnd.
    static constexpr const char *kNames[] = {"eos",          "max_tokens", "length_bound", "token_repeat",
                                             "silence_tail", "alignment",  "stopped"};
    const size_t i = size_t(end);
    return i < std::size(kNames) ? kNames[i] : "?";
}

int length_bound(const GuardHParams &guards, int text_tokens, float rate) {
    if (rate < 0) fail("speech tokens per text token is ", rate, ", expected >= 0 (0: the model's rate)");
    const double r = rate > 0 ? rate : guards.speech_per_text_token;
    return guards.length_floor + int(std::ceil(r * std::max(text_tokens, 0)));
}

// ---- alignment analyzer ----

AlignmentAnalyzer::AlignmentAnalyzer(int text_begin, int text_end, int32_t eos_token)
    : text_begin_(text_begin), text_end_(text_end), eos_token_(eos_token) {
    if (text_begin < 0 || text_end <= text_begin)
        fail("alignment analyzer: text positions [", text_begin, ", ", text_end, ") are empty");
}

bool AlignmentAnalyzer::step(const float *rows, int n_rows, int row_length, int32_t last_token,
                             std::vector<float> &logits) {
    const int S = text_length();
    if (n_rows < 1 || row_length < text_end_)
        fail("alignment analyzer: ", n_rows, " attention rows of ", row_length, " keys do not reach the text end ",
             text_end_);
    if (eos_token_ < 0 || size_t(eos_token_) >= logits.size())
        fail("alignment analyzer: EOS ", eos_token_, " is outside the ", logits.size(), " logits");
    // Crude monotonic mask: text columns past the step count are zeroed (A_chunk[:, step + 1:] = 0).
    const int visible = std::min(S, step_ + 1);
    const bool was_complete = complete_;
    std::vector<float> a(static_cast<size_t>(S));
    for (int r = 0; r < n_rows; ++r) {
        const float *text = rows + size_t(r) * size_t(row_length) + text_begin_;
        for (int c = 0; c < S; ++c) a[size_t(c)] = c < visible ? text[c] : 0.0f;
        if (was_complete) { // rows after completed_at: the latching step's own rows do not count
            for (int c = std::max(0, S - 3); c < S; ++c) tail_sums_[S - 1 - c] += a[size_t(c)];
            // max(A[row, :S-5]); for S <= 5 the slice is empty and adds nothing (torch would raise).
            if (S > 5) repeated_mass_ += *std::max_element(a.begin(), a.begin() + (S - 5));
        }
    }
    const int position = int(std::max_element(a.begin(), a.end()) - a.begin()); // last row; first index on ties
    frames_ += n_rows;

    discontinuity_ = !(-4 < position - text_position_ && position - text_position_ < 7);
    if (!discontinuity_) text_position_ = position;
    complete_ = complete_ || text_position_ >= S - 3;
    if (complete_ && completed_at_ < 0) completed_at_ = frames_;
    long_tail_ = complete_ && *std::max_element(tail_sums_, tail_sums_ + 3) >= 5;
    alignment_repetition_ = complete_ && repeated_mass_ > 5;

    last_tokens_.push_back(last_token);
    if (last_tokens_.size() > 8) last_tokens_.erase(last_tokens_.begin());
    token_repetition_ = last_tokens_.size() >= 3 && last_tokens_.end()[-1] == last_tokens_.end()[-2];

    if (position < S - 3 && S > 5) logits[size_t(eos_token_)] = kSuppressed;
    const bool force = long_tail_ || alignment_repetition_ || token_repetition_;
    if (force) {
        std::fill(logits.begin(), logits.end(), kSuppressed);
        logits[size_t(eos_token_)] = kForced;
    }
    ++step_;
    return force;
}

// ---- trailing silence ----

std::vector<int32_t> TailSilenceTrimmer::push(int32_t token) {
    if (token == silence_token_ && natural_pause_ >= 0) {
        ++held_;
        return {};
    }
    std::vector<int32_t> out(size_t(held_), silence_token_);
    out.push_back(token);
    held_ = 0;
    return out;
}

std::vector<int32_t> TailSilenceTrimmer::finish() {
    const int kept = std::min(held_, std::max(natural_pause_, 0));
    dropped_ += held_ - kept;
    held_ = 0;
    return std::vector<int32_t>(size_t(kept), silence_token_);
}

// ---- length bound and stop rules ----

SpeechGuards::SpeechGuards(const HParams &hp, int text_tokens, const GuardOptions &options, int max_new_tokens)
    : hp_(hp.guards), stops_(options.stops), step_limit_(max_new_tokens),
      covered_after_(int(std::ceil(double(hp.guards.covered_per_text_token) * std::max(text_tokens, 0)))) {
    if (options.length_bound) {
        const int bound = length_bound(hp_, text_tokens, options.speech_per_text_token);
        if (bound < step_limit_) {
            step_limit_ = bound;
            bound_by_text_ = true;
        }
    }
}

std::optional<PieceEnd> SpeechGuards::after_token(int32_t token, std::optional<bool> text_covered) {
    ++steps_;
    if (token == run_token_) {
        ++run_length_;
    } else {
        run_token_ = token;
        run_length_ = 1;
    }
    if (!stops_) return std::nullopt;
    if (run_length_ >= hp_.max_token_repeat) return PieceEnd::token_repeat;
    const bool covered = text_covered.value_or(steps_ >= covered_after_);
    if (token == hp_.silence_token && covered && run_length_ >= hp_.max_tail_silence) return PieceEnd::silence_tail;
    return std::nullopt;
}

} // namespace chatterbox::t3
