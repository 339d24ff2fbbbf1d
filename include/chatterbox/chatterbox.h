#ifndef CHATTERBOX_CHATTERBOX_H
#define CHATTERBOX_CHATTERBOX_H
/*
 * Chatterbox Engine — public C API.
 *
 * Load a model once, then synthesise many times (text-to-speech in a voice, or voice conversion).
 * Every function returns a chatterbox_status; on failure chatterbox_last_error() gives a message
 * that says what went wrong (per thread, valid until the next failing call on that thread).
 *
 *   chatterbox_engine_params ep = chatterbox_engine_default_params();
 *   ep.model_path = "models/chatterbox";                    // official folder or .gguf
 *   chatterbox_engine *engine;
 *   if (chatterbox_engine_load(&ep, &engine) != CHATTERBOX_OK) puts(chatterbox_last_error());
 *   chatterbox_synthesis_params sp = chatterbox_synthesis_default_params();
 *   chatterbox_audio audio;
 *   chatterbox_synthesize(engine, "Hello there.", NULL, &sp, &audio);   // NULL: the built-in voice
 *   ... audio.samples, audio.n_samples at audio.sample_rate ...
 *   chatterbox_audio_free(&audio);
 *   chatterbox_engine_free(engine);
 *
 * An engine is the loaded model, immutable and shared; a session is one stream of requests on it,
 * with its own compute state and threads (whisper.cpp's context/state split). Sessions of one
 * engine run at the same time on different threads:
 *
 *   chatterbox_session *session;
 *   chatterbox_session_new(engine, 0, &session);             // one per thread / concurrent request
 *   chatterbox_session_synthesize(session, "Hello there.", NULL, &sp, &audio);
 *   chatterbox_session_cancel(session);                       // from any thread: stops the running call
 *   chatterbox_session_free(session);                         // before chatterbox_engine_free
 *
 * The engine-level calls (chatterbox_synthesize, chatterbox_voice_from_audio_file ...) run on an
 * internal session of the engine and are serialised: concurrent calls wait for each other. Voices
 * are immutable and may be shared between sessions and engines of the same model.
 */

#include <stddef.h>
#include <stdint.h>

#define CHATTERBOX_VERSION "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum chatterbox_status {
    CHATTERBOX_OK = 0,
    CHATTERBOX_ERROR_INVALID_ARGUMENT = 1, /* a parameter out of range, empty text, NULL where not allowed */
    CHATTERBOX_ERROR_IO = 2,               /* a file that cannot be read or written */
    CHATTERBOX_ERROR_MODEL = 3,            /* a missing, incomplete or corrupt model */
    CHATTERBOX_ERROR_AUDIO = 4,            /* audio that cannot be decoded or used (silent, too short ...) */
    CHATTERBOX_ERROR_CANCELLED = 5,        /* stopped by the cancel flag or a callback */
    CHATTERBOX_ERROR_OUT_OF_MEMORY = 6,
    CHATTERBOX_ERROR_INTERNAL = 7
} chatterbox_status;

typedef struct chatterbox_engine chatterbox_engine;   /* a loaded model, immutable */
typedef struct chatterbox_session chatterbox_session; /* one request stream on an engine */
typedef struct chatterbox_voice chatterbox_voice;     /* voice conditionals, immutable */

/* The message of the last failing call on this thread ("" when none). */
const char *chatterbox_last_error(void);
const char *chatterbox_status_name(chatterbox_status status);
const char *chatterbox_version(void);

/* ---- engine ---------------------------------------------------------------------------- */

