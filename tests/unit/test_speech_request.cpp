// The speech request parser (src/server/speech_request.h) without a model: every accepted field
// lands where synthesis reads it, the table's parameters included, and the defaults are the table's.

#include "server/api_error.h"
#include "server/speech_request.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace chatterbox;
using namespace chatterbox::server;
using nlohmann::json;

namespace {

SpeechRequest parse(const json &body) { return parse_speech_request(body.dump(), RequestLimits{}); }

TEST(SpeechRequest, DefaultsAreTheParameterTables) {
    const SpeechRequest r = parse({{"input", "Hello."}, {"voice", "default"}});
    EXPECT_EQ(r.input, "Hello.");
    EXPECT_EQ(r.format, ResponseFormat::wav);
    EXPECT_EQ(r.stream, StreamFormat::none);
    for (const SynthesisParameter &p : synthesis_parameters()) EXPECT_EQ(p.get(r.params), p.default_value()) << p.name;
    EXPECT_EQ(r.params.sampling.seed, SynthesisParams{}.sampling.seed);
}

TEST(SpeechRequest, EveryFieldLandsInTheRequest) {
    json body = {{"model", "tts-1"},       {"input", "Hi."}, {"voice", "shimmer"},           {"response_format", "pcm"},
                 {"stream_format", "sse"}, {"speed", 1},     {"seed", 18446744073709551615u}};
    double value = 0.5;
    for (const SynthesisParameter &p : synthesis_parameters()) {
        if (p.flag) { // the other setting than the default
            body[p.name] = p.default_value() == 0;
            continue;
        }
        // A value inside each range that differs from the default.
        const double v = p.integer ? double(int(p.lo) + 7) : (p.accepts(p.lo + value) ? p.lo + value : p.hi);
        body[p.name] = v;
        value = value * 0.9;
    }
    const SpeechRequest r = parse(body);
    EXPECT_EQ(r.model, "tts-1");
    EXPECT_EQ(r.voice, "shimmer");
    EXPECT_EQ(r.format, ResponseFormat::pcm);
    EXPECT_EQ(r.stream, StreamFormat::sse);
    EXPECT_EQ(r.params.sampling.seed, 18446744073709551615u);
    for (const SynthesisParameter &p : synthesis_parameters()) {
        const double sent = p.flag ? double(body[p.name].get<bool>()) : body[p.name].get<double>();
        EXPECT_FLOAT_EQ(float(p.get(r.params)), float(sent)) << p.name;
    }
}

TEST(SpeechRequest, EveryOpenAIFormatStreamsAndSpeedIsTheTables) {
    for (const char *name : {"mp3", "opus", "aac", "flac", "wav", "pcm"}) {
        const SpeechRequest r =
            parse({{"input", "Hi."}, {"voice", "default"}, {"response_format", name}, {"stream_format", "audio"}});
        EXPECT_STREQ(audio::audio_format_info(r.format).name, name);
        EXPECT_EQ(r.stream, StreamFormat::audio);
    }
    EXPECT_EQ(parse({{"input", "Hi."}, {"voice", "default"}, {"speed", 0.25}}).params.speed, 0.25f);
    EXPECT_EQ(parse({{"input", "Hi."}, {"voice", "default"}, {"speed", 4}}).params.speed, 4.0f);
}

TEST(SpeechRequest, OpenAIVoiceNamesAreTheBuiltInVoice) {
    for (const char *voice :
         {"default", "alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage", "shimmer", "verse"})
        EXPECT_TRUE(is_builtin_voice_name(voice)) << voice;
    EXPECT_FALSE(is_builtin_voice_name("Alloy"));
    EXPECT_FALSE(is_builtin_voice_name("../alloy"));
}

TEST(SpeechRequest, InputLimitCountsCharactersNotBytes) {
    RequestLimits limits;
    limits.max_input_chars = 3;
    const json accepted = {{"input", "\xC3\xA9\xC3\xA9\xC3\xA9"}, {"voice", "default"}}; // three é, six bytes
    EXPECT_EQ(parse_speech_request(accepted.dump(), limits).input.size(), 6u);
    const json refused = {{"input", "abcd"}, {"voice", "default"}};
    try {
        parse_speech_request(refused.dump(), limits);
        FAIL() << "four characters passed a limit of three";
    } catch (const ApiError &e) {
        EXPECT_EQ(e.status, 413);
        EXPECT_EQ(e.param, "input");
    }
}

TEST(SpeechRequest, LanguageIsAStringField) {
    EXPECT_EQ(parse({{"input", "Bonjour."}, {"voice", "default"}}).params.language, "");
    EXPECT_EQ(parse({{"input", "Bonjour."}, {"voice", "default"}, {"language", "fr"}}).params.language, "fr");
    try {
        parse({{"input", "Bonjour."}, {"voice", "default"}, {"language", 5}});
        FAIL() << "a number passed as the language";
    } catch (const ApiError &e) {
        EXPECT_EQ(e.status, 400);
        EXPECT_EQ(e.param, "language");
    }
}

TEST(SpeechRequest, ErrorsAreOpenAIShaped) {
    const json error = json::parse(ApiError(400, "temperature is 7, expected (0, 5]", "temperature").json());
    EXPECT_EQ(error, json::parse(R"({"error": {"message": "temperature is 7, expected (0, 5]",
                                  "type": "invalid_request_error", "param": "temperature", "code": null}})"));
}

} // namespace
