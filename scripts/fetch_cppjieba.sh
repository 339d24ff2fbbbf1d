#!/usr/bin/env bash
# Fetch cppjieba (header-only C++ jieba, MIT) with its limonp headers and jieba's dictionary and HMM
# model from the npm package nodejieba, which carries them unmodified; verify the tarball's sha512 and
# lay out <dest>/include, <dest>/dict (jieba.dict.utf8, hmm_model.utf8) and LICENSE. The native addon
# is not built. Idempotent: does nothing when <dest> already holds this exact pin.
#
#   usage: fetch_cppjieba.sh <dest-dir>
#   env:   CPPJIEBA_NPM_TARBALL use this local .tgz instead of asking the registry
set -euo pipefail

# nodejieba 3.5.8 = cppjieba v5.x (submodules/cppjieba) with limonp (deps/limonp).
PKG="nodejieba"
VER="3.5.8"
SHA512="4c5883620115981810c00af5b158fb7abaf70a7db5ab13314cb03e2d3115a8a706aa0c09ba89c9116d20ea81f6fbb16130a25f916b2f963d52693ad65ded50f7"
SUB="package/submodules/cppjieba"

DEST="${1:?usage: fetch_cppjieba.sh <dest-dir>}"
STAMP_WANT="$PKG@$VER $SHA512"
[[ -f "$DEST/.stamp" && "$(cat "$DEST/.stamp")" == "$STAMP_WANT" ]] && exit 0

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
TGZ="${CPPJIEBA_NPM_TARBALL:-}"
if [[ -z "$TGZ" ]]; then
  command -v npm >/dev/null || { echo "fetch_cppjieba: npm not found (run scripts/setup.sh)" >&2; exit 1; }
  ( cd "$WORK" && npm pack "$PKG@$VER" --cache "$WORK/npm-cache" --silent >/dev/null )
  TGZ="$(ls "$WORK"/*.tgz)"
fi
echo "$SHA512  $TGZ" | sha512sum --check --status || { echo "fetch_cppjieba: sha512 mismatch for $TGZ" >&2; exit 1; }

OUT="$WORK/out"
mkdir -p "$OUT/include" "$OUT/dict" "$WORK/x"
tar -xzf "$TGZ" -C "$WORK/x" "$SUB/include" "$SUB/deps/limonp/include" "$SUB/LICENSE" \
  "$SUB/dict/jieba.dict.utf8" "$SUB/dict/hmm_model.utf8"
cp -r "$WORK/x/$SUB/include/cppjieba" "$WORK/x/$SUB/deps/limonp/include/limonp" "$OUT/include/"
cp "$WORK/x/$SUB/dict/jieba.dict.utf8" "$WORK/x/$SUB/dict/hmm_model.utf8" "$OUT/dict/"
cp "$WORK/x/$SUB/LICENSE" "$OUT/LICENSE"
echo "$STAMP_WANT" > "$OUT/.stamp"
mkdir -p "$(dirname "$DEST")"
rm -rf "$DEST"
mv "$OUT" "$DEST"
echo "fetch_cppjieba: cppjieba and its dictionary ready in $DEST" >&2
