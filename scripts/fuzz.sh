#!/usr/bin/env bash
# Build the libFuzzer fuzzers (build-fuzz/: clang, ASan + UBSan + libFuzzer; tests/fuzz/) and run
# each in turn for SECONDS (default 60) on its committed seeds (tests/fuzz/corpus/<name>/).
# What a fuzzer finds stops the run, with the input under build-fuzz/fuzz-work/<name>/.
#
#   usage: scripts/fuzz.sh [SECONDS] [NAME...]    e.g. scripts/fuzz.sh 600 gguf voice
#   CI (.ci/run): the same build, then ctest --test-dir build-fuzz -L fuzz (CHATTERBOX_FUZZ_SECONDS each)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build-fuzz"
SECONDS_EACH="${1:-60}"
shift || true
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCHATTERBOX_FUZZ=ON -DCHATTERBOX_TESTS=OFF
fi
cmake --build "$BUILD" --target fuzzers -j"$(nproc)"
names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
  for src in "$ROOT"/tests/fuzz/fuzz_*.cpp; do
    name="$(basename "$src" .cpp)"
    names+=("${name#fuzz_}")
  done
fi
for name in "${names[@]}"; do
  echo "== fuzz_$name: ${SECONDS_EACH} s"
  log="$BUILD/fuzz-work/$name.log"
  mkdir -p "$BUILD/fuzz-work"
  rc=0
  "$ROOT/tests/fuzz/run_fuzzer.sh" "$BUILD/tests/fuzz/fuzz_$name" "$ROOT/tests/fuzz/corpus/$name" \
    "$BUILD/fuzz-work/$name" "$SECONDS_EACH" >"$log" 2>&1 || rc=$?
  grep -E '^(#[0-9]+[[:space:]]+DONE|==[0-9]+==|SUMMARY|.*runtime error|stat::number_of_executed_units|Test unit written)' "$log" || true
  if [[ $rc -ne 0 ]]; then
    echo "fuzz_$name found a problem (exit $rc): $log, input under $BUILD/fuzz-work/$name/"
    exit 1
  fi
done
