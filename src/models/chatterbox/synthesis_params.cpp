#include "models/chatterbox/synthesis_params.h"

#include "core/error.h"
#include "models/chatterbox/s3gen/flow_hparams.h"

#include <cmath>

namespace chatterbox {

const std::vector<SynthesisParameter> &synthesis_parameters() {
    using P = SynthesisParams;
    static const std::vector<SynthesisParameter> table = {
        {"exaggeration", "exaggeration", "emotion intensity", 0, 2, false, false, [](P &p) { return &p.exaggeration; },
         nullptr},
        {"cfg_weight", "cfg-weight", "classifier-free guidance weight, 0 disables it", 0, 3, false, false,
         [](P &p) { return &p.sampling.cfg_weight; }, nullptr},
        {"temperature", "temperature", "sampling temperature", 0, 5, true, false,
         [](P &p) { return &p.sampling.temperature; }, nullptr},
        {"repetition_penalty", "repetition-penalty", "penalty on speech tokens already said, 1 disables it", 1, 5,
         false, false, [](P &p) { return &p.sampling.repetition_penalty; }, nullptr},
        {"min_p", "min-p", "drop tokens less likely than min-p times the likeliest, 0 disables it", 0, 1, false, false,
         [](P &p) { return &p.sampling.min_p; }, nullptr},
        {"top_p", "top-p", "nucleus sampling mass, 1 disables it; 0: the model's default (English 1, Turbo 0.95)", 0, 1,
         false, false, [](P &p) { return &p.sampling.top_p; }, nullptr},
        {"top_k", "top-k",
         "keep the k likeliest speech tokens (Turbo, Nano; English and multilingual have no top-k), 0: the model's "
         "default (Turbo 1000)",
         0, 1000000, false, true, nullptr, [](P &p) { return &p.sampling.top_k; }},
        {"max_new_tokens", "max-tokens",
         "most speech tokens per sentence (25 tokens = 1 s of speech); longer speech is cut", 1, 4096, false, true,
         nullptr, [](P &p) { return &p.sampling.max_new_tokens; }},
        {"sentence_pause", "sentence-pause", "seconds of silence between sentences of long text", 0, 10, false, false,
         [](P &p) { return &p.sentence_pause; }, nullptr},
        {"clause_pause", "clause-pause", "seconds of silence where an over-long sentence is cut", 0, 10, false, false,
         [](P &p) { return &p.clause_pause; }, nullptr},
        {"split_text", "no-split",
         "1: split long text into sentences, one T3 pass each; 0 (--no-split): say the whole text in one pass", 0, 1,
         false, true, nullptr, nullptr, [](P &p) { return &p.split_text; }},
        {"ignore_eos", "ignore-eos",
         "1 (--ignore-eos): never stop at the end-of-speech token, always make max_new_tokens tokens (benchmarks)", 0,
         1, false, true, nullptr, nullptr, [](P &p) { return &p.sampling.ignore_eos; }},
        {"speed", "speed", "speaking rate: the audio time-stretched, pitch kept (SoundTouch); 1 leaves it untouched",
         0.25, 4, false, false, [](P &p) { return &p.speed; }, nullptr},
        {"cfm_steps", "cfm-steps",
         "flow solver steps, 0: the model's own (10; Turbo 2); fewer is faster and further from the official sound", 0,
         s3gen::kMaxCfmSteps, false, true, nullptr, [](P &p) { return &p.cfm_steps; }},
        // Speech guards (t3/speech_guards.h).
        {"length_bound", "no-length-bound",
         "1: cap each piece's speech tokens from its text (a floor + speech_per_text_token per text token); 0 "
         "(--no-length-bound): only max_new_tokens",
         0, 1, false, true, nullptr, nullptr, [](P &p) { return &p.sampling.guards.length_bound; }},
        {"speech_per_text_token", "speech-per-text-token",
         "length bound: speech tokens allowed per text token, 0 takes the model's rate (English 5)", 0, 100, false,
         false, [](P &p) { return &p.sampling.guards.speech_per_text_token; }, nullptr},
        {"stop_guards", "no-stop-guards",
         "1: end a piece on a long repeat of one token or a long silence after its text, trim trailing silence; 0 "
         "(--no-stop-guards): off",
         0, 1, false, true, nullptr, nullptr, [](P &p) { return &p.sampling.guards.stops; }},
        {"alignment_guard", "guard-alignment",
         "1 (--guard-alignment): the alignment stream analyzer (English, multilingual) suppresses an early end and "
         "ends runaway tails",
         0, 1, false, true, nullptr, nullptr, [](P &p) { return &p.sampling.guards.alignment; }},
    };
    return table;
}

double SynthesisParameter::get(const SynthesisParams &p) const {
    SynthesisParams &fields = const_cast<SynthesisParams &>(p); // the accessors only locate the field
    if (real) return double(*real(fields));
    if (count) return double(*count(fields));
    return *flag(fields) ? 1.0 : 0.0;
}

void SynthesisParameter::set(SynthesisParams &p, double value) const {
    if (real)
        *real(p) = float(value);
    else if (count)
        *count(p) = int(value);
    else
        *flag(p) = value != 0;
}

bool SynthesisParameter::accepts(double value) const {
    const bool above_lo = lo_excluded ? value > lo : value >= lo;
    return std::isfinite(value) && above_lo && value <= hi && (!integer || value == std::floor(value));
}

std::string SynthesisParameter::range_text() const { return concat(lo_excluded ? "(" : "[", lo, ", ", hi, "]"); }

void SynthesisParameter::check(double value) const {
    if (!accepts(value)) throw InvalidArgument(concat(name, " is ", value, ", expected ", range_text()));
}

const SynthesisParameter *find_synthesis_parameter(const std::string &name) {
    for (const SynthesisParameter &p : synthesis_parameters())
        if (name == p.name) return &p;
    return nullptr;
}

void validate(const SynthesisParams &params) {
    for (const SynthesisParameter &p : synthesis_parameters()) p.check(p.get(params));
}

} // namespace chatterbox
