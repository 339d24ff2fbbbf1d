#!/usr/bin/env bash
# T3 decode and CFM steps of a short S3Gen request with one competing CPU-bound process on the machine:
# 1 thread, 2 fixed threads and 2 adaptive threads (the default), interleaved over ROUNDS rounds.
#
#   usage: bench/busy_machine.sh MODEL.gguf [ROUNDS=3] [build-dir=build]
# The competitor is one shell busy loop, killed on exit (and after 30 minutes at most).
set -euo pipefail
MODEL="$1"; ROUNDS="${2:-3}"; BUILD="${3:-build}"
BENCH="$BUILD/chatterbox-bench"
timeout 1800 bash -c 'while :; do :; done' &
COMPETITOR=$!
trap 'kill $COMPETITOR 2>/dev/null || true' EXIT
configs=("--threads 1 --fixed-threads" "--threads 2 --fixed-threads" "--threads 2")
for ((round = 1; round <= ROUNDS; ++round)); do
  for cfg in "${configs[@]}"; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    t3=$($BENCH $cfg t3 --weights "$MODEL" --tokens 32 --no-bandwidth 2>/dev/null | awk '$1 ~ /^q|^f/ {print $7}')
    s3=$($BENCH $cfg s3gen --weights "$MODEL" --prompt-tokens 25 --tokens 25 --repeats 1 2>/dev/null |
         awk '$1 ~ /^q|^f/ {print $7}')
    printf 'round %d  %-28s load %5s  T3 decode median %7s ms/token  CFM step (T = 100) median %7s ms\n' "$round" "$cfg" "$load" "$t3" "$s3"
  done
done
