#!/usr/bin/env bash
# Make the synthetic model (once) and speak a sentence with it in the voice of the test recording.
# Synthetic weights follow the official shapes but carry no training: the result is noise-like
# "speech" that shows the whole engine running, not what the real model sounds like (README.md
# says how to get the official model).
#
#   usage: scripts/demo.sh [BUILD_DIR] [TEXT]      (build dir default: build; writes models/demo.wav)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
TEXT="${2:-Hello from Chatterbox Engine.}"
MODEL="$ROOT/models/synthetic"

if [[ ! -f "$MODEL/t3_cfg.safetensors" ]]; then
  "$BUILD/chatterbox-convert" --synthetic --seed 0x5EEDC0DE --out "$MODEL"
fi
# The synthetic model has no tokenizer of its own: use the one the golden tests use.
cp "$ROOT/tests/data/golden/tokenizer.json" "$MODEL/tokenizer.json"
"$BUILD/chatterbox" -m "$MODEL" --voice "$ROOT/tests/data/golden/ref_voice.wav" --max-tokens 50 \
  -o "$ROOT/models/demo.wav" "$TEXT"
echo "demo: wrote models/demo.wav (synthetic weights: noise-like speech, see README.md for the real model)" >&2
