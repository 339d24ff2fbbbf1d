#include "models/chatterbox/variant.h"

#include "core/error.h"

namespace chatterbox {

namespace {
constexpr Variant kVariants[] = {Variant::english, Variant::multilingual, Variant::turbo, Variant::nano};
} // namespace

const char *variant_name(Variant variant) {
    switch (variant) {
    case Variant::english:
        return "english";
    case Variant::multilingual:
        return "multilingual";
    case Variant::turbo:
        return "turbo";
    case Variant::nano:
        return "nano";
    }
    fail("unknown variant ", int(variant));
}

Variant parse_variant(const std::string &name) {
    std::string known;
    for (Variant v : kVariants) {
        if (name == variant_name(v)) return v;
        known += concat(known.empty() ? "" : ", ", variant_name(v));
    }
    fail("unknown Chatterbox variant \"", name, "\" (known: ", known, ")");
}

} // namespace chatterbox
