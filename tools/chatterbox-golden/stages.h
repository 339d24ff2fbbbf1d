#pragma once
// The stages chatterbox-golden knows, in pipeline order. Each component adds its stages in a
// stages_<component>.cpp file and one line in stages.cpp.

#include "golden_run.h"

namespace chatterbox::golden {

const std::vector<Stage> &all_stages();

// Arrays of the golden set that the engine never produces: random draws the official run recorded
// (inputs to the engine) and diagnostics of the reference run itself.
bool is_reference_only(const std::string &array_name);

void add_voice_stages(std::vector<Stage> &stages);
void add_t3_stages(std::vector<Stage> &stages);
void add_s3gen_flow_stages(std::vector<Stage> &stages);
void add_hift_stages(std::vector<Stage> &stages);

} // namespace chatterbox::golden
