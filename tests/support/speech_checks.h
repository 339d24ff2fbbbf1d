#pragma once
// Checks of a finished synthesis shared by the end-to-end tests of the variants.

#include "models/chatterbox/pipeline_session.h"

#include <cstdint>

namespace chatterbox::test {

// A bounded request: random weights rarely stop on their own.
SynthesisOptions bounded_request(int max_new_tokens, uint64_t seed);

// 24 kHz audio of finite samples, not silent, from at least one speech token and no more than the
// steps T3 took (trailing silence tokens are not counted).
void expect_speech(const SynthesisResult &result);

} // namespace chatterbox::test
