#include "models/chatterbox/variant_spec.h"

#include "core/error.h"

namespace chatterbox {

const std::vector<const VariantSpec *> &variant_specs() {
    static const std::vector<const VariantSpec *> specs = {&english_variant(), &multilingual_variant(),
                                                           &turbo_variant(), &nano_variant()};
    return specs;
}

const VariantSpec &variant_spec(Variant variant) {
    for (const VariantSpec *spec : variant_specs())
        if (spec->variant == variant) return *spec;
    fail("no record for the ", variant_name(variant), " variant (variant_spec.cpp)");
}

} // namespace chatterbox
