#!/usr/bin/env bash
# Runs one libFuzzer binary for SECONDS on its committed seeds, growing a working corpus outside
# the source tree; a crash, hang (> 10 s per input), leak or sanitizer report fails with the input
# saved under WORK/ (add it to the seeds once fixed, so the regression stays covered).
#
#   usage: tests/fuzz/run_fuzzer.sh FUZZER SEEDS WORK SECONDS [libFuzzer options...]
set -euo pipefail
fuzzer=$1 seeds=$2 work=$3 seconds=$4
shift 4
mkdir -p "$work/corpus"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2560 -malloc_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$work/" "$@" "$work/corpus" "$seeds"
