// The engine's settings table (models/chatterbox/engine_settings.h) and every front end that reads it:
// the engine's and runtime's options, the C API's struct and setter, the C++ wrapper's EngineParams and
// the command-line flags (src/cli/engine_flags.h). Each setting, set to a value other than its default
// through a front end, arrives as that value.

#include "api/engine_params.h"
#include "chatterbox/chatterbox.hpp"
#include "cli/engine_flags.h"
#include "core/error.h"
#include "models/chatterbox/engine_settings.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace chatterbox {
namespace {

// A value each setting accepts that is not its default.
std::string other_value(const EngineSetting &setting) {
    if (setting.number) return setting.default_value() == "3" ? "4" : "3";
    if (!setting.choices.empty())
        for (const std::string &choice : setting.choices)
            if (choice != setting.default_value() && choice != "cuda" && choice != "gpu" && choice != "q8_0")
                return choice;
    return std::string("/some/") + setting.name;
}

TEST(EngineSettings, EveryRowIsWellFormedAndAcceptsItsDefault) {
    std::set<std::string> names, options;
    for (const EngineSetting &setting : engine_settings_table()) {
        SCOPED_TRACE(setting.name);
        EXPECT_TRUE(names.insert(setting.name).second);
        EXPECT_TRUE(options.insert(setting.option).second);
        EXPECT_NE(setting.number == nullptr, setting.text == nullptr) << "exactly one accessor";
        EXPECT_TRUE(setting.meaning && *setting.meaning);
        EngineSettings settings;
        EXPECT_NO_THROW(setting.set(settings, setting.default_value()));
        EXPECT_EQ(find_engine_setting(setting.name), &setting);
    }
    EXPECT_EQ(find_engine_setting("no_such_setting"), nullptr);
    EXPECT_NO_THROW(EngineSettings{}.validate());
}

TEST(EngineSettings, EachSettingTakesAnotherValueAndRefusesBadOnesByName) {
    for (const EngineSetting &setting : engine_settings_table()) {
        SCOPED_TRACE(setting.name);
        EngineSettings settings;
        const std::string value = other_value(setting);
        ASSERT_NE(value, setting.default_value());
        setting.set(settings, value);
        EXPECT_EQ(setting.get(settings), value);
        const std::vector<std::string> bad = setting.number
                                                 ? std::vector<std::string>{"-1", "x", "", "2.5", "99999999999"}
                                             : !setting.choices.empty() ? std::vector<std::string>{"nonsense", ""}
                                                                        : std::vector<std::string>{};
        for (const std::string &b : bad) {
            try {
                setting.set(settings, b);
                ADD_FAILURE() << "accepted '" << b << "'";
            } catch (const InvalidArgument &e) {
                EXPECT_NE(std::string(e.what()).find(setting.name), std::string::npos) << e.what();
            }
        }
        EXPECT_EQ(setting.get(settings), value) << "a refused value leaves the setting as it was";
    }
}

TEST(EngineSettings, EveryFieldReachesTheEngineAndRuntimeOptions) {
    EngineSettings s;
    s.model = "/models/x.gguf";
    s.backend = "cpu";
    s.threads = 3;
    s.t3_model = "v3";
    s.batch = 5;
    s.flow_batch = 6;
    s.vocoder_batch = 7;
    s.batch_threads = 2;
    s.voice_prefixes = 9;
    s.kv_cache = "q8_0";
    const PipelineModelOptions engine = s.engine_options();
    EXPECT_EQ(engine.model_path, "/models/x.gguf");
    EXPECT_EQ(engine.backend.device, "cpu");
    EXPECT_EQ(engine.backend.threads, 3);
    EXPECT_EQ(engine.open.t3_model, "v3");
    const RuntimeOptions runtime = s.runtime_options();
    EXPECT_EQ(runtime.batch, 5);
    EXPECT_EQ(runtime.flow_batch, 6);
    EXPECT_EQ(runtime.vocoder_batch, 7);
    EXPECT_EQ(runtime.batch_threads, 2);
    EXPECT_EQ(runtime.voice_prefixes, 9);
    EXPECT_EQ(runtime.kv_cache, GGML_TYPE_Q8_0);
    // Ten settings, ten checks above: a new row must be added here too.
    EXPECT_EQ(engine_settings_table().size(), 10u);

    EXPECT_THROW(EngineSettings{}.engine_options(), InvalidArgument) << "no model path";
    EngineSettings gpu_q8;
    gpu_q8.backend = "cuda";
    gpu_q8.kv_cache = "q8_0";
    EXPECT_THROW(gpu_q8.validate(), InvalidArgument) << "q8_0 is for the CPU only";
    EngineSettings out_of_range;
    out_of_range.batch = -1; // set directly, around the table's setter
    EXPECT_THROW(out_of_range.validate(), InvalidArgument);
}

TEST(EngineSettings, TheCApiTakesEverySettingByNameAndReportsTheTable) {
    ASSERT_EQ(chatterbox_engine_setting_count(), engine_settings_table().size());
    EXPECT_EQ(chatterbox_engine_setting(chatterbox_engine_setting_count()), nullptr);
    chatterbox_engine_params params = chatterbox_engine_default_params();
    std::vector<std::string> values; // the C struct points at these
    values.reserve(engine_settings_table().size());
    for (size_t i = 0; i < engine_settings_table().size(); ++i) {
        const EngineSetting &setting = engine_settings_table()[i];
        SCOPED_TRACE(setting.name);
        const chatterbox_engine_setting_info &info = *chatterbox_engine_setting(i);
        EXPECT_STREQ(info.name, setting.name);
        EXPECT_STREQ(info.option, setting.option);
        EXPECT_EQ(info.default_value, setting.default_value());
        EXPECT_EQ(info.accepted, setting.accepted_text());
        EXPECT_EQ(info.is_number != 0, setting.number != nullptr);
        EXPECT_EQ(info.shared_services != 0, setting.shared_services);
        values.push_back(other_value(setting));
        ASSERT_EQ(chatterbox_engine_params_set(&params, setting.name, values.back().c_str()), CHATTERBOX_OK)
            << chatterbox_last_error();
    }
    const EngineSettings arrived = c_api::engine_settings(params);
    for (size_t i = 0; i < engine_settings_table().size(); ++i)
        EXPECT_EQ(engine_settings_table()[i].get(arrived), values[i]) << engine_settings_table()[i].name;

    EXPECT_EQ(chatterbox_engine_params_set(&params, "no_such_setting", "1"), CHATTERBOX_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(chatterbox_engine_params_set(&params, "batch", "-2"), CHATTERBOX_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(chatterbox_last_error()).find("batch"), std::string::npos) << chatterbox_last_error();
    EXPECT_EQ(chatterbox_engine_params_set(&params, "kv_cache", "q4"), CHATTERBOX_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(chatterbox_engine_params_set(nullptr, "batch", "1"), CHATTERBOX_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(chatterbox_engine_params_set(&params, "batch", nullptr), CHATTERBOX_ERROR_INVALID_ARGUMENT);

    // A struct filled by hand goes through the same checks at load, before any file is read.
    chatterbox_engine_params by_hand = chatterbox_engine_default_params();
    by_hand.model_path = "/no/such/model";
    by_hand.vocoder_batch = -1;
    chatterbox_engine *engine = nullptr;
    EXPECT_EQ(chatterbox_engine_load(&by_hand, &engine), CHATTERBOX_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(chatterbox_last_error()).find("vocoder_batch"), std::string::npos) << chatterbox_last_error();
    EXPECT_EQ(engine, nullptr);
}

TEST(EngineSettings, TheCppWrapperKeepsEverySettingAcrossCopies) {
    api::EngineParams params("/models/first.gguf");
    std::vector<std::string> values;
    for (const EngineSetting &setting : engine_settings_table()) {
        values.push_back(other_value(setting));
        params.set(setting.name, values.back());
    }
    EXPECT_THROW(params.set("batch", "many"), api::Exception);
    api::EngineParams copy("/elsewhere");
    copy = params;
    const api::EngineParams constructed(params);
    params.set("model", "/changed"); // the copies keep their own strings
    for (const api::EngineParams *p : std::vector<const api::EngineParams *>{&copy, &constructed}) {
        const EngineSettings arrived = c_api::engine_settings(p->get());
        for (size_t i = 0; i < engine_settings_table().size(); ++i)
            EXPECT_EQ(engine_settings_table()[i].get(arrived), values[i]) << engine_settings_table()[i].name;
    }
}

// The flags of `which` settings parsed from a command line that gives each another value.
EngineSettings parsed(cli_flags::EngineFlags which, std::set<std::string> &flags_seen) {
    EngineSettings settings;
    CLI::App app;
    cli_flags::add_engine_flags(app, settings, which);
    std::vector<std::string> args;
    for (const EngineSetting &setting : engine_settings_table())
        if (app.get_option_no_throw(std::string("--") + setting.option)) {
            flags_seen.insert(setting.name);
            args.push_back(std::string("--") + setting.option);
            args.push_back(other_value(setting));
        }
    std::vector<const char *> argv{"program"};
    for (const std::string &arg : args) argv.push_back(arg.c_str());
    app.parse(int(argv.size()), argv.data());
    return settings;
}

TEST(EngineSettings, TheCommandLineFlagsSetEverySettingTheyOffer) {
    std::set<std::string> all, one_request, shared;
    const EngineSettings from_all = parsed(cli_flags::EngineFlags::all, all);
    parsed(cli_flags::EngineFlags::one_request, one_request);
    parsed(cli_flags::EngineFlags::shared_services, shared);
    for (const EngineSetting &setting : engine_settings_table()) {
        SCOPED_TRACE(setting.name);
        EXPECT_EQ(all.count(setting.name), 1u);
        EXPECT_EQ(one_request.count(setting.name), setting.shared_services ? 0u : 1u);
        EXPECT_EQ(shared.count(setting.name), setting.shared_services ? 1u : 0u);
        EXPECT_EQ(setting.get(from_all), other_value(setting));
    }

    EngineSettings settings;
    CLI::App app;
    cli_flags::add_engine_flags(app, settings, cli_flags::EngineFlags::all, {"model"});
    EXPECT_EQ(app.get_option_no_throw("--model"), nullptr) << "a setting the program takes its own way";
    const char *bad[] = {"program", "--batch", "-3"};
    try {
        app.parse(3, bad);
        ADD_FAILURE() << "--batch -3 accepted";
    } catch (const CLI::ValidationError &e) {
        EXPECT_NE(std::string(e.what()).find("[0, 1024]"), std::string::npos) << e.what();
    }
    const char *shorts[] = {"program", "-t", "2"};
    app.parse(3, shorts);
    EXPECT_EQ(settings.threads, 2);
}

} // namespace
} // namespace chatterbox
