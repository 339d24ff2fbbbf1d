#pragma once
// Input validation shared by the audio functions: a NaN or infinity would otherwise spread through
// every later stage as silent garbage.

#include "core/error.h"

#include <cmath>
#include <vector>

namespace chatterbox::audio {

inline void require_finite(const std::vector<float> &signal, const char *who) {
    for (size_t i = 0; i < signal.size(); ++i)
        if (!std::isfinite(signal[i])) fail(who, ": input sample ", i, " is not finite (", signal[i], ")");
}

} // namespace chatterbox::audio
