#include "stages.h"

namespace chatterbox::golden {

const std::vector<Stage> &all_stages() {
    static const std::vector<Stage> stages = [] {
        std::vector<Stage> s;
        add_voice_stages(s);
        add_t3_stages(s);
        add_s3gen_flow_stages(s);
        add_hift_stages(s);
        return s;
    }();
    return stages;
}

bool is_reference_only(const std::string &array_name) {
    return array_name == "flow_noise" || array_name == "hift_phase_vec" || array_name == "hift_sine_noise" ||
           array_name == "t3_tf_tokens" || array_name == "t3_greedy_margin";
}

} // namespace chatterbox::golden
