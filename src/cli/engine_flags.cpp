#include "cli/engine_flags.h"

#include "core/error.h"

#include <algorithm>

namespace chatterbox::cli_flags {

namespace {

bool wanted(const EngineSetting &setting, EngineFlags which) {
    switch (which) {
    case EngineFlags::all:
        return true;
    case EngineFlags::one_request:
        return !setting.shared_services;
    case EngineFlags::shared_services:
        return setting.shared_services;
    }
    return false;
}

} // namespace

void add_engine_flags(CLI::App &app, EngineSettings &settings, EngineFlags which,
                      std::initializer_list<std::string_view> except) {
    for (const EngineSetting &setting : engine_settings_table()) {
        if (!wanted(setting, which) || std::find(except.begin(), except.end(), setting.name) != except.end()) continue;
        const std::string names = setting.short_option ? concat("-", setting.short_option, ",--", setting.option)
                                                       : concat("--", setting.option);
        // The table's check, said as the CLI's other checks say it: "--batch: must be in [0, 1024], got -1".
        const CLI::Validator by_table(
            [&setting](std::string &value) -> std::string {
                EngineSettings scratch;
                try {
                    setting.set(scratch, value);
                } catch (const InvalidArgument &) {
                    return concat(setting.number ? "must be a whole number in " : "must be one of ",
                                  setting.accepted_text(), ", got ", value);
                }
                return "";
            },
            setting.accepted_text());
        app.add_option_function<std::string>(
               names, [&settings, &setting](const std::string &value) { setting.set(settings, value); },
               setting.meaning)
            ->type_name(setting.value_name)
            ->check(by_table)
            ->default_str(setting.get(settings));
    }
}

} // namespace chatterbox::cli_flags
