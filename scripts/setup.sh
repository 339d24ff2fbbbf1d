#!/usr/bin/env bash
# Set up a fresh Debian 12 machine and build Chatterbox Engine (Release).
# Idempotent: a second run installs nothing new and rebuilds only what changed.
#
#   usage: scripts/setup.sh [--no-apt] [--cuda] [build-dir]
#     --cuda   also build ggml's CUDA backend as a module the programs load at run time (needs the
#              CUDA toolkit, nvcc under /usr/local/cuda or on PATH; build dir default: build-cuda).
#              The same programs run on the CPU where there is no GPU or driver.
#   build dir default: build
#   env:   CHATTERBOX_CMAKE_ARGS        extra arguments for cmake's configure step
#          CHATTERBOX_CUDA_ARCHITECTURES with --cuda: the GPU architectures (default in cmake/ggml.cmake:
#                                       Ampere, Ada, Hopper, Blackwell); one, e.g. 90-real, builds faster
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
APT=1
CUDA=0
while [[ "${1:-}" == --* ]]; do
  case "$1" in
    --no-apt) APT=0 ;;
    --cuda) CUDA=1 ;;
    *) echo "setup: unknown option $1 (expected --no-apt or --cuda)" >&2; exit 2 ;;
  esac
  shift
done
CMAKE_ARGS=()
if ((CUDA)); then
  BUILD="${1:-$ROOT/build-cuda}"
  NVCC="$(command -v nvcc || true)"
  [[ -z "$NVCC" && -x /usr/local/cuda/bin/nvcc ]] && NVCC=/usr/local/cuda/bin/nvcc
  [[ -n "$NVCC" ]] || { echo "setup: --cuda needs the CUDA toolkit's nvcc (not on PATH nor in /usr/local/cuda/bin)" >&2; exit 1; }
  CMAKE_ARGS+=(-DCHATTERBOX_CUDA=ON "-DCMAKE_CUDA_COMPILER=$NVCC")
  [[ -n "${CHATTERBOX_CUDA_ARCHITECTURES:-}" ]] && CMAKE_ARGS+=("-DCHATTERBOX_CUDA_ARCHITECTURES=$CHATTERBOX_CUDA_ARCHITECTURES")
else
  BUILD="${1:-$ROOT/build}"
fi

as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

install_debian_packages() {
  local want=() missing=()
  mapfile -t want < <(grep -vE '^\s*(#|$)' "$ROOT/scripts/debian-packages.txt")
  for spec in "${want[@]}"; do
    local name="${spec%%=*}" ver="${spec#*=}"
    [[ "$(dpkg-query -W -f='${Status} ${Version}' "$name" 2>/dev/null)" == "install ok installed $ver" ]] || missing+=("$spec")
  done
  # Node for tests/js: Debian's, unless the machine has one already (a newer one is fine).
  if ! command -v node >/dev/null; then missing+=(nodejs); fi
  if ! command -v npm >/dev/null; then missing+=(npm); fi
  ((${#missing[@]})) || return 0
  echo "setup: installing ${missing[*]}" >&2
  as_root apt-get update -qq
  if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
    echo "setup: a pinned version is no longer in the archive; installing the current candidates instead" >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]%%=*}"
  fi
}

((APT)) && install_debian_packages
bash "$ROOT/scripts/fetch_ggml.sh" "$ROOT/third_party/ggml-src"
bash "$ROOT/scripts/fetch_cppjieba.sh" "$ROOT/third_party/cppjieba"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "${CMAKE_ARGS[@]}" ${CHATTERBOX_CMAKE_ARGS:-}
cmake --build "$BUILD" -j"$(nproc)"
# tests/js (ctest js.server_clients): the pinned openai and puppeteer-core, exactly as package-lock.json
# says; again only when the lock file changed since the last install.
if ! cmp -s "$ROOT/tests/js/package-lock.json" "$ROOT/tests/js/node_modules/.installed-package-lock.json"; then
  (cd "$ROOT/tests/js" && npm ci --no-audit --no-fund --loglevel=error &&
    cp package-lock.json node_modules/.installed-package-lock.json)
fi
# The deployment tests' tools (ctest -L deploy, e2e.test_server_replicas): haproxy, debootstrap, buildah,
# podman, Debian's kubectl and tests/deploy's npm packages, pinned.
if ((APT)); then bash "$ROOT/scripts/deploy-tools.sh"; else bash "$ROOT/scripts/deploy-tools.sh" --no-apt; fi
echo "setup: built into $BUILD" >&2
