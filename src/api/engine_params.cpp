#include "api/engine_params.h"

#include "core/error.h"

#include <stdexcept>
#include <string>

namespace chatterbox::c_api {

namespace {

struct EngineField {
    const char *name;
    const char *chatterbox_engine_params::*text;
    int chatterbox_engine_params::*number;
};
using P = chatterbox_engine_params;
constexpr EngineField kEngineFields[] = {
    {"model", &P::model_path, nullptr},
    {"backend", &P::backend, nullptr},
    {"threads", nullptr, &P::threads},
    {"t3_model", &P::t3_model, nullptr},
    {"batch", nullptr, &P::batch},
    {"flow_batch", nullptr, &P::flow_batch},
    {"vocoder_batch", nullptr, &P::vocoder_batch},
    {"batch_threads", nullptr, &P::batch_threads},
    {"voice_prefixes", nullptr, &P::voice_prefixes},
    {"kv_cache", &P::kv_cache, nullptr},
};

const EngineField &engine_field(const EngineSetting &setting) {
    for (const EngineField &field : kEngineFields)
        if (std::string(field.name) == setting.name) return field;
    throw std::logic_error(concat("engine setting ", setting.name, " has no field in chatterbox_engine_params"));
}

} // namespace

EngineSettings engine_settings(const chatterbox_engine_params &params) {
    EngineSettings settings;
    for (const EngineSetting &setting : engine_settings_table()) {
        const EngineField &field = engine_field(setting);
        if (field.number)
            setting.set(settings, std::to_string(params.*field.number));
        else if (const char *text = params.*field.text; text && *text)
            setting.set(settings, text);
    }
    return settings;
}

void set_engine_param(chatterbox_engine_params &params, const EngineSetting &setting, const char *value) {
    EngineSettings checked;
    setting.set(checked, value);
    const EngineField &field = engine_field(setting);
    if (field.number)
        params.*field.number = *setting.number(checked);
    else
        params.*field.text = value;
}

} // namespace chatterbox::c_api