typedef struct chatterbox_engine_params {
    const char *model_path; /* official model folder or a GGUF from chatterbox-convert */
    const char *backend;    /* "cpu", "cuda" or NULL/"auto" (a GPU when one is usable, else the CPU) */
    int threads;            /* CPU threads; 0: all cores */
    /* T3 decode of up to this many concurrent session requests batched into one step each (continuous
     * batching: a request gets the tokens it gets alone); 0 (default): each session decodes alone. */
    int batch;
    /* Voices whose T3 conditioning prefix is kept, so that a request in a kept voice prefills only its
     * text; 0 (default): off. */
    int voice_prefixes;
    /* Which T3 of a model that has several: the multilingual model's "v2" (the default, as mtl_tts.py) or
     * "v3" (also the file's name, "t3_mtl23ls_v3"). NULL or "": the default the folder holds. A T3 the model
     * lacks, or any value for another variant, fails with CHATTERBOX_ERROR_MODEL naming the files. */
    const char *t3_model;
    /* The flow's CFM steps of up to this many concurrent session requests batched into one estimator run
     * each (a request gets the mel it gets alone, within f32 rounding); 0 (default): each session solves
     * alone. */
    int flow_batch;
    /* The vocoder (HiFT) of up to this many concurrent session requests' mels run as one batch (each
     * gets the wave it gets alone, within f32 rounding); 0 (default): each session vocodes alone. */
    int vocoder_batch;
    /* CPU threads of each of those batches; 0 (default): all cores. (`threads` is each session's: a batch
     * computes for many sessions at once, and gives threads back while sessions keep cores busy.) */
    int batch_threads;
    /* The T3 KV cache of the batch and of this engine's sessions: "f16" (NULL or "": the default), "f32"
     * (exact, twice the memory) or, on the CPU, "q8_0" (keys and values in 8 bits: about half f16's memory
     * per request; lossy, the logits within ~0.1 % of f16's, so tokens may differ, but a request still gets
     * the tokens it gets alone). Another value, or "q8_0" on a GPU, fails with
     * CHATTERBOX_ERROR_INVALID_ARGUMENT. */
    const char *kv_cache;
} chatterbox_engine_params;

chatterbox_engine_params chatterbox_engine_default_params(void);

/* The engine's settings as the command-line tools and the server take them: each field of
 * chatterbox_engine_params by name, with its flag, accepted values, default and meaning (one table
 * in the engine that every front end reads). */
typedef struct chatterbox_engine_setting_info {
    const char *name;          /* the field: "flow_batch" ("model" is model_path) */
    const char *option;        /* the command-line flag without its dashes: "flow-batch" */
    const char *meaning;       /* one line */
    const char *default_value; /* as text: "0", "auto", "f16"; "" for none */
    const char *accepted;      /* "[0, 1024]" for a number, "f16|f32|q8_0" for a choice, "" for any text */
    int is_number;             /* 1: an int field, 0: a text field */
    int shared_services;       /* 1: matters only where many requests share the engine (the batches, the kept
                                  voice prefixes) */
} chatterbox_engine_setting_info;
size_t chatterbox_engine_setting_count(void);
/* NULL past the end. */
const chatterbox_engine_setting_info *chatterbox_engine_setting(size_t index);
/* Sets the field `name` of params from text ("4", "q8_0"), checked as the table says
 * (CHATTERBOX_ERROR_INVALID_ARGUMENT naming the setting otherwise). A text field keeps the pointer
 * `value`, which must stay valid until chatterbox_engine_load has returned. */
chatterbox_status chatterbox_engine_params_set(chatterbox_engine_params *params, const char *name, const char *value);
chatterbox_status chatterbox_engine_load(const chatterbox_engine_params *params, chatterbox_engine **engine);
void chatterbox_engine_free(chatterbox_engine *engine);
int chatterbox_engine_sample_rate(const chatterbox_engine *engine); /* 24000 */
/* A one-line description: variant, weight type, backend. Valid while the engine lives. */
const char *chatterbox_engine_description(const chatterbox_engine *engine);
/* The model's variant, read from the model: "english", "multilingual", "turbo" or "nano" ("" for a null engine). Voices
 * built with one variant serve the variants that build them the same way (english; turbo and nano);
 * synthesis with another's fails with CHATTERBOX_ERROR_INVALID_ARGUMENT. */
const char *chatterbox_engine_variant(const chatterbox_engine *engine);

/* ---- voices ---------------------------------------------------------------------------- */

/* From a recording (any format libsndfile reads; a few seconds to a minute of clean speech). */
chatterbox_status chatterbox_voice_from_audio_file(chatterbox_engine *engine, const char *path, float exaggeration,
                                                   chatterbox_voice **voice);
