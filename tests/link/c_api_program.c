/* A program of the C API alone (include/chatterbox/chatterbox.h), linked against the engine library
 * `chatterbox` and nothing of the server's or the tools' (tests/CMakeLists.txt, engine_only.sh). */
#include "chatterbox/chatterbox.h"

#include <stdio.h>

int main(void) {
    chatterbox_engine_params params = chatterbox_engine_default_params();
    params.model_path = "/nonexistent/model.gguf";
    chatterbox_engine *engine = NULL;
    if (chatterbox_engine_load(&params, &engine) == CHATTERBOX_OK) return 1;
    printf("chatterbox %s, %zu languages; a missing model: %s\n", chatterbox_version(), chatterbox_language_count(),
           chatterbox_last_error());
    return 0;
}
