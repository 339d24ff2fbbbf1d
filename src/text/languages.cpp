#include "text/languages.h"

#include "core/error.h"

#include <cctype>

namespace chatterbox::text {

const std::vector<Language> &supported_languages() {
    static const std::vector<Language> languages = {
        {"ar", "Arabic"},    {"da", "Danish"},   {"de", "German"},     {"el", "Greek"},   {"en", "English"},
        {"es", "Spanish"},   {"fi", "Finnish"},  {"fr", "French"},     {"he", "Hebrew"},  {"hi", "Hindi"},
        {"it", "Italian"},   {"ja", "Japanese"}, {"ko", "Korean"},     {"ms", "Malay"},   {"nl", "Dutch"},
        {"no", "Norwegian"}, {"pl", "Polish"},   {"pt", "Portuguese"}, {"ru", "Russian"}, {"sv", "Swedish"},
        {"sw", "Swahili"},   {"tr", "Turkish"},  {"zh", "Chinese"},
    };
    return languages;
}

const Language &find_language(std::string_view code) {
    std::string lower(code);
    for (char &c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    for (const Language &language : supported_languages())
        if (lower == language.code) return language;
    std::string codes;
    for (const Language &language : supported_languages()) codes += concat(codes.empty() ? "" : ", ", language.code);
    if (code.empty()) fail("the multilingual model needs a language (one of ", codes, ")");
    fail("unsupported language \"", code, "\" (supported: ", codes, ")");
}

std::string language_list() {
    std::string out;
    for (const Language &language : supported_languages())
        out += concat(out.empty() ? "" : ", ", language.code, " (", language.name, ")");
    return out;
}

} // namespace chatterbox::text
