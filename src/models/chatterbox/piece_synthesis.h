#pragma once
// One text piece of a request, from its text tokens to its audio (PipelineSession::synthesize loops over
// the pieces): T3 generates the speech tokens (alone or batched, t3::Executor); the speech-token
// filter (t3::SpeechTokenFilter) and, with the stop rules, the trailing-silence trimmer pass them on
// — while T3 generates when streaming, after it otherwise, by the same rule — and a PieceVocalizer
// (streaming.h) turns them into the piece's audio for the request's sink. The flow's trailing
// silence (Turbo's S3GEN_SIL tokens) follows the speech.

#include "models/chatterbox/streaming.h"
#include "models/chatterbox/t3/executor.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace chatterbox {

struct PieceRequest {
    std::vector<int32_t> framed_text; // the piece's T3 text tokens, framed (TextFrontEnd::t3_tokens)
    t3::SamplingParams sampling;      // with the piece's own seed (the flow's and the vocoder's noise)
    // T3's generator as the previous piece left it; none for the first piece, which seeds one with
    // sampling.seed (the request's seed).
    std::optional<TorchGenerator> t3_generator;
    const t3::CondEmbeddings *cond = nullptr;
    const t3::KvPrefix *prefix = nullptr; // the voice's kept conditioning prefix, or nullptr
    const s3gen::FlowReference *reference = nullptr;
    ChunkPlan plan;      // ChunkPlan::offline() unless streaming
    const FlowNoiseBuffer *flow_noise = nullptr; // fixed flow noise, or nullptr: drawn from sampling.seed
    bool stream = false; // tokens go to the vocalizer while T3 generates
    std::vector<int32_t> trailing_tokens; // after the speech: the flow's trailing silence (s3gen::flow_input_tokens)
    int index = 0, count = 1; // place in the request, for progress
};

struct PieceResult {
    t3::GenerationResult generated;
    int speech_tokens = 0; // spoken: after the filter and the trimmer, without the flow's trailing silence
};

// Throws Cancelled once the sink asks for it (T3 stops after the step it is on).
PieceResult synthesize_piece(const t3::Executor &t3, const VocodingStages &stages, AudioSink &sink,
                             const PieceRequest &piece);

} // namespace chatterbox
