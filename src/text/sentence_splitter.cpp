#include "text/sentence_splitter.h"

#include "core/error.h"
#include "text/unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace chatterbox::text {

namespace {

// Full stops of scripts written without spaces between sentences (CJK, full-width and half-width
// forms): they end a sentence whatever follows.
bool is_spaceless_terminal(char32_t c) {
    return c == U'\u3002' || c == U'\uFF01' || c == U'\uFF1F' || c == U'\uFF0E' || c == U'\uFF61';
}

// Sentence enders: a run of them ends a sentence when whitespace or the end of the text follows
// (or, for the spaceless ones, anything). Besides . ! ? and the ellipsis: the Devanagari danda and
// double danda (Hindi), the Arabic question mark and full stop, the Greek question mark (U+037E; the
// ASCII ';' Greek text often uses instead stays a clause mark).
bool is_terminal(char32_t c) {
    return c == U'.' || c == U'!' || c == U'?' || c == U'\u2026' || c == U'\u0964' || c == U'\u0965' ||
           c == U'\u061F' || c == U'\u06D4' || c == U'\u037E' || is_spaceless_terminal(c);
}

// Closing quotes and brackets that belong to the sentence before them: He said "Go." She went.
// 」』）】: the CJK ones.
bool is_closing(char32_t c) {
    return c == U'"' || c == U'\'' || c == U')' || c == U']' || c == U'}' || c == U'\u201D' || c == U'\u2019' ||
           c == U'\u00BB' || c == U'\u300D' || c == U'\u300F' || c == U'\uFF09' || c == U'\u3011';
}

bool is_opening(char32_t c) {
    return c == U'"' || c == U'\'' || c == U'(' || c == U'[' || c == U'{' || c == U'\u201C' || c == U'\u2018' ||
           c == U'\u00AB' || c == U'\u300C' || c == U'\u300E' || c == U'\uFF08' || c == U'\u3010';
}

// Abbreviations that usually precede a name or number, so the period after them is no sentence end.
constexpr std::array<std::string_view, 24> kAbbreviations = {
    "mr",  "mrs", "ms", "dr",  "prof", "st", "mt",  "vs",  "no",  "nos", "fig",    "vol",
    "e.g", "i.e", "cf", "gen", "capt", "lt", "col", "sgt", "rev", "hon", "approx", "ca"};

struct Decoded {
    std::vector<char32_t> chars;
    std::vector<size_t> offsets; // byte offset of every char in the collapsed text, plus its size at the end
    std::string text;            // trimmed, whitespace runs collapsed to one space
};

Decoded collapse_whitespace(std::string_view input) {
    validate_utf8(input, "text");
    Decoded d;
    bool pending_space = false;
    for (size_t at = 0; at < input.size();) {
        const CodePoint cp = decode_utf8_at(input, at, "text");
        at += cp.size;
        if (is_python_space(cp.value)) {
            pending_space = !d.chars.empty();
            continue;
        }
        if (pending_space) {
            d.offsets.push_back(d.text.size());
            d.chars.push_back(U' ');
            d.text.push_back(' ');
            pending_space = false;
        }
        d.offsets.push_back(d.text.size());
        d.chars.push_back(cp.value);
        append_utf8(d.text, cp.value);
    }
    d.offsets.push_back(d.text.size());
    return d;
}

bool is_lower(char32_t c) { return utf8proc_islower(static_cast<utf8proc_int32_t>(c)) != 0; }
bool is_upper(char32_t c) { return utf8proc_isupper(static_cast<utf8proc_int32_t>(c)) != 0; }

// The word that ends just before chars[end] (back to a space or the start, opening quotes dropped),
// lower-cased when ASCII.
std::string word_before(const Decoded &d, size_t end) {
    size_t begin = end;
    while (begin > 0 && d.chars[begin - 1] != U' ') --begin;
    while (begin < end && is_opening(d.chars[begin])) ++begin;
    std::string word;
    for (size_t i = begin; i < end; ++i) {
        if (d.chars[i] >= 0x80) return d.text.substr(d.offsets[begin], d.offsets[end] - d.offsets[begin]);
        word.push_back(char(std::tolower(int(d.chars[i]))));
    }
    return word;
}

// Whether the terminal run chars[run_begin, run_end), followed by closers up to `after` and then a
// space at chars[after], ends a sentence.
bool ends_sentence(const Decoded &d, size_t run_begin, size_t run_end, size_t after) {
    if (after == d.chars.size()) return true;
    if (d.chars[after] != U' ') return is_spaceless_terminal(d.chars[run_end - 1]); // 3.14, e.g.x, "a.b"
    // A lower-case word after it continues the sentence: "e.g. this", "wait... no", "Why?" she asked.
    if (is_lower(d.chars[after + 1])) return false;
    if (run_end - run_begin == 1 && d.chars[run_begin] == U'.') {
        const std::string word = word_before(d, run_begin);
        if (std::find(kAbbreviations.begin(), kAbbreviations.end(), word) != kAbbreviations.end()) return false;
        // An initial: "J. R. R. Tolkien".
        if (run_begin >= 1 && is_upper(d.chars[run_begin - 1]) && (run_begin == 1 || d.chars[run_begin - 2] == U' '))
            return false;
    }
    return true;
}

// [begin, end) char ranges of the sentences.
std::vector<std::pair<size_t, size_t>> sentence_ranges(const Decoded &d) {
    std::vector<std::pair<size_t, size_t>> ranges;
    const size_t n = d.chars.size();
    size_t start = 0;
    for (size_t i = 0; i < n;) {
        if (!is_terminal(d.chars[i])) {
            ++i;
            continue;
        }
        size_t run_end = i;
        while (run_end < n && is_terminal(d.chars[run_end])) ++run_end;
        size_t after = run_end;
        while (after < n && is_closing(d.chars[after])) ++after;
        if (ends_sentence(d, i, run_end, after)) {
            ranges.emplace_back(start, after);
            start = after < n && d.chars[after] == U' ' ? after + 1 : after; // skip the space, if any
        }
        i = after;
    }
    if (start < n) ranges.emplace_back(start, n);
    return ranges;
}

enum class Level { clause, word, character };

// Char positions inside [begin, end) after which a piece may end at this level (exclusive ends of
// units); the last is always `end`.
std::vector<size_t> unit_ends(const Decoded &d, size_t begin, size_t end, Level level) {
    std::vector<size_t> ends;
    for (size_t i = begin; i + 1 < end; ++i) {
        const char32_t c = d.chars[i];
        const char32_t next = d.chars[i + 1];
        switch (level) {
        case Level::clause:
            // After , ; : (and their closers) when a space follows; before a dash set off by spaces.
            if ((c == U',' || c == U';' || c == U':' || c == U'\uFF0C' || c == U'\u3001') && next == U' ')
                ends.push_back(i + 1);
            else if (c == U' ' && (next == U'-' || next == U'\u2014' || next == U'\u2013') && i > begin)
                ends.push_back(i);
            break;
        case Level::word:
            if (next == U' ') ends.push_back(i + 1);
            break;
        case Level::character:
            ends.push_back(i + 1);
            break;
        }
    }
    ends.push_back(end);
    return ends;
}

class Splitter {
  public:
    Splitter(const Decoded &d, const SplitOptions &options) : d_(d), options_(options) {}

