#pragma once
// How the process heap treats the engine's large buffers (glibc; elsewhere nothing changes).
//
// Graph compute buffers and per-call windows of mel and audio are allocated and freed over and
// over, at sizes that change with every sentence. glibc serves a large block with mmap until one
// is freed, then raises its mmap threshold to that size (up to 32 MiB) and serves the later ones
// from the heap, where blocks of ever-different sizes leave holes it never returns: the chatterbox
// tool's peak memory grew ~66 KB per sentence of a long text (640 sentences: +42 MB, tiny model)
// and started 110 MB higher. With the threshold fixed at 1 MiB, blocks of 1 MiB and more are mapped
// and unmapped every time: flat (+6 MB over 320 sentences, bench/README.md "Long text").

namespace chatterbox {

// Fixes glibc's mmap threshold at 1 MiB (mallopt M_MMAP_THRESHOLD), once per process, unless the
// user set MALLOC_MMAP_THRESHOLD_ in the environment. Called when a Backend is made.
void keep_large_buffers_off_the_heap();

} // namespace chatterbox