/* How chatterbox_voice_from_audio_file_ex builds a voice from a recording. */
typedef struct chatterbox_voice_params {
    float exaggeration; /* emotion intensity, 0 .. 2 (default 0.5) */
    /* 1 (default): a variant that normalises the reference's loudness does so (Turbo and Nano: to -27 LUFS,
     * tts_turbo.py's norm_loudness=True); 0: the recording as it is. English and multilingual never normalise. */
    int norm_loudness;
} chatterbox_voice_params;

chatterbox_voice_params chatterbox_voice_default_params(void);
/* chatterbox_voice_from_audio_file with the choices of params (NULL: the defaults). */
chatterbox_status chatterbox_voice_from_audio_file_ex(chatterbox_engine *engine, const char *path,
                                                      const chatterbox_voice_params *params, chatterbox_voice **voice);
/* The voice stored with the model; CHATTERBOX_ERROR_MODEL when the model has none. */
chatterbox_status chatterbox_voice_builtin(chatterbox_engine *engine, float exaggeration, chatterbox_voice **voice);
/* A voice file written by chatterbox_voice_save (small; reloads bit-identical). */
chatterbox_status chatterbox_voice_load(const char *path, chatterbox_voice **voice);
chatterbox_status chatterbox_voice_save(const chatterbox_voice *voice, const char *path);
/* Recording or voice file, told apart by content. */
chatterbox_status chatterbox_voice_open(chatterbox_engine *engine, const char *path, float exaggeration,
                                        chatterbox_voice **voice);
/* The same voice with another exaggeration (emotion intensity, 0 .. 2 sensible). */
chatterbox_status chatterbox_voice_with_exaggeration(const chatterbox_voice *voice, float exaggeration,
                                                     chatterbox_voice **out);
void chatterbox_voice_free(chatterbox_voice *voice);

/* ---- synthesis ------------------------------------------------------------------------- */

/* Streaming: called with each new piece of the final waveform, in order; the pieces concatenated
 * are exactly the returned audio. Return nonzero to cancel. */
typedef int (*chatterbox_chunk_callback)(const float *samples, size_t n_samples, void *user_data);
/* Progress: stage ("t3", "s3gen", "hift"; "s3tokenizer" first in voice conversion; "done" last)
 * and the overall fraction done in [0, 1]. */
typedef void (*chatterbox_progress_callback)(const char *stage, float fraction, void *user_data);

