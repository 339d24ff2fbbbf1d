#include "models/chatterbox/s3tokenizer/s3tokenizer_hparams.h"

#include "core/error.h"
#include "core/weight_store.h"

namespace chatterbox::s3tokenizer {

const HparamTable<S3TokenizerHParams> &S3TokenizerHParams::fields() {
    using H = S3TokenizerHParams;
    static const HparamTable<H> table = {
        {"chatterbox.s3tokenizer.mel_bins", &H::mel_bins, FieldRule::fixed},
        {"chatterbox.s3tokenizer.state", &H::state, FieldRule::positive},
        {"chatterbox.s3tokenizer.heads", &H::heads, FieldRule::positive},
        {"chatterbox.s3tokenizer.layers", &H::layers, FieldRule::positive},
        {"chatterbox.s3tokenizer.fsq_dims", &H::fsq_dims, FieldRule::fixed},
        {"chatterbox.s3tokenizer.vocab", &H::vocab, FieldRule::fixed},
        {"chatterbox.s3tokenizer.window_frames", &H::window_frames, FieldRule::fixed},
        {"chatterbox.s3tokenizer.window_stride", &H::window_stride, FieldRule::fixed},
        {"chatterbox.s3tokenizer.overlap_tokens", &H::overlap_tokens, FieldRule::fixed},
        {"chatterbox.s3tokenizer.max_frames", &H::max_frames, FieldRule::fixed},
    };
    return table;
}

S3TokenizerHParams S3TokenizerHParams::from_checkpoint(const WeightStore &store, const std::string &prefix) {
    S3TokenizerHParams hp;
    const CheckpointShapes shapes(store, prefix);
    shapes.read("encoder.conv1.weight", 3, 0, hp.state);
    shapes.count("encoder.blocks.", ".attn_ln.weight", hp.layers);
    return shapes.validated(hp);
}

void S3TokenizerHParams::validate() const {
    validate_fields(fields(), *this);
    if (state % heads != 0 || (state / heads) % 2 != 0)
        fail("chatterbox.s3tokenizer.heads ", heads, " must divide chatterbox.s3tokenizer.state ", state,
             " into even head sizes");
}

} // namespace chatterbox::s3tokenizer
