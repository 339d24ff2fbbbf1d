#!/usr/bin/env bash
# Checks that the engine library stands alone: PROGRAM, a C program of the C API linked against
# `chatterbox` alone with every object of the engine in it (tests/CMakeLists.txt), runs; it, and the
# engine's shared library where the build has one (the CUDA build's), name no HTTP, audio encoder or
# GPL library among their direct dependencies and hold none of those libraries' symbols, nor any
# function of the server's or the tools' libraries (OTHER_LIBRARY...).
#
#   usage: engine_only.sh PROGRAM ENGINE_LIBRARY OTHER_LIBRARY...
set -euo pipefail
program="$1" engine="$2"
shift 2
problems=0
report() { echo "engine_only: $*" >&2; problems=$((problems + 1)); }

"$program" || report "$program failed"

# HTTP (cpp-httplib, libcurl, OpenSSL), the server's audio encoders (FFmpeg's libraries, LAME,
# Vorbis's and Opus's encoders, FLAC) and GPL libraries (KAKASI, which the engine opens at run time
# instead; Debian's libavcodec is GPL-2+ too). libsndfile is allowed: it is the engine's reader of
# audio files (what it links in turn is its own business).
bad_library='^lib(cpp-httplib|curl|curl-gnutls|ssl|crypto|avcodec|avformat|avutil|swresample|mp3lame|vorbisenc|opus|FLAC|kakasi)\.so'
bad_symbol='httplib::|(^| )(curl|avcodec|avformat|swr|av_packet|lame|vorbis_encode|opus_encode|FLAC__stream_encoder|kakasi)_[a-z]'
binaries=("$program")
[[ "$engine" == *.so* ]] && binaries+=("$engine")
for binary in "${binaries[@]}"; do
  while read -r needed; do
    [[ "$needed" =~ $bad_library ]] && report "$(basename "$binary") needs $needed"
  done < <(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
  while read -r symbol; do
    report "$(basename "$binary") has the symbol $symbol"
  done < <({ nm -C "$binary" 2>/dev/null; nm -D -C "$binary"; } | grep -E "$bad_symbol" | sed 's/^ *[0-9a-f]* //' | sort -u)
done

# The functions the other libraries define (strong: a weak definition is a header's inline code,
# which both sides may instantiate), against everything the program and the engine define.
others="$(mktemp)" ours="$(mktemp)"
trap 'rm -f "$others" "$ours"' EXIT
for library in "$@"; do nm --defined-only "$library" 2>/dev/null; done | awk '$2 == "T" { print $3 }' | sort -u >"$others"
[[ -s "$others" ]] || report "no functions found in $*"
for binary in "${binaries[@]}"; do nm --defined-only "$binary"; nm -D --defined-only "$binary"; done 2>/dev/null |
  awk '{ print $NF }' | sort -u >"$ours"
while read -r symbol; do
  report "the engine has $(c++filt "$symbol"), a function of the server's or the tools' libraries"
done < <(comm -12 "$others" "$ours")

if ((problems)); then
  echo "engine_only: $problems problems" >&2
  exit 1
fi
echo "engine_only: $(basename "$program") needs no HTTP, encoder or GPL library, and no server or tools code"
