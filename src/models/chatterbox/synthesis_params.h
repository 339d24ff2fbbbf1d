#pragma once
// The synthesis parameters a request may set, and the ONE table that gives each its name,
// default, accepted range and meaning. The C API's defaults and checks, the CLI's options and
// --help (through the C API) and the server all read this table, so they cannot disagree.
//
// The defaults are the member initialisers below (and t3::SamplingParams'); the table reads them
// from a default-constructed SynthesisParams.

#include "models/chatterbox/t3/sampler.h"

#include <cstddef>
#include <string>
#include <vector>

namespace chatterbox {

struct SynthesisParams {
    float exaggeration = 0.5f; // emotion intensity of the built-in voice (a built voice keeps its own)
    // temperature, top_p, min_p, repetition_penalty, cfg_weight, max_new_tokens, seed, ignore_eos, and the
    // speech guards: the length bound and stop rules on, the alignment analyzer off (t3/speech_guards.h)
    t3::SamplingParams sampling = t3::SamplingParams::guarded();
    float sentence_pause = 0.25f; // seconds of silence after a sentence of long text
    float clause_pause = 0.12f;   // ... after a clause cut out of an over-long sentence
    // Long text is split into sentences (and an over-long sentence into clauses), one T3 pass each;
    // off, the whole text is one pass, as the reference pipeline does (up to T3's text positions).
    bool split_text = true;
    // Speaking rate: the finished audio is time-stretched with its pitch kept (audio/time_stretch.h);
    // 1 leaves it untouched.
    float speed = 1.0f;
    // The flow solver's Euler steps; 0 takes the model's own (the official 10; Turbo's mean flow 2).
    // Fewer is cheaper and further from the official output (bench/README.md "Fewer CFM steps").
    int cfm_steps = 0;
    // The language of the text: the multilingual model's code ("fr"; text/languages.h), required
    // there; the other variants take none (""). Like the seed, outside the numeric table.
    std::string language;
};

// One ranged numeric parameter, or an on/off flag (0 or 1). The seed is the one parameter outside the
// table: any 64-bit value.
struct SynthesisParameter {
    const char *name; // field of chatterbox_synthesis_params and of the server's JSON: "max_new_tokens"
    // Command-line option without the dashes: "max-tokens". For a flag, the option that turns
    // its default around: "ignore-eos" (off by default), "no-split" (on by default).
    const char *option;
    const char *meaning; // one line for --help
    double lo, hi;       // accepted range: [lo, hi], or (lo, hi] when lo_excluded
    bool lo_excluded;
    bool integer;
    // The parameter's field in p: exactly one of the three.
    float *(*real)(SynthesisParams &p);
    int *(*count)(SynthesisParams &p);
    bool *(*flag)(SynthesisParams &p);

    double get(const SynthesisParams &p) const;
    void set(SynthesisParams &p, double value) const; // no range check
    double default_value() const { return get(SynthesisParams{}); }
    bool accepts(double value) const;
    std::string range_text() const; // "[0, 2]", "(0, 5]"
    // Throws InvalidArgument naming the parameter unless it accepts value ("temperature is 7, expected (0, 5]").
    void check(double value) const;
};

const std::vector<SynthesisParameter> &synthesis_parameters();
// nullptr when no parameter has this name.
const SynthesisParameter *find_synthesis_parameter(const std::string &name);

// Throws InvalidArgument naming the first parameter out of its range (SynthesisParameter::check).
void validate(const SynthesisParams &params);

} // namespace chatterbox
