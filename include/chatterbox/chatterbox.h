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
 * An engine serves one synthesis at a time (calls on one engine must not overlap); voices are
 * immutable and may be shared between engines of the same model.
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

typedef struct chatterbox_engine chatterbox_engine; /* a loaded model and its per-request state */
typedef struct chatterbox_voice chatterbox_voice;   /* voice conditionals, immutable */

/* The message of the last failing call on this thread ("" when none). */
const char *chatterbox_last_error(void);
const char *chatterbox_status_name(chatterbox_status status);
const char *chatterbox_version(void);

/* ---- engine ---------------------------------------------------------------------------- */

typedef struct chatterbox_engine_params {
    const char *model_path; /* official model folder or a GGUF from chatterbox-convert */
    const char *backend;    /* "cpu", "cuda" or NULL/"auto" (a GPU when one is usable, else the CPU) */
    int threads;            /* CPU threads; 0: all cores */
} chatterbox_engine_params;

chatterbox_engine_params chatterbox_engine_default_params(void);
chatterbox_status chatterbox_engine_load(const chatterbox_engine_params *params, chatterbox_engine **engine);
void chatterbox_engine_free(chatterbox_engine *engine);
int chatterbox_engine_sample_rate(const chatterbox_engine *engine); /* 24000 */
/* A one-line description: variant, weight type, backend. Valid while the engine lives. */
const char *chatterbox_engine_description(const chatterbox_engine *engine);

/* ---- voices ---------------------------------------------------------------------------- */

/* From a recording (any format libsndfile reads; a few seconds to a minute of clean speech). */
chatterbox_status chatterbox_voice_from_audio_file(chatterbox_engine *engine, const char *path, float exaggeration,
                                                   chatterbox_voice **voice);
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

typedef struct chatterbox_synthesis_params {
    float exaggeration;       /* used when the voice is NULL (built-in voice); a voice keeps its own */
    float cfg_weight;         /* classifier-free guidance, 0 disables (0.5) */
    float temperature;        /* (0.8) */
    float repetition_penalty; /* (1.2) */
    float min_p;              /* (0.05) */
    float top_p;              /* (1.0) */
    uint64_t seed;            /* same seed, text, voice and model: the same audio */
    int max_new_tokens;       /* speech tokens per T3 pass (1000) */
    int stream;               /* nonzero: vocode while T3 generates and call on_chunk as audio is ready */
    chatterbox_chunk_callback on_chunk;
    chatterbox_progress_callback on_progress;
    void *user_data;
    const volatile int *cancel; /* when set and nonzero, the call stops soon with CHATTERBOX_ERROR_CANCELLED */
} chatterbox_synthesis_params;

chatterbox_synthesis_params chatterbox_synthesis_default_params(void);

typedef struct chatterbox_audio {
    float *samples; /* mono, in [-1, 1] */
    size_t n_samples;
    int sample_rate;
    double seconds_to_first_audio; /* from the call to the first chunk (streaming) or to the end */
    double seconds_total;
    int speech_tokens; /* speech tokens vocoded (25 per second of speech), all text pieces together */
} chatterbox_audio;

/* Text of any length (split into sentences, joined with short pauses). voice NULL: built-in voice. */
chatterbox_status chatterbox_synthesize(chatterbox_engine *engine, const char *text, const chatterbox_voice *voice,
                                        const chatterbox_synthesis_params *params, chatterbox_audio *audio);
/* Voice conversion: the speech of source_path, said in `voice` (S3Tokenizer -> S3Gen -> HiFT).
 * Uses seed, stream, callbacks and cancel of params. */
chatterbox_status chatterbox_convert_voice(chatterbox_engine *engine, const char *source_path,
                                           const chatterbox_voice *voice, const chatterbox_synthesis_params *params,
                                           chatterbox_audio *audio);
void chatterbox_audio_free(chatterbox_audio *audio);

#ifdef __cplusplus
}
#endif

#endif /* CHATTERBOX_CHATTERBOX_H */
