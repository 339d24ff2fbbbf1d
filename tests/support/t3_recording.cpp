#include "support/t3_recording.h"

#include "core/npy.h"

namespace chatterbox::test {

std::vector<int32_t> read_tokens(const std::string &npy_path) {
    std::vector<int32_t> out;
    for (int64_t v : read_npy(npy_path).i64()) out.push_back(int32_t(v));
    return out;
}

T3Recording record_generation(t3::T3Session &session, const t3::CondEmbeddings &cond,
                              const std::vector<int32_t> &text_tokens, const t3::SamplingParams &params,
                              const std::vector<int32_t> &forced) {
    T3Recording rec;
    t3::GenerationHooks hooks;
    hooks.forced_tokens = forced;
    hooks.on_step = [&](const t3::StepRecord &s) {
        rec.append(s);
        return true;
    };
    rec.result = t3::generate(session, cond, text_tokens, params, hooks);
    return rec;
}

} // namespace chatterbox::test
