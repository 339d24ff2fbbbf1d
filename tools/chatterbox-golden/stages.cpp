#include "stages.h"
#include "stages_s3gen_flow.h"

namespace chatterbox::golden {

const std::vector<Stage> &all_stages() {
    static const std::vector<Stage> stages = [] {
        std::vector<Stage> s;
        s.push_back(s3gen_flow_stage());
        return s;
    }();
    return stages;
}

bool is_recorded_input(const std::string &array_name) {
    return array_name == "flow_noise" || array_name == "hift_phase_vec" || array_name == "hift_sine_noise" ||
           array_name == "t3_tf_tokens";
}

} // namespace chatterbox::golden
