// The one table of synthesis parameters (models/chatterbox/synthesis_params.*) and the C API over
// it: defaults, ranges and checks agree, and the checks need no engine.

#include "chatterbox/chatterbox.h"
#include "core/error.h"
#include "models/chatterbox/synthesis_params.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

using namespace chatterbox;

namespace {

// A value just outside the parameter's range, below or above.
double below(const chatterbox_param_info &p) { return p.min_excluded ? p.min : p.min - (p.integer ? 1 : 1e-3); }
double above(const chatterbox_param_info &p) { return p.max + (p.integer ? 1 : 1e-3); }

} // namespace

TEST(SynthesisParams, TableIsComplete) {
    ASSERT_EQ(chatterbox_synthesis_param_count(), synthesis_parameters().size());
    EXPECT_EQ(chatterbox_synthesis_param_info(chatterbox_synthesis_param_count()), nullptr);
    std::set<std::string> names, options;
    for (size_t i = 0; i < chatterbox_synthesis_param_count(); ++i) {
        const chatterbox_param_info &p = *chatterbox_synthesis_param_info(i);
        EXPECT_TRUE(names.insert(p.name).second) << p.name;
        EXPECT_TRUE(options.insert(p.option).second) << p.option;
        EXPECT_GT(std::string(p.meaning).size(), 5u) << p.name;
        EXPECT_LT(p.min, p.max) << p.name;
        EXPECT_TRUE(synthesis_parameters()[i].accepts(p.default_value)) << p.name << " default " << p.default_value;
    }
    for (const char *expected :
         {"exaggeration", "cfg_weight", "temperature", "repetition_penalty", "min_p", "top_p", "max_new_tokens",
          "sentence_pause", "clause_pause", "split_text", "ignore_eos", "speed", "top_k"})
        EXPECT_TRUE(names.count(expected)) << expected;
}

TEST(SynthesisParams, CDefaultsAreTheTableDefaults) {
    chatterbox_synthesis_params p = chatterbox_synthesis_default_params();
    EXPECT_EQ(chatterbox_synthesis_params_validate(&p), CHATTERBOX_OK);
    const SynthesisParams defaults;
    EXPECT_FLOAT_EQ(p.exaggeration, defaults.exaggeration);
    EXPECT_FLOAT_EQ(p.cfg_weight, defaults.sampling.cfg_weight);
    EXPECT_FLOAT_EQ(p.temperature, defaults.sampling.temperature);
    EXPECT_FLOAT_EQ(p.repetition_penalty, defaults.sampling.repetition_penalty);
    EXPECT_FLOAT_EQ(p.min_p, defaults.sampling.min_p);
    EXPECT_FLOAT_EQ(p.top_p, defaults.sampling.top_p);
    EXPECT_EQ(p.max_new_tokens, defaults.sampling.max_new_tokens);
    EXPECT_FLOAT_EQ(p.sentence_pause, defaults.sentence_pause);
    EXPECT_FLOAT_EQ(p.clause_pause, defaults.clause_pause);
    EXPECT_EQ(p.seed, defaults.sampling.seed);
    EXPECT_EQ(p.split_text, 1);
    EXPECT_EQ(p.ignore_eos, 0);
    EXPECT_EQ(p.speed, 1.0f);
    EXPECT_EQ(defaults.speed, 1.0f);
    EXPECT_EQ(p.stream, 0);
    EXPECT_EQ(p.cancel, nullptr);
    EXPECT_EQ(p.top_k, 0); // the variant's own (Turbo 1000)
    EXPECT_EQ(p.top_k, defaults.sampling.top_k);
}

