#pragma once
// Where each setting of the engine's table (models/chatterbox/engine_settings.h) lives in the C API's
// chatterbox_engine_params, both ways. A setting without a field here is an internal error, which the
// unit test of the table finds.

#include "chatterbox/chatterbox.h"
#include "models/chatterbox/engine_settings.h"

namespace chatterbox::c_api {

// The settings the struct holds, each checked as the table says (InvalidArgument naming the first
// bad one). A NULL or empty text field takes the table's default; model_path stays as given.
EngineSettings engine_settings(const chatterbox_engine_params &params);

// Sets the struct's field of `setting` from text, checked; a text field keeps the pointer `value`.
void set_engine_param(chatterbox_engine_params &params, const EngineSetting &setting, const char *value);

} // namespace chatterbox::c_api
