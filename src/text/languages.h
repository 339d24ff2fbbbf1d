#pragma once
// The languages of Chatterbox Multilingual (mtl_tts.py SUPPORTED_LANGUAGES), named once: the CLI's
// --help, the C API, the server and the text front end all read this table.

#include <string>
#include <string_view>
#include <vector>

namespace chatterbox::text {

struct Language {
    const char *code; // ISO 639-1, lower case: the model's "[code]" tag token
    const char *name; // English name
};

// The 23 supported languages, in code order.
const std::vector<Language> &supported_languages();

// The language with this code, case-insensitive as mtl_tts.py lowers it; throws Error listing every
// supported code for any other text (the empty one included).
const Language &find_language(std::string_view code);

// "ar (Arabic), da (Danish), ...": for help texts and error messages.
std::string language_list();

} // namespace chatterbox::text