// top_k, appended last to the C struct: a whole number from the table into t3::SamplingParams.
TEST(SynthesisParams, TopKReachesTheSampler) {
    chatterbox_synthesis_params p = chatterbox_synthesis_default_params();
    ASSERT_EQ(chatterbox_synthesis_params_set(&p, "top_k", 50), CHATTERBOX_OK);
    EXPECT_EQ(p.top_k, 50);
    EXPECT_EQ(chatterbox_synthesis_params_set(&p, "top_k", 2.5), CHATTERBOX_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(chatterbox_synthesis_params_set(&p, "top_k", -1), CHATTERBOX_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(test::contains(chatterbox_last_error(), "top_k is -1, expected [0, 1e+06]"));
    EXPECT_EQ(std::string(find_synthesis_parameter("top_k")->option), "top-k");
    SynthesisParams params;
    find_synthesis_parameter("top_k")->set(params, p.top_k);
    EXPECT_EQ(params.sampling.top_k, 50);
    p.top_k = -3; // written straight into the struct
    EXPECT_EQ(chatterbox_synthesis_params_validate(&p), CHATTERBOX_ERROR_INVALID_ARGUMENT);
}

TEST(SynthesisParams, SetAndValidateAgreeOnEveryBound) {
    for (size_t i = 0; i < chatterbox_synthesis_param_count(); ++i) {
        const chatterbox_param_info &info = *chatterbox_synthesis_param_info(i);
        chatterbox_synthesis_params p = chatterbox_synthesis_default_params();
        EXPECT_EQ(chatterbox_synthesis_params_set(&p, info.name, info.max), CHATTERBOX_OK) << info.name;
        EXPECT_EQ(chatterbox_synthesis_params_validate(&p), CHATTERBOX_OK) << info.name;
        if (!info.min_excluded) {
            EXPECT_EQ(chatterbox_synthesis_params_set(&p, info.name, info.min), CHATTERBOX_OK) << info.name;
            EXPECT_EQ(chatterbox_synthesis_params_validate(&p), CHATTERBOX_OK) << info.name;
        }
        for (const double bad : {below(info), above(info), double(NAN)}) {
            chatterbox_synthesis_params q = chatterbox_synthesis_default_params();
            EXPECT_EQ(chatterbox_synthesis_params_set(&q, info.name, bad), CHATTERBOX_ERROR_INVALID_ARGUMENT)
                << info.name << " = " << bad;
            EXPECT_TRUE(test::contains(chatterbox_last_error(), info.name));
            // The same value written straight into the struct is caught by validate, naming the field
            // (a flag's bool cannot hold it).
            const SynthesisParameter &parameter = synthesis_parameters()[i];
            if (parameter.flag) continue;
            SynthesisParams direct;
            parameter.set(direct, bad);
            try {
                validate(direct);
                ADD_FAILURE() << info.name << " = " << bad << " passed validate";
            } catch (const InvalidArgument &e) {
                EXPECT_TRUE(test::contains(e.what(), info.name));
                EXPECT_TRUE(test::contains(e.what(), parameter.range_text()));
            }
        }
    }
    chatterbox_synthesis_params p = chatterbox_synthesis_default_params();
    p.temperature = 0;
    EXPECT_EQ(chatterbox_synthesis_params_validate(&p), CHATTERBOX_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(test::contains(chatterbox_last_error(), "temperature is 0, expected (0, 5]"));
}

TEST(SynthesisParams, WholeNumbersAndNames) {
    chatterbox_synthesis_params p = chatterbox_synthesis_default_params();
    EXPECT_EQ(chatterbox_synthesis_params_set(&p, "max_new_tokens", 12.5), CHATTERBOX_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(chatterbox_synthesis_params_set(&p, "max_new_tokens", 12), CHATTERBOX_OK);
    EXPECT_EQ(p.max_new_tokens, 12);
    EXPECT_EQ(chatterbox_synthesis_params_set(&p, "pitch", 1), CHATTERBOX_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(test::contains(chatterbox_last_error(), "pitch"));
    // OpenAI's range for speed, into the field appended last to the C struct.
    EXPECT_EQ(chatterbox_synthesis_params_set(&p, "speed", 0.25), CHATTERBOX_OK);
    EXPECT_EQ(p.speed, 0.25f);
    EXPECT_EQ(chatterbox_synthesis_params_set(&p, "speed", 4.5), CHATTERBOX_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(test::contains(chatterbox_last_error(), "speed is 4.5, expected [0.25, 4]"));
    EXPECT_EQ(chatterbox_synthesis_params_set(nullptr, "top_p", 1), CHATTERBOX_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(chatterbox_synthesis_params_validate(nullptr), CHATTERBOX_ERROR_INVALID_ARGUMENT);
    // A huge C int must not wrap into range on the way in.
    p.max_new_tokens = 1 << 30;
    EXPECT_EQ(chatterbox_synthesis_params_validate(&p), CHATTERBOX_ERROR_INVALID_ARGUMENT);
}

TEST(SynthesisParams, FlagsAreZeroOrOneAndReachTheEngine) {
    std::set<std::string> flags;
    for (size_t i = 0; i < chatterbox_synthesis_param_count(); ++i) {
        const chatterbox_param_info &info = *chatterbox_synthesis_param_info(i);
        if (!info.is_flag) continue;
        flags.insert(info.name);
        EXPECT_TRUE(info.integer && info.min == 0 && info.max == 1) << info.name;
        chatterbox_synthesis_params p = chatterbox_synthesis_default_params();
        EXPECT_EQ(chatterbox_synthesis_params_set(&p, info.name, 0.5), CHATTERBOX_ERROR_INVALID_ARGUMENT) << info.name;
    }
    EXPECT_EQ(flags,
              (std::set<std::string>{"split_text", "ignore_eos", "length_bound", "stop_guards", "alignment_guard"}));
    EXPECT_EQ(std::string(find_synthesis_parameter("split_text")->option), "no-split");
    EXPECT_EQ(std::string(find_synthesis_parameter("ignore_eos")->option), "ignore-eos");

    // Through the C setter into the struct, and from the table into the engine's parameters.
    chatterbox_synthesis_params p = chatterbox_synthesis_default_params();
    ASSERT_EQ(chatterbox_synthesis_params_set(&p, "split_text", 0), CHATTERBOX_OK);
    ASSERT_EQ(chatterbox_synthesis_params_set(&p, "ignore_eos", 1), CHATTERBOX_OK);
    EXPECT_EQ(p.split_text, 0);
    EXPECT_EQ(p.ignore_eos, 1);
    SynthesisParams params;
    find_synthesis_parameter("split_text")->set(params, p.split_text);
    find_synthesis_parameter("ignore_eos")->set(params, p.ignore_eos);
    EXPECT_FALSE(params.split_text);
    EXPECT_TRUE(params.sampling.ignore_eos);
    p.ignore_eos = 2;
    EXPECT_EQ(chatterbox_synthesis_params_validate(&p), CHATTERBOX_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(test::contains(chatterbox_last_error(), "ignore_eos is 2, expected [0, 1]"));
}

// The speech guards: the length bound and stop rules on by default, the analyzer off, each reaching
// t3::SamplingParams::guards.
TEST(SynthesisParams, SpeechGuardsDefaultsAndFields) {
    const chatterbox_synthesis_params d = chatterbox_synthesis_default_params();
    EXPECT_EQ(d.length_bound, 1);
    EXPECT_EQ(d.stop_guards, 1);
    EXPECT_EQ(d.alignment_guard, 0);
    EXPECT_EQ(d.speech_per_text_token, 0.0f);
    EXPECT_EQ(std::string(find_synthesis_parameter("length_bound")->option), "no-length-bound");
    EXPECT_EQ(std::string(find_synthesis_parameter("alignment_guard")->option), "guard-alignment");
    SynthesisParams params;
    find_synthesis_parameter("length_bound")->set(params, 0);
    find_synthesis_parameter("stop_guards")->set(params, 0);
    find_synthesis_parameter("alignment_guard")->set(params, 1);
    find_synthesis_parameter("speech_per_text_token")->set(params, 7.5);
    EXPECT_FALSE(params.sampling.guards.length_bound);
    EXPECT_FALSE(params.sampling.guards.stops);
    EXPECT_TRUE(params.sampling.guards.alignment);
    EXPECT_EQ(params.sampling.guards.speech_per_text_token, 7.5f);
    chatterbox_synthesis_params p = d;
    EXPECT_EQ(chatterbox_synthesis_params_set(&p, "speech_per_text_token", -1), CHATTERBOX_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(test::contains(chatterbox_last_error(), "speech_per_text_token is -1, expected [0, 100]"));
}
