#!/usr/bin/env bash
# ctest deploy.image: scripts/image.sh builds the image from this build folder's programs, and a
# container of it, on the tiny model, answers /health (and its HEALTHCHECK passes), synthesizes a
# sentence, stores a voice in its volume as its non-root user, and exits 0 within the drain time on
# SIGTERM. Where this machine cannot run containers, it says why and runs the image's root file
# system's server under unshare + chroot instead (same files, same user, same entry point), so the
# image's contents are still proven to work.
#
# Building the image takes minutes (a debootstrap the first time on a machine, then ~1.5 min), so it
# is opt-in outside CI (CHATTERBOX_IMAGE_TEST=1 runs it, =0 never) and runs in CI (CI=true) once per
# change of what makes the image: after a pass there, the SHA-256 of deploy/container/,
# .containerignore, scripts/image.sh, scripts/deploy-packages.txt and this file is kept in the image
# cache, and a CI run that finds the same stamp says so and is skipped (77). Skipped runs print why.
# CHATTERBOX_IMAGE_RUNNER=chroot takes the no-container path even where podman works.
#
#   env: CHATTERBOX_BUILD_DIR, CHATTERBOX_TINY_MODEL (set by ctest)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${CHATTERBOX_BUILD_DIR:?}"
MODEL="${CHATTERBOX_TINY_MODEL:?}"
CACHE="${CHATTERBOX_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chatterbox/image}"
TAG="localhost/chatterbox-server:test"
DRAIN_SECONDS=20

stamp="$(cd "$ROOT" && find deploy/container .containerignore scripts/image.sh scripts/deploy-packages.txt \
  tests/deploy/image_test.sh -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-64)"
case "${CHATTERBOX_IMAGE_TEST:-auto}" in
  0) echo "skipped: CHATTERBOX_IMAGE_TEST=0"; exit 77 ;;
  1) ;;
  *) if [[ "${CI:-}" != true ]]; then
       echo "skipped: opt-in outside CI (CHATTERBOX_IMAGE_TEST=1 runs it; CI runs it once per change of the image's recipe)"
       exit 77
     fi
     if [[ "$(cat "$CACHE/verified.stamp" 2>/dev/null)" == "$stamp" ]]; then
       echo "skipped: the image's recipe is unchanged since it last passed in CI on this machine (stamp $stamp in $CACHE;"
       echo "CHATTERBOX_IMAGE_TEST=1 runs it anyway)"
       exit 77
     fi ;;
esac
for tool in buildah debootstrap curl; do
  command -v "$tool" >/dev/null || { echo "skipped: no $tool (run scripts/deploy-tools.sh)"; exit 77; }
done
[[ $(id -u) -eq 0 ]] || { echo "skipped: building an image needs root"; exit 77; }