/* The ranged parameters, their defaults and meanings are listed by chatterbox_synthesis_param_info. */
typedef struct chatterbox_synthesis_params {
    float exaggeration; /* used when the voice is NULL (built-in voice); a voice keeps its own */
    float cfg_weight;   /* classifier-free guidance, 0 disables */
    float temperature;
    float repetition_penalty;
    float min_p;
    float top_p;
    uint64_t seed;        /* any value; same seed, text, voice and model: the same audio */
    int max_new_tokens;   /* speech tokens per T3 pass (per sentence) */
    float sentence_pause; /* seconds of silence between sentences of long text */
    float clause_pause;   /* seconds where an over-long sentence is cut */
    int stream;           /* nonzero: vocode while T3 generates and call on_chunk as audio is ready */
    chatterbox_chunk_callback on_chunk;
    chatterbox_progress_callback on_progress;
    void *user_data;
    /* When set and nonzero (store it atomically, or from a signal handler), the call stops soon with
     * CHATTERBOX_ERROR_CANCELLED. chatterbox_session_cancel does the same for a session. */
    const volatile int *cancel;
    int split_text; /* 1: long text is said sentence by sentence; 0: the whole text in one T3 pass */
    int ignore_eos; /* 1: T3 never stops at end of speech, it makes max_new_tokens tokens per pass (benchmarks) */
    float speed;    /* 0.25 .. 4: speaking rate by a pitch-preserving time-stretch; 1 leaves the audio untouched */
    /* Guards against runaway speech (each piece's end is reported in chatterbox_audio.piece_ends): */
    int length_bound;            /* 1: speech tokens per piece capped from its text length (default on) */
    float speech_per_text_token; /* the length bound's rate per text token; 0: the model's (English 5) */
    int stop_guards;     /* 1: a long repeat of one token or a long silence after the text ends a piece (default on) */
    int alignment_guard; /* 1: the alignment stream analyzer of English/multilingual T3 (default off) */
    /* The language of the text, for the multilingual model (required there): a code of
     * chatterbox_language_code ("fr", "ja", ...; any case). NULL or "" for the other variants, which take
     * none; otherwise CHATTERBOX_ERROR_INVALID_ARGUMENT with the supported codes in the message. */
    const char *language;
    /* The flow solver's Euler steps, 0 .. 100; 0: the model's own (the official 10; Turbo's 2). Fewer is
     * faster (the flow's cost is proportional) and further from the official output. */
    int cfm_steps;
    /* Nonzero: the samples go only to on_chunk (in chunks when streaming, else each text piece and pause
     * as it is done: the same samples as the result would hold) and the result's samples stay NULL
     * (n_samples 0), so memory stays flat however long the text; e.g. a writer of long files. */
    int discard_samples;
    /* Keep only the top_k likeliest speech tokens at each step (Turbo's and Nano's sampler; English and
     * multilingual have no such stage and ignore it); 0: the model's default (Turbo 1000). */
    int top_k;
    /* The flow's initial noise instead of noise drawn from the seed: CHATTERBOX_MEL_BINS x
     * flow_noise_frames floats, channel-major (torch's z[0], shape (80, T)), read from its first column
     * for every text piece: the voice prompt's mel frames, then 2 per speech token (too few:
     * CHATTERBOX_ERROR_INVALID_ARGUMENT). With the noise the official flow started from, the flow
     * reproduces it; the official call draws that noise with torch after T3's tokens, over the whole
     * utterance, which a stream cannot know before its first audio. NULL: drawn from the seed. The
     * caller keeps it alive during the call. */
    const float *flow_noise;
    size_t flow_noise_frames;
} chatterbox_synthesis_params;

/* Mel bins of the flow's noise (chatterbox_synthesis_params.flow_noise). */
#define CHATTERBOX_MEL_BINS 80

/* The multilingual model's languages: code ("ar") and English name ("Arabic") of language `index`
 * (0 .. chatterbox_language_count() - 1); NULL past the end. */
size_t chatterbox_language_count(void);
const char *chatterbox_language_code(size_t index);
const char *chatterbox_language_name(size_t index);

chatterbox_synthesis_params chatterbox_synthesis_default_params(void);

/* One ranged parameter or on/off flag of chatterbox_synthesis_params (every field but seed, stream, the
 * callbacks and cancel). */
typedef struct chatterbox_param_info {
    const char *name;    /* the field's name: "temperature", "max_new_tokens" ... (also the server's JSON name) */
    const char *option;  /* command-line option without dashes: "temperature", "max-tokens"; for a flag, the
                            option that turns its default around: "ignore-eos", "no-split" */
    const char *meaning; /* one line */
    double min, max;     /* accepted: [min, max], or (min, max] when min_excluded */
    int min_excluded;
    int integer; /* nonzero: whole numbers only */
    double default_value;
    int is_flag; /* nonzero: an on/off field, 0 or 1 (a flag on the command line) */
} chatterbox_param_info;

size_t chatterbox_synthesis_param_count(void);
/* NULL when index >= chatterbox_synthesis_param_count(). */
const chatterbox_param_info *chatterbox_synthesis_param_info(size_t index);
/* Sets the field `name` to value: CHATTERBOX_ERROR_INVALID_ARGUMENT for an unknown name or a value out of range. */
chatterbox_status chatterbox_synthesis_params_set(chatterbox_synthesis_params *params, const char *name, double value);
/* Checks every ranged field without an engine (a tool can check before loading a model). The model's
 * own limit on max_new_tokens is checked when synthesising. */
chatterbox_status chatterbox_synthesis_params_validate(const chatterbox_synthesis_params *params);

