#!/bin/bash
# The image's entry point: chatterbox-server with its options from the environment (a Kubernetes
# ConfigMap, podman run -e) and any flags given after the image name, which come last and so win:
#
#   CHATTERBOX_PORT (8080)   CHATTERBOX_HOST (0.0.0.0)   CHATTERBOX_MODEL (/models/chatterbox)
#   CHATTERBOX_VOICES (/voices)   CHATTERBOX_THREADS (all CPUs this container may use)
#   CHATTERBOX_SESSIONS   CHATTERBOX_QUEUE   CHATTERBOX_DRAIN_SECONDS (30)
#   CHATTERBOX_EXTRA_ARGS (more flags, split on spaces)   CHATTERBOX_API_KEY (read by the server)
#
# exec: the server is the container's process 1 and takes SIGTERM itself (it drains: new requests
# get 503, those in flight finish for up to the drain time, then it exits 0).
set -euo pipefail
args=(--host "${CHATTERBOX_HOST:-0.0.0.0}" --port "${CHATTERBOX_PORT:-8080}"
      -m "${CHATTERBOX_MODEL:-/models/chatterbox}" --voices "${CHATTERBOX_VOICES:-/voices}"
      --drain-seconds "${CHATTERBOX_DRAIN_SECONDS:-30}"
      -t "${CHATTERBOX_THREADS:-$(nproc)}")
[[ -n "${CHATTERBOX_SESSIONS:-}" ]] && args+=(--sessions "$CHATTERBOX_SESSIONS")
[[ -n "${CHATTERBOX_QUEUE:-}" ]] && args+=(--queue "$CHATTERBOX_QUEUE")
read -r -a extra <<<"${CHATTERBOX_EXTRA_ARGS:-}"
exec /usr/local/bin/chatterbox-server "${args[@]}" "${extra[@]}" "$@"
