#pragma once
// The Chatterbox model family (spec variants.md), named once: metadata "chatterbox.variant".

#include <ostream>
#include <string>

namespace chatterbox {

enum class Variant { english, multilingual, turbo, nano };

// "english", "multilingual", "turbo", "nano".
const char *variant_name(Variant variant);
// Throws Error listing the known names for any other text.
Variant parse_variant(const std::string &name);

inline std::ostream &operator<<(std::ostream &out, Variant variant) { return out << variant_name(variant); }

} // namespace chatterbox
