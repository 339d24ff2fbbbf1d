#!/bin/bash
# Kubernetes' preStop hook: first waits CHATTERBOX_PRESTOP_SECONDS (5) while the pod leaves the
# Service's endpoints (requests still arriving meanwhile are served), then drains the server
# (SIGTERM to process 1: /ready turns 503, new requests get 503, those in flight finish) and returns
# once it has exited, or after the drain time and a margin. terminationGracePeriodSeconds must cover
# both waits.
set -uo pipefail
sleep "${CHATTERBOX_PRESTOP_SECONDS:-5}"
kill -TERM 1
for ((i = 0; i < (${CHATTERBOX_DRAIN_SECONDS:-30} + 5) * 10; ++i)); do
  [[ -e /proc/1 ]] || exit 0
  sleep 0.1
done
