#include "text/cangjie.h"

#include "core/error.h"
#include "text/unicode.h"

#include <nlohmann/json.hpp>
#include <utf8proc.h>

#include <algorithm>

namespace chatterbox::text {

CangjieTable CangjieTable::from_json(std::string_view json_text, const std::string &source) {
    nlohmann::json root;
    try {
        root = nlohmann::json::parse(json_text);
    } catch (const nlohmann::json::exception &e) {
        fail(source, ": not JSON: ", e.what());
    }
    if (!root.is_array()) fail(source, ": expected a JSON array of \"glyph\\tcode\" strings");
    CangjieTable table;
    for (size_t i = 0; i < root.size(); ++i) {
        if (!root[i].is_string()) fail(source, ": entry ", i, " is not a string");
        const std::string entry = root[i].get<std::string>();
        const size_t tab = entry.find('\t');
        if (tab == std::string::npos || tab == 0)
            fail(source, ": entry ", i, " \"", entry, "\" is not \"glyph\\tcode\"");
        const size_t end = entry.find('\t', tab + 1);
        const std::string glyph = entry.substr(0, tab);
        const std::string code = entry.substr(tab + 1, end == std::string::npos ? std::string::npos : end - tab - 1);
        validate_utf8(glyph, source);
        validate_utf8(code, source);
        table.code_of_[glyph] = code;
        table.glyphs_of_[code].push_back(glyph);
    }
    return table;
}

std::optional<std::string> CangjieTable::encode(std::string_view glyph) const {
    const auto code = code_of_.find(std::string(glyph));
    if (code == code_of_.end()) return std::nullopt;
    const std::vector<std::string> &glyphs = glyphs_of_.at(code->second);
    const size_t index = size_t(std::find(glyphs.begin(), glyphs.end(), glyph) - glyphs.begin());
    return index > 0 ? code->second + std::to_string(index) : code->second;
}

std::string CangjieTable::convert(std::string_view text) const {
    std::string out;
    for (size_t offset = 0; offset < text.size();) {
        const CodePoint cp = decode_utf8_at(text, offset, "Chinese text");
        const std::string_view glyph = text.substr(offset, cp.size);
        offset += cp.size;
        const bool other_letter = utf8proc_category(static_cast<utf8proc_int32_t>(cp.value)) == UTF8PROC_CATEGORY_LO;
        const std::optional<std::string> code = other_letter ? encode(glyph) : std::nullopt;
        if (!code) {
            out.append(glyph);
            continue;
        }
        for (size_t i = 0; i < code->size();) {
            const CodePoint c = decode_utf8_at(*code, i, "Cangjie code");
            out += concat("[cj_", code->substr(i, c.size), "]");
            i += c.size;
        }
        out += "[cj_.]";
    }
    return out;
}

} // namespace chatterbox::text
