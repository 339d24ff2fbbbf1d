#!/usr/bin/env bash
# Fetch ggml's sources from the npm package that carries an unmodified llama.cpp tree,
# verify the tarball's sha512 and lay out <dest>/ggml plus LICENSE, and llama.cpp's vendored
# cpp-httplib (MIT; httplib.h, httplib.cpp, LICENSE) in <dest>/cpp-httplib for chatterbox-server.
# Idempotent: does nothing when <dest> already holds this exact pin and layout. The verified
# tarball is kept in a cache so a rebuild does not download 196 MB again.
#
#   usage: fetch_ggml.sh <dest-dir>
#   env:   GGML_NPM_CACHE   folder that keeps the verified tarball (default ~/.cache/ggml-npm)
#          GGML_NPM_TARBALL use this local .tgz instead of asking the registry
set -euo pipefail

# @novastera-oss/llamarn 0.10.5 = llama.cpp b10679 (commit 50f068fff), ggml 0.22.0, cpp-httplib 0.53.1.
PKG="@novastera-oss/llamarn"
VER="0.10.5"
SRI="sha512-PwuY8rMTnrNv5qMfFSXSVoyraRoE9gg+PWd3AsA23ZvVqPs/Bae6MxK7bzn7OrR76AY4JG9FC0rbkqTTZLDUSg=="
SHA512="3f0b98f2b3139eb36fe6a31f1525d2568cab691a04f6083e3d677702c036dd9bd5a8fb3f05a7ba3312bb6f39fb3ab47be80638246f450b4adb92a4d364b0d44a"
SUB="package/cpp/llama.cpp"

DEST="${1:?usage: fetch_ggml.sh <dest-dir>}"
STAMP_WANT="$PKG@$VER $SRI ggml cpp-httplib"
if [[ -f "$DEST/.stamp" && "$(cat "$DEST/.stamp")" == "$STAMP_WANT" ]]; then
  exit 0
fi

WORK=""; TMPD=""
cleanup() { [[ -n "$WORK" ]] && rm -rf "$WORK"; [[ -n "$TMPD" && -d "$TMPD" ]] && rm -rf "$TMPD"; true; }
trap cleanup EXIT

CACHE="${GGML_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ggml-npm}"
mkdir -p "$CACHE"
TGZ="${GGML_NPM_TARBALL:-$CACHE/llamarn-$VER.tgz}"

verify() { echo "$SHA512  $1" | sha512sum --check --status; }

if [[ ! -f "$TGZ" ]] || ! verify "$TGZ"; then
  [[ -n "${GGML_NPM_TARBALL:-}" ]] && { echo "fetch_ggml: $TGZ fails the sha512 check" >&2; exit 1; }
  command -v npm >/dev/null || { echo "fetch_ggml: npm not found (run scripts/setup.sh)" >&2; exit 1; }
  WORK="$(mktemp -d)"
  echo "fetch_ggml: npm pack $PKG@$VER (about 196 MB)" >&2
  ( cd "$WORK" && npm pack "$PKG@$VER" --cache "$WORK/npm-cache" --silent >/dev/null )
  F="$(ls "$WORK"/*.tgz)"
  verify "$F" || { echo "fetch_ggml: sha512 mismatch for $F" >&2; exit 1; }
  mv "$F" "$TGZ"
fi

mkdir -p "$(dirname "$DEST")"
TMPD="$(mktemp -d "${DEST%/}.tmp.XXXXXX")"
tar -xzf "$TGZ" -C "$TMPD" --strip-components=3 "$SUB/ggml" "$SUB/LICENSE"
mkdir "$TMPD/cpp-httplib"
tar -xzf "$TGZ" -C "$TMPD/cpp-httplib" --strip-components=5 "$SUB/vendor/cpp-httplib/httplib.h" \
  "$SUB/vendor/cpp-httplib/httplib.cpp" "$SUB/vendor/cpp-httplib/LICENSE"
for f in ggml/CMakeLists.txt ggml/include/ggml.h ggml/include/gguf.h \
         ggml/include/ggml-backend.h ggml/src/ggml-cpu/ggml-cpu.c ggml/src/ggml-cuda/ggml-cuda.cu \
         cpp-httplib/httplib.h cpp-httplib/httplib.cpp cpp-httplib/LICENSE; do
  [[ -f "$TMPD/$f" ]] || { echo "fetch_ggml: missing $f" >&2; exit 1; }
done
chmod 755 "$TMPD"
echo "$STAMP_WANT" > "$TMPD/.stamp"
rm -rf "$DEST"
mv "$TMPD" "$DEST"
TMPD=""
echo "fetch_ggml: ggml and cpp-httplib sources ready in $DEST" >&2
