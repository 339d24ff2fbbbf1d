#pragma once
// Long text -> pieces short enough for one T3 pass. Sentences first; a sentence over the budget is
// cut at clause punctuation (, ; : dashes), then between words, and a single word longer than the
// budget is cut between characters. Pieces keep their punctuation and come back in text order;
// each says what followed it, so the caller can choose the pause.
//
//   split_text("Dr. Smith paid $3.14. Then he left...", {.max_length = 150, .measure = token_count})
//     -> {"Dr. Smith paid $3.14.", sentence}, {"Then he left...", end}

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace chatterbox::text {

// What ends a piece.
enum class Boundary { sentence, clause, word, end };

struct TextPiece {
    std::string text; // trimmed, inner whitespace collapsed to single spaces, never empty
    Boundary after = Boundary::end;
};

struct SplitOptions {
    // Largest measure of a piece. A sentence above it is cut into clauses, words, characters.
    size_t max_length = 300;
    // Length of a candidate piece; Unicode code points when empty. The pipeline counts text tokens.
    std::function<size_t(std::string_view)> measure;
};

// Throws Error for invalid UTF-8 or max_length 0. Empty or whitespace-only text gives no pieces.
std::vector<TextPiece> split_text(std::string_view text, const SplitOptions &options = {});

// Sentences only (no length budget): the first step of split_text.
std::vector<std::string> split_sentences(std::string_view text);

} // namespace chatterbox::text
