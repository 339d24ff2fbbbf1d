#pragma once
// How the process heap treats the engine's large buffers (glibc; elsewhere nothing changes).
//
// Graph compute buffers and per-call windows of mel and audio are allocated and freed over and
// over, at sizes that change with every sentence. glibc serves a large block with mmap until one
// is freed, then raises its mmap threshold to that size (up to 32 MiB) and serves the later ones
// from the heap, where blocks of ever-different sizes leave holes it never returns: the chatterbox
// tool's peak memory grew ~66 KB per sentence of a long text (640 sentences: +42 MB, tiny model)
// and started 110 MB higher. With the threshold fixed at 1 MiB, blocks of 1 MiB and more are mapped
// and unmapped every time, and the heaps keep at most 64 MiB of free pages each (the trim threshold
// glibc's adjustment would reach; at its default 128 KiB the pages' return and refaulting doubled
// the flow's time): bounded, no longer growing with the text (bench/history/2026-12-06-long-text-memory.md).

namespace chatterbox {

// Fixes glibc's mmap threshold at 1 MiB and its trim threshold at 64 MiB (mallopt), once per
// process, unless the user set either in the environment. Called when a Backend is made.
void keep_large_buffers_off_the_heap();

} // namespace chatterbox