typedef struct chatterbox_audio {
    float *samples; /* mono, in [-1, 1] */
    size_t n_samples;
    int sample_rate;
    double seconds_to_first_audio; /* from the call to the first chunk (streaming, discard_samples) or to the end */
    double seconds_total;
    int speech_tokens; /* speech tokens vocoded (25 per second of speech), all text pieces together */
    /* Per text piece, why its speech ended: a chatterbox_piece_end (malloc'd, freed by chatterbox_audio_free). */
    int *piece_ends;
    size_t n_pieces;
    int pieces_at_length_bound; /* pieces cut by the length bound from the text */
} chatterbox_audio;

/* Why a text piece's speech ended. */
typedef enum chatterbox_piece_end {
    CHATTERBOX_PIECE_EOS = 0,          /* the model ended it */
    CHATTERBOX_PIECE_MAX_TOKENS = 1,   /* max_new_tokens */
    CHATTERBOX_PIECE_LENGTH_BOUND = 2, /* the length bound from the text */
    CHATTERBOX_PIECE_TOKEN_REPEAT = 3, /* one speech token repeated too long */
    CHATTERBOX_PIECE_SILENCE_TAIL = 4, /* a long silence after the text */
    CHATTERBOX_PIECE_ALIGNMENT = 5,    /* ended by the alignment analyzer */
    CHATTERBOX_PIECE_STOPPED = 6       /* stopped from outside (cancellation) */
} chatterbox_piece_end;
/* "eos", "max_tokens", "length_bound", "token_repeat", "silence_tail", "alignment", "stopped"; NULL otherwise. */
const char *chatterbox_piece_end_name(int end);

/* Text of any length (split into sentences, joined with short pauses, unless params->split_text is 0).
 * voice NULL: built-in voice. */
chatterbox_status chatterbox_synthesize(chatterbox_engine *engine, const char *text, const chatterbox_voice *voice,
                                        const chatterbox_synthesis_params *params, chatterbox_audio *audio);
/* Voice conversion: the speech of source_path, said in `voice` (S3Tokenizer -> S3Gen -> HiFT).
 * Uses seed, stream, callbacks and cancel of params. */
chatterbox_status chatterbox_convert_voice(chatterbox_engine *engine, const char *source_path,
                                           const chatterbox_voice *voice, const chatterbox_synthesis_params *params,
                                           chatterbox_audio *audio);
void chatterbox_audio_free(chatterbox_audio *audio);

/* ---- sessions -------------------------------------------------------------------------- */

/* A session of engine with `threads` CPU threads (0: the engine's setting). Free it before the engine. */
chatterbox_status chatterbox_session_new(chatterbox_engine *engine, int threads, chatterbox_session **session);
void chatterbox_session_free(chatterbox_session *session);
/* As chatterbox_synthesize / chatterbox_convert_voice, on this session; calls on one session must
 * not overlap, calls on different sessions may. */
chatterbox_status chatterbox_session_synthesize(chatterbox_session *session, const char *text,
                                                const chatterbox_voice *voice,
                                                const chatterbox_synthesis_params *params, chatterbox_audio *audio);
chatterbox_status chatterbox_session_convert_voice(chatterbox_session *session, const char *source_path,
                                                   const chatterbox_voice *voice,
                                                   const chatterbox_synthesis_params *params, chatterbox_audio *audio);
/* A voice from a recording, computed on this session (chatterbox_voice_open's rules: recording or voice file). */
chatterbox_status chatterbox_session_voice_open(chatterbox_session *session, const char *path, float exaggeration,
                                                chatterbox_voice **voice);
/* chatterbox_voice_from_audio_file_ex computed on this session (a recording only; params NULL: the defaults). */
chatterbox_status chatterbox_session_voice_from_audio_file(chatterbox_session *session, const char *path,
                                                           const chatterbox_voice_params *params,
                                                           chatterbox_voice **voice);
/* Thread-safe: the session's running call (if any) stops soon with CHATTERBOX_ERROR_CANCELLED. */
void chatterbox_session_cancel(chatterbox_session *session);

#ifdef __cplusplus
}
#endif

#endif /* CHATTERBOX_CHATTERBOX_H */
