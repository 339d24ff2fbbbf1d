#!/usr/bin/env bash
# The GPU verification in one run, for a machine with an NVIDIA GPU: builds the CUDA build, runs the
# gpu-labelled tests (the golden stages, the chained golden cases, the C API pipeline and the
# CPU-against-GPU comparison on the GPU: ctest -L gpu), then the pipeline benchmark on the GPU for
# English and Turbo at f16 and q8_0 (10 s of speech, single request) and the batched T3 and flow
# benchmarks, and writes everything into the results folder. Correctness first: the benchmarks run
# only when the gpu tests pass, unless --bench-anyway.
#
#   usage: scripts/gpu-check.sh [--no-build] [--bench-anyway] [results-dir]   (default: gpu-check-results)
#   env:   CHATTERBOX_CUDA_ARCHITECTURES  GPU architectures to build (default: native, this machine's GPU)
#          GPU_CHECK_BUILD                the CUDA build folder (default: build-cuda)
#
# It needs what scripts/setup.sh needs (Debian 12's packages, installed beforehand: it runs
# setup.sh --no-apt) plus the CUDA toolkit and an NVIDIA driver.
#
# results-dir gets: summary.txt (what passed, the RTFs), gpu.txt (nvidia-smi), build.log, ctest-gpu.log
# and ctest-gpu.xml (JUnit), cli-cuda.*, bench-*.txt and bench-*.json. Exit status: 0 when the gpu
# tests passed and every benchmark ran.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${GPU_CHECK_BUILD:-$ROOT/build-cuda}"
BUILD_STEP=1
BENCH_ANYWAY=0

while [[ "${1:-}" == --* ]]; do
  case "$1" in
    --no-build) BUILD_STEP=0 ;;
    --bench-anyway) BENCH_ANYWAY=1 ;;
    *) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
OUT="$(mkdir -p "${1:-$ROOT/gpu-check-results}" && cd "${1:-$ROOT/gpu-check-results}" && pwd)"
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }
failed=0

note "gpu-check $(date -u +%FT%TZ) at $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi >"$OUT/gpu.txt" 2>&1
  note "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
else
  note "GPU: nvidia-smi not found"
fi

if ((BUILD_STEP)); then
  start=$SECONDS
  if CHATTERBOX_CUDA_ARCHITECTURES="${CHATTERBOX_CUDA_ARCHITECTURES:-native}" \
       "$ROOT/scripts/setup.sh" --no-apt --cuda "$BUILD" >"$OUT/build.log" 2>&1; then
    note "build: ok in $((SECONDS - start)) s ($BUILD, architectures ${CHATTERBOX_CUDA_ARCHITECTURES:-native})"
  else
    note "build: FAILED after $((SECONDS - start)) s (build.log)"
    exit 1
  fi
fi

start=$SECONDS
ctest --test-dir "$BUILD" -L gpu --output-on-failure --output-junit "$OUT/ctest-gpu.xml" >"$OUT/ctest-gpu.log" 2>&1
tests_rc=$?
note "gpu tests: $(grep -E 'tests passed|tests failed' "$OUT/ctest-gpu.log" | tail -1) in $((SECONDS - start)) s (rc $tests_rc)"
grep -E '^\s+[0-9]+ - |Skipped|SKIPPED' "$OUT/ctest-gpu.log" | sed 's/^/  /' | tee -a "$SUMMARY" >/dev/null
((tests_rc == 0)) || failed=1
# The command line on the GPU, as a user runs it (the tiny model of the tests' fixtures).
if "$BUILD/chatterbox" -m "$BUILD/tiny/model.gguf" --backend cuda -o "$OUT/cli-cuda.wav" \
     "The command line speaks on the GPU." >"$OUT/cli-cuda.txt" 2>&1; then
  note "cli --backend cuda: ok ($(grep -m1 -iE 'cuda' "$OUT/cli-cuda.txt"))"
else
  note "cli --backend cuda: FAILED: $(tail -2 "$OUT/cli-cuda.txt")"
  failed=1
fi
if ((tests_rc != 0 && !BENCH_ANYWAY)); then
  note "benchmarks: not run (the gpu tests failed; --bench-anyway runs them)"
  exit 1
fi

# Model folders of the synthetic weights the test fixtures generated, with the golden tokenizers,
# converted to each benchmarked type.
MODELS="$BUILD/gpu-check-models"
mkdir -p "$MODELS/english" "$MODELS/turbo"
for f in ve.safetensors t3_cfg.safetensors s3gen.safetensors; do ln -sf "$BUILD/synthetic/$f" "$MODELS/english/$f"; done
cp "$ROOT/tests/data/golden/tokenizer.json" "$MODELS/english/"
for f in ve.safetensors t3_turbo_v1.safetensors s3gen_meanflow.safetensors; do
  ln -sf "$BUILD/turbo-synthetic/$f" "$MODELS/turbo/$f"
done
cp "$ROOT"/tests/data/turbo/tokenizer/* "$ROOT/tests/data/turbo/conds.pt" "$MODELS/turbo/"
VOICE="$ROOT/tests/data/golden/ref_voice.wav"

bench() { # name, then chatterbox-bench arguments
  local name="$1"; shift
  local start=$SECONDS
  if "$BUILD/chatterbox-bench" --device cuda --json "$OUT/bench-$name.json" "$@" >"$OUT/bench-$name.txt" 2>&1; then
    note "bench $name: ok in $((SECONDS - start)) s; $(grep -iE 'rtf|real-time' "$OUT/bench-$name.txt" | head -2 | tr -s ' ' | tr '\n' ';')"
  else
    note "bench $name: FAILED (bench-$name.txt)"
    failed=1
  fi
}
for variant in english turbo; do
  for type in f16 q8_0; do
    gguf="$MODELS/$variant-$type.gguf"
    if [[ ! -f "$gguf" ]] && ! "$BUILD/chatterbox-convert" "$MODELS/$variant" -o "$gguf" --type "$type" \
                                 >"$OUT/convert-$variant-$type.txt" 2>&1; then
      note "convert $variant $type: FAILED (convert-$variant-$type.txt)"
      failed=1
      continue
    fi
    # 250 speech tokens = 10 s of speech, fixed by --ignore-eos so every run says the same length.
    bench "pipeline-$variant-$type" pipeline --weights "$gguf" --voice "$VOICE" --max-tokens 250 --ignore-eos --no-bandwidth
  done
  # 256 tokens: with 64, on an H200 the first requests ended before the last had joined.
  bench "batch-$variant-f16" batch --weights "$MODELS/$variant-f16.gguf" --requests 1 2 4 8 16 --tokens 256 \
    --rounds 1
  bench "flow-batch-$variant-f16" flow-batch --weights "$MODELS/$variant-f16.gguf" --requests 1 4 16 --rounds 1
  bench "vocoder-batch-$variant-f16" vocoder-batch --weights "$MODELS/$variant-f16.gguf" --requests 1 4 16 --rounds 1
done
note "done: $( ((failed)) && echo 'something FAILED' || echo 'all passed and ran')"
exit "$failed"
