#pragma once
// The Chinese step of the multilingual tokenizer (tokenizer.py ChineseCangjieConverter): every
// character of category Lo with a Cangjie code becomes one "[cj_<c>]" token per character of its code
// (plus the glyph's index among those sharing the code, when not 0), then "[cj_.]".
//
// The reference first segments the text with spacy_pkuseg and joins the words with spaces (so
// "[SPACE]" tokens fall between words); the tokenizer does so with jieba before this step
// (word_segmenter.h says what differs).

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace chatterbox::text {

// The file the reference reads from the model repository.
inline constexpr const char *kCangjieFile = "Cangjie5_TC.json";

class CangjieTable {
  public:
    // Cangjie5_TC.json: a JSON array of "glyph\tcode[\t...]" strings. `source` names it in errors.
    static CangjieTable from_json(std::string_view json_text, const std::string &source);

    // The code and index of one glyph (UTF-8 of one character), or nullopt without an entry.
    std::optional<std::string> encode(std::string_view glyph) const;
    // The converter over a whole text (valid UTF-8, else Error).
    std::string convert(std::string_view text) const;
    size_t size() const { return code_of_.size(); }

  private:
    std::unordered_map<std::string, std::string> code_of_;                // glyph -> code (the last entry wins)
    std::unordered_map<std::string, std::vector<std::string>> glyphs_of_; // code -> glyphs, in file order
};

} // namespace chatterbox::text
