#pragma once
// What each variant of the Chatterbox family is (spec variants.md) beyond what its files' tensors
// and metadata say, as one record per variant: its official folders and file names, text front end,
// T3 architecture with its sampler recipe and speech-guard rates, flow (standard or mean flow, the
// last-token trim, trailing silence tokens) and reference policy. Each record is its own file,
// variants/<name>.cpp, listed once in variant_spec.cpp; adding a variant is a new file, its line there
// and its name in variant.h. Nothing else chooses by variant: the components read these records.

#include "models/chatterbox/model_files.h"
#include "models/chatterbox/voice.h"
#include "text/punc_norm.h"

#include <vector>

namespace chatterbox {

// How a variant turns text into T3's ids (text_frontend.h).
enum class TextTokenizer {
    english,      // EnTokenizer: every ' ' is the literal "[SPACE]" token
    multilingual, // MTLTokenizer: language steps and tags, then as English
    plain,        // the BPE as it is (GPT-2)
};

struct VariantSpec {
    Variant variant;
    // The official folders this engine reads (model hub repository, files, local folder); the first is
    // the variant's default (multilingual: v2, as mtl_tts.py).
    std::vector<OfficialFolder> folders;
    // Text front end: punc_norm's rules and the tokenizer.
    const text::PunctuationRules &(*punctuation)();
    TextTokenizer tokenizer;
    // T3 as published, before a checkpoint's shapes: backbone, vocabularies, prefix layout, the
    // speech guards' rates and heads (t3.guards) and how a token is drawn (t3.sampler).
    t3::HParams t3;
    // S3Gen's flow as published: CFM steps and schedule, mean flow, trims, trailing silence tokens.
    s3gen::FlowHParams flow;
    // What a reference recording must be and how it is prepared (shortest length, loudness).
    ReferencePolicy reference;
};

// Every variant's record, in Variant order.
const std::vector<const VariantSpec *> &variant_specs();
const VariantSpec &variant_spec(Variant variant);

// The records, one file each (variants/*.cpp).
const VariantSpec &english_variant();
const VariantSpec &multilingual_variant();
const VariantSpec &turbo_variant();
const VariantSpec &nano_variant();
// What the GPT-2 records (Turbo, Nano) share: all but the T3's size and the folder (variants/turbo.cpp).
VariantSpec gpt2_variant(Variant variant, const char *repo, const char *t3_file, t3::HParams t3);

} // namespace chatterbox
