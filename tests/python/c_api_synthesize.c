/* The C API side of the Python package's parity test and overhead benchmark: synthesises text on a
 * session of the tiny (or any) model exactly as the package's generate does, and writes the samples
 * as raw float32, or times repeated calls.
 *
 *   c_api_synthesize MODEL TEXT SEED MAX_NEW_TOKENS VOICE|- BATCH OUT.f32 [timed]
 *     VOICE: a voice file (chatterbox_voice_save) or "-" for the built-in voice at exaggeration 0.5
 *     timed: one untimed call (warm-up), then one call per line read from stdin, its seconds printed at
 *            once (bench/python_overhead.py pairs these with the package's calls); the last call's
 *            samples are written at the end of stdin */
#include "chatterbox/chatterbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int fail(const char *what) {
    fprintf(stderr, "c_api_synthesize: %s: %s\n", what, chatterbox_last_error());
    return 1;
}

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 8 && argc != 9) {
        fprintf(stderr, "usage: c_api_synthesize MODEL TEXT SEED MAX_NEW_TOKENS VOICE|- BATCH OUT.f32 [timed]\n");
        return 2;
    }
    chatterbox_engine_params ep = chatterbox_engine_default_params();
    ep.model_path = argv[1];
    ep.backend = "cpu";
    ep.batch = atoi(argv[6]);
    chatterbox_engine *engine = NULL;
    if (chatterbox_engine_load(&ep, &engine) != CHATTERBOX_OK) return fail("load");
    chatterbox_session *session = NULL;
    if (chatterbox_session_new(engine, 0, &session) != CHATTERBOX_OK) return fail("session");
    chatterbox_voice *voice = NULL;
    const chatterbox_status voice_status = strcmp(argv[5], "-") == 0 ? chatterbox_voice_builtin(engine, 0.5f, &voice)
                                                                     : chatterbox_voice_load(argv[5], &voice);
    if (voice_status != CHATTERBOX_OK) return fail("voice");
    chatterbox_synthesis_params params = chatterbox_synthesis_default_params();
    params.seed = strtoull(argv[3], NULL, 10);
    params.max_new_tokens = atoi(argv[4]);
    const int timed = argc == 9;
    chatterbox_audio audio = {0};
    if (chatterbox_session_synthesize(session, argv[2], voice, &params, &audio) != CHATTERBOX_OK)
        return fail("synthesize");
    char line[16];
    while (timed && fgets(line, sizeof line, stdin) != NULL) {
        chatterbox_audio_free(&audio);
        const double start = now_seconds();
        if (chatterbox_session_synthesize(session, argv[2], voice, &params, &audio) != CHATTERBOX_OK)
            return fail("synthesize");
        printf("%.9f\n", now_seconds() - start);
        fflush(stdout);
    }
    FILE *out = fopen(argv[7], "wb");
    if (!out || fwrite(audio.samples, sizeof(float), audio.n_samples, out) != audio.n_samples || fclose(out) != 0) {
        fprintf(stderr, "c_api_synthesize: cannot write %s\n", argv[7]);
        return 1;
    }
    chatterbox_audio_free(&audio);
    chatterbox_voice_free(voice);
    chatterbox_session_free(session);
    chatterbox_engine_free(engine);
    return 0;
}
