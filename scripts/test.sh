#!/usr/bin/env bash
# Build (incrementally) and run the whole test suite.
#
#   usage: scripts/test.sh [--sanitize | --tsan | --cuda] [ctest arguments...]
#     --sanitize   use a separate ASan+UBSan build (build-sanitize/) instead of build/
#     --tsan       use a separate ThreadSanitizer build (build-tsan/, ggml included)
#     --cuda       use the CUDA build that scripts/setup.sh --cuda made (build-cuda/)
#   e.g. scripts/test.sh --tsan -R e2e.test_sessions;  scripts/test.sh --cuda -L gpu
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build"
CONFIG=(-DCMAKE_BUILD_TYPE=Release)
# A new warning in the project's own code fails the build (CI runs this script on a clean clone).
WERROR=(-DCHATTERBOX_WERROR=ON)
if [[ "${1:-}" == "--sanitize" ]]; then
  shift
  BUILD="$ROOT/build-sanitize"
  WERROR=()
  CONFIG=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCHATTERBOX_SANITIZE=ON)
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
elif [[ "${1:-}" == "--tsan" ]]; then
  shift
  BUILD="$ROOT/build-tsan"
  WERROR=()
  CONFIG=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCHATTERBOX_TSAN=ON)
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
elif [[ "${1:-}" == "--cuda" ]]; then
  shift
  BUILD="$ROOT/build-cuda"
  [[ -f "$BUILD/CMakeCache.txt" ]] || { echo "test: no CUDA build in $BUILD (run scripts/setup.sh --cuda)" >&2; exit 1; }
fi
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja "${CONFIG[@]}" "${WERROR[@]}"
elif [[ ${#WERROR[@]} -gt 0 && "$BUILD" == "$ROOT/build" ]]; then
  cmake "$BUILD" "${WERROR[@]}" >/dev/null # an existing build (scripts/setup.sh's) gets it too
fi
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)" "$@"