    void split_sentence(size_t begin, size_t end, std::vector<TextPiece> &out) {
        const size_t before = out.size();
        if (fits(begin, end))
            emit(begin, end, Boundary::sentence, out);
        else
            pack(begin, end, Level::clause, out);
        if (out.size() > before) out.back().after = Boundary::sentence;
    }

  private:
    static Boundary boundary_of(Level level) { return level == Level::clause ? Boundary::clause : Boundary::word; }

    // Trims spaces from a char range.
    std::pair<size_t, size_t> trimmed(size_t begin, size_t end) const {
        while (begin < end && d_.chars[begin] == U' ') ++begin;
        while (end > begin && d_.chars[end - 1] == U' ') --end;
        return {begin, end};
    }

    std::string_view view(size_t begin, size_t end) const {
        const auto [b, e] = trimmed(begin, end);
        return std::string_view(d_.text).substr(d_.offsets[b], d_.offsets[e] - d_.offsets[b]);
    }

    size_t measure(std::string_view s) const {
        if (options_.measure) return options_.measure(s);
        size_t n = 0;
        for (unsigned char c : s) n += (c & 0xC0) != 0x80;
        return n;
    }

    bool fits(size_t begin, size_t end) const { return measure(view(begin, end)) <= options_.max_length; }

    void emit(size_t begin, size_t end, Boundary after, std::vector<TextPiece> &out) const {
        const std::string_view piece = view(begin, end);
        if (!piece.empty()) out.push_back({std::string(piece), after});
    }

    // Greedy: the longest run of units from `begin` that fits, again and again. A single unit that
    // does not fit goes one level down (a single character is taken as it is).
    void pack(size_t begin, size_t end, Level level, std::vector<TextPiece> &out) {
        const std::vector<size_t> ends = unit_ends(d_, begin, end, level);
        size_t first = 0; // index of the first unit not yet emitted
        while (first < ends.size()) {
            const size_t from = first == 0 ? begin : ends[first - 1];
            const size_t count = longest_fit(from, ends, first);
            const size_t to = ends[first + count - 1];
            if (count == 1 && level != Level::character && !fits(from, to))
                pack(trimmed(from, to).first, trimmed(from, to).second, Level(int(level) + 1), out);
            else
                emit(from, to, boundary_of(level), out);
            first += count;
        }
    }

    // The largest count >= 1 of units starting at ends[first] whose text fits (at least 1), found by
    // galloping then bisection so a long text is measured O(piece length · log) times, not O(n²).
    size_t longest_fit(size_t from, const std::vector<size_t> &ends, size_t first) const {
        const size_t available = ends.size() - first;
        auto ok = [&](size_t count) { return fits(from, ends[first + count - 1]); };
        size_t good = 1;
        size_t step = 1;
        while (good + step <= available && ok(good + step)) {
            good += step;
            step *= 2;
        }
        size_t bad = std::min(good + step, available + 1); // first count known not to fit (or past the end)
        while (bad - good > 1) {
            const size_t mid = good + (bad - good) / 2;
            if (ok(mid))
                good = mid;
            else
                bad = mid;
        }
        return good;
    }

    const Decoded &d_;
    const SplitOptions &options_;
};

} // namespace

std::vector<std::string> split_sentences(std::string_view text) {
    const Decoded d = collapse_whitespace(text);
    std::vector<std::string> sentences;
    for (const auto &[begin, end] : sentence_ranges(d)) {
        std::string s = d.text.substr(d.offsets[begin], d.offsets[end] - d.offsets[begin]);
        while (!s.empty() && s.back() == ' ') s.pop_back();
        if (!s.empty()) sentences.push_back(std::move(s));
    }
    return sentences;
}

std::vector<TextPiece> split_text(std::string_view text, const SplitOptions &options) {
    if (options.max_length == 0) fail("split_text: max_length must be at least 1");
    const Decoded d = collapse_whitespace(text);
    Splitter splitter(d, options);
    std::vector<TextPiece> pieces;
    for (const auto &[begin, end] : sentence_ranges(d)) splitter.split_sentence(begin, end, pieces);
    if (!pieces.empty()) pieces.back().after = Boundary::end;
    return pieces;
}

} // namespace chatterbox::text
