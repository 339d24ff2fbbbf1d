#include "models/chatterbox/s3gen/flow_hparams.h"

#include "core/error.h"
#include "models/chatterbox/model_files.h"

namespace chatterbox::s3gen {

FlowHParams FlowHParams::from_model(const S3GenHparams &model) {
    FlowHParams hp;
    hp.vocab = model.token_vocab;
    hp.mel_bins = model.mel_bins;
    hp.speaker_dim = model.speaker_emb;
    hp.token_mel_ratio = model.token_mel_ratio;
    hp.encoder_dim = model.encoder_dim;
    hp.encoder_heads = int(model.encoder_heads);
    hp.encoder_ffn = model.encoder_ffn;
    hp.encoder_blocks = int(model.encoder_blocks);
    hp.encoder_up_blocks = int(model.encoder_up_blocks);
    hp.pre_lookahead = int(model.pre_lookahead);
    hp.decoder_channels = model.decoder_channels;
    hp.decoder_heads = int(model.decoder_heads);
    hp.decoder_head_dim = model.decoder_head_dim;
    hp.decoder_transformer_blocks = int(model.decoder_transformer_blocks);
    hp.decoder_mid_blocks = int(model.decoder_mid_blocks);
    hp.cfm_steps = int(model.cfm_steps);
    hp.cfg_rate = model.cfm_cfg_rate;

    const bool sizes_ok = hp.vocab > 0 && hp.mel_bins > 0 && hp.speaker_dim > 0 && hp.token_mel_ratio > 0 &&
                          hp.encoder_heads > 0 && hp.encoder_dim % hp.encoder_heads == 0 && hp.encoder_ffn > 0 &&
                          hp.encoder_blocks >= 0 && hp.encoder_up_blocks >= 0 && hp.pre_lookahead > 0 &&
                          hp.decoder_channels > 0 && hp.decoder_heads > 0 && hp.decoder_head_dim > 0 &&
                          hp.decoder_transformer_blocks >= 0 && hp.decoder_mid_blocks >= 0 && hp.cfm_steps > 0;
    if (!sizes_ok)
        fail("S3Gen flow hyper-parameters are inconsistent: vocab ", hp.vocab, ", mel bins ", hp.mel_bins,
             ", speaker dim ", hp.speaker_dim, ", token/mel ratio ", hp.token_mel_ratio, ", encoder ", hp.encoder_dim,
             " / ", hp.encoder_heads, " heads, decoder ", hp.decoder_channels, " channels / ", hp.decoder_heads, " x ",
             hp.decoder_head_dim, ", ", hp.cfm_steps, " CFM steps");
    return hp;
}

} // namespace chatterbox::s3gen