WORK="$(mktemp -d)"
server_pid="" container="" mounted=""
cleanup() {
  [[ -n "$server_pid" ]] && kill -KILL "$server_pid" 2>/dev/null
  [[ -n "$container" ]] && podman rm --force "$container" >/dev/null 2>&1
  [[ -n "$mounted" ]] && buildah rm "$mounted" >/dev/null 2>&1
  buildah rmi "$TAG" >/dev/null 2>&1 # ~450 MiB a build; the debootstrap'ed base stays for the next
  rm -rf "$WORK"
  true
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
seconds_since() { echo "$(($(date +%s%N) / 1000000 - $1))"; }
now_ms() { echo "$(($(date +%s%N) / 1000000))"; }

started=$(now_ms)
"$ROOT/scripts/image.sh" --build-dir "$BUILD" --tag "$TAG" >"$WORK/image.log" 2>&1 ||
  { tail -30 "$WORK/image.log"; fail "scripts/image.sh failed"; }
echo "image: $TAG built in $(($(seconds_since "$started") / 1000)) s; $(buildah inspect --type image --format '{{.Docker.Config.User}} user, healthcheck {{.Docker.Config.Healthcheck.Test}}, entrypoint {{.Docker.Config.Entrypoint}}' "$TAG")"
echo "image: $(($(podman image inspect --format '{{.Size}}' "$TAG" 2>/dev/null || echo 0) / 1048576)) MiB"

# The volumes: the model read-only, the voice library writable by the image's user (10001).
mkdir -p "$WORK/models" "$WORK/voices"
cp "$MODEL" "$WORK/models/model.gguf"
chown 10001:10001 "$WORK/voices"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ENVIRONMENT=(CHATTERBOX_HOST=127.0.0.1 CHATTERBOX_PORT="$port" CHATTERBOX_MODEL=/models/model.gguf
             CHATTERBOX_THREADS=1 CHATTERBOX_DRAIN_SECONDS="$DRAIN_SECONDS")

runner="${CHATTERBOX_IMAGE_RUNNER:-podman}"
if [[ "$runner" == podman ]]; then
  # Loopback only (--network host, the server on 127.0.0.1). runc: crun refuses hybrid cgroups. Limits
  # no higher than this shell's (podman's defaults are higher): raising one needs CAP_SYS_RESOURCE,
  # which a sandbox may lack.
  podman_args=(--runtime runc run --detach --network host --name "chatterbox-image-test-$$"
               --ulimit "nofile=$(ulimit -n):$(ulimit -n)" --ulimit "nproc=4096:4096"
               -v "$WORK/models:/models:ro" -v "$WORK/voices:/voices")
  for variable in "${ENVIRONMENT[@]}"; do podman_args+=(-e "$variable"); done
  if container=$(podman "${podman_args[@]}" "$TAG" 2>"$WORK/podman.err"); then
    echo "runner: podman (runc), container ${container:0:12}"
  else
    podman rm --force "chatterbox-image-test-$$" >/dev/null 2>&1 # created, not started
    echo "this machine cannot run containers: $(tail -1 "$WORK/podman.err")"
    echo "running the image's root file system's server under unshare + chroot instead"
    container="" runner=chroot
  fi
fi
if [[ "$runner" == chroot ]]; then
  mounted=$(buildah from --pull-never "$TAG")
  rootfs=$(buildah mount "$mounted")
  # A mount namespace of its own for the volumes, /proc and /dev; then the image's user, environment
  # and entry point, as the image's config says. The process keeps unshare's pid through the execs.
  entrypoint=$(buildah inspect --type image --format '{{index .Docker.Config.Entrypoint 0}}' "$TAG")
  unshare --mount --propagation private -- bash -c '
    set -e; rootfs="$1"; work="$2"; shift 2
    mount --bind "$work/models" "$rootfs/models"; mount -o remount,bind,ro "$rootfs/models"
    mount --bind "$work/voices" "$rootfs/voices"
    mount -t proc proc "$rootfs/proc"; mount --rbind /dev "$rootfs/dev"
    exec chroot --userspec=10001:10001 "$rootfs" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin "$@"
  ' runner "$rootfs" "$WORK" "${ENVIRONMENT[@]}" "$entrypoint" >"$WORK/server.log" 2>&1 &
  server_pid=$!
  echo "runner: unshare + chroot into $rootfs as 10001:10001"
fi
server_log() { if [[ -n "$container" ]]; then podman logs "$container" 2>&1; else cat "$WORK/server.log"; fi; }
running() { if [[ -n "$container" ]]; then [[ "$(podman inspect --format '{{.State.Running}}' "$container")" == true ]]; else kill -0 "$server_pid" 2>/dev/null; fi; }

# /health within a minute.
started=$(now_ms)
until curl -fsS "http://127.0.0.1:$port/health" >"$WORK/health.json" 2>/dev/null; do
  running || { server_log | tail -20; fail "the server exited before answering /health"; }
  (($(seconds_since "$started") < 60000)) || { server_log | tail -20; fail "no /health within 60 s"; }
  sleep 0.2
done
echo "/health after $(seconds_since "$started") ms: $(cat "$WORK/health.json")"
if [[ -n "$container" ]]; then
  podman healthcheck run "$container" >/dev/null || fail "the image's HEALTHCHECK fails"
  echo "HEALTHCHECK (podman healthcheck run): healthy"
else
  chroot --userspec=10001:10001 "$rootfs" /usr/bin/env -i CHATTERBOX_PORT="$port" /usr/local/bin/chatterbox-healthcheck ||
    fail "the image's HEALTHCHECK script fails"
  echo "HEALTHCHECK script in the root file system: healthy"
fi

# A sentence on the tiny model.
code=$(curl -sS -o "$WORK/speech.wav" -w '%{http_code}' "http://127.0.0.1:$port/v1/audio/speech" -H 'Content-Type: application/json' \
  -d '{"input": "Hello from the container.", "voice": "alloy", "seed": 1, "max_new_tokens": 20, "response_format": "wav"}')
[[ "$code" == 200 ]] || fail "speech answered $code: $(head -c 300 "$WORK/speech.wav")"
[[ "$(head -c 4 "$WORK/speech.wav")" == RIFF && $(stat -c %s "$WORK/speech.wav") -gt 1000 ]] || fail "speech is no wav"
echo "speech: 200, $(stat -c %s "$WORK/speech.wav") bytes of wav"

# A voice stored in the volume by the image's user.
code=$(curl -sS -o "$WORK/voice.json" -w '%{http_code}' "http://127.0.0.1:$port/v1/audio/voices" \
  -F name=container -F "file=@$ROOT/tests/data/golden/ref_voice.wav")
[[ "$code" == 201 ]] || fail "the voice upload answered $code: $(cat "$WORK/voice.json")"
[[ "$(stat -c %u "$WORK/voices/container.voice")" == 10001 ]] || fail "the voice file is not the image user's"
echo "voice upload: 201, $WORK/voices/container.voice owned by 10001"

# SIGTERM: drained and exit 0 within the drain time.
started=$(now_ms)
if [[ -n "$container" ]]; then
  podman kill --signal TERM "$container" >/dev/null
  code=$(timeout $((DRAIN_SECONDS + 10)) podman wait "$container") || fail "still running $((DRAIN_SECONDS + 10)) s after SIGTERM"
else
  kill -TERM "$server_pid"
  code=0
  timeout $((DRAIN_SECONDS + 10)) tail --pid="$server_pid" -f /dev/null || fail "still running $((DRAIN_SECONDS + 10)) s after SIGTERM"
  wait "$server_pid" || code=$?
  server_pid=""
fi
elapsed=$(seconds_since "$started")
[[ "$code" == 0 ]] || { server_log | tail -20; fail "exit code $code after SIGTERM"; }
((elapsed <= DRAIN_SECONDS * 1000)) || fail "exit took $elapsed ms, more than the drain time"
# Read whole, not through grep -q: under pipefail, grep's early exit would fail the log's writer.
[[ "$(server_log)" == *"chatterbox-server: draining"* ]] || { server_log | tail -20; fail "the server did not say it drained"; }
echo "SIGTERM: drained, exit 0 after $elapsed ms (drain time $DRAIN_SECONDS s)"

[[ "${CI:-}" == true ]] && mkdir -p "$CACHE" && echo "$stamp" >"$CACHE/verified.stamp"
echo "deploy.image: passed with $runner (stamp $stamp)"
