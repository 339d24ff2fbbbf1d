#pragma once
// The stages chatterbox-golden knows, in pipeline order. Each component adds its stages in a
// stages_<component>.cpp file and one line in stages.cpp.

#include "golden_run.h"

namespace chatterbox::golden {

const std::vector<Stage> &all_stages();

// Random draws the official run recorded; they are inputs to the engine, never outputs.
bool is_recorded_input(const std::string &array_name);

} // namespace chatterbox::golden
