/* Compiler workaround for ggml-cpu (first on its include path, see cmake/ggml.cmake).
 *
 * GCC 12's <amxtileintrin.h> gives ldtilecfg/sttilecfg an 8-byte memory operand, so at -O2 the
 * stores that fill the rest of a 64-byte tile configuration on the stack are deleted as dead and
 * the first tile load faults (SIGILL) or ldtilecfg reads stack garbage. GCC 13 uses builtins. This
 * header keeps GCC's definitions and routes the two intrinsics to versions whose operand is the
 * whole 64-byte configuration. */
#include_next <amxtileintrin.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13 && \
    !defined(CHATTERBOX_AMX_TILE_CONFIG_FIX)
#define CHATTERBOX_AMX_TILE_CONFIG_FIX 1

struct chatterbox_tile_config_bytes {
    unsigned char bytes[64];
};

static __inline__ __attribute__((__always_inline__)) void chatterbox_tile_loadconfig(const void *config) {
    __asm__ volatile("ldtilecfg\t%X0" ::"m"(*(const struct chatterbox_tile_config_bytes *)config));
}

static __inline__ __attribute__((__always_inline__)) void chatterbox_tile_storeconfig(void *config) {
    __asm__ volatile("sttilecfg\t%X0" : "=m"(*(struct chatterbox_tile_config_bytes *)config));
}

#define _tile_loadconfig(config) chatterbox_tile_loadconfig(config)
#define _tile_storeconfig(config) chatterbox_tile_storeconfig(config)
#endif
