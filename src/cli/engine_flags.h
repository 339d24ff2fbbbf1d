#pragma once
// The engine's settings (models/chatterbox/engine_settings.h) as command-line flags of a CLI11
// program: each row of the table becomes its flag, with its value name, accepted values, meaning and
// default in --help, checked as the table says. chatterbox, chatterbox-server and chatterbox-bench all
// take their engine flags from here.

#include "models/chatterbox/engine_settings.h"

#include <CLI/CLI.hpp>

namespace chatterbox::cli_flags {

enum class EngineFlags {
    all,             // every setting (a server)
    one_request,     // without the shared services (batches, kept voice prefixes): a program that runs one request
    shared_services, // only the shared services (a bench that loads the model its own way)
};

// Adds the flags of `which` settings to app; a parsed value goes into settings, whose current values
// are the defaults --help shows. `except` names settings the program takes in its own way.
void add_engine_flags(CLI::App &app, EngineSettings &settings, EngineFlags which = EngineFlags::all,
                      std::initializer_list<std::string_view> except = {});

} // namespace chatterbox::cli_flags
