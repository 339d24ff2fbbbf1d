#!/usr/bin/env bash
# Build chatterbox-server's container image (deploy/container/Containerfile) on a machine that reaches
# no container registry, only Debian's mirror: the base is a `debootstrap --variant=minbase` Debian 12
# root (what debian:bookworm-slim is), the programs come from a build folder, and Debian's buildah
# builds the Containerfile's runtime stage on them. Run it with Debian's podman, as docs/deploy.md says.
#
#   usage: scripts/image.sh [--build-dir DIR] [--tag NAME] [--refresh-base]
#     --build-dir DIR  where chatterbox-server, chatterbox and chatterbox-convert are (default: build).
#                      A default build is tuned for this machine's CPU (CHATTERBOX_NATIVE=ON); for an
#                      image that runs elsewhere, build with -DCHATTERBOX_NATIVE=OFF first.
#     --tag NAME       the image's name (default: localhost/chatterbox-server:cpu)
#     --refresh-base   debootstrap the base again (it is kept, see CHATTERBOX_IMAGE_CACHE)
#   env: CHATTERBOX_IMAGE_CACHE  folder that keeps the debootstrap'ed base between runs
#                                (default: ~/.cache/chatterbox/image)
#        CHATTERBOX_DEBIAN_MIRROR  (default: http://deb.debian.org/debian)
#
# Needs root (buildah's storage, debootstrap) and scripts/deploy-tools.sh --image's packages.
# Prints the image's name last.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build"
TAG="localhost/chatterbox-server:cpu"
REFRESH=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir)
      [[ -d "${2:-}" ]] || { echo "image: --build-dir needs a build folder (got '${2:-}')" >&2; exit 2; }
      BUILD="$(cd "$2" && pwd)"; shift ;;
    --tag) TAG="${2:?--tag needs a name}"; shift ;;
    --refresh-base) REFRESH=1 ;;
    *) echo "image: unknown argument $1 (see the usage at the top of scripts/image.sh)" >&2; exit 2 ;;
  esac
  shift
done
CACHE="${CHATTERBOX_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chatterbox/image}"
MIRROR="${CHATTERBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
BASE_IMAGE="localhost/chatterbox-debian-minbase:bookworm"
BINARIES_IMAGE="localhost/chatterbox-binaries:latest"

for tool in debootstrap buildah; do
  command -v "$tool" >/dev/null || { echo "image: $tool is missing: run scripts/deploy-tools.sh --image" >&2; exit 1; }
done
[[ $(id -u) -eq 0 ]] || { echo "image: run as root (debootstrap and buildah's storage need it)" >&2; exit 1; }
for program in chatterbox-server chatterbox chatterbox-convert; do
  [[ -x "$BUILD/$program" ]] || { echo "image: no $BUILD/$program: build first (cmake --build $BUILD)" >&2; exit 1; }
done
mkdir -p "$CACHE"

# 1. The base: Debian 12 minbase from the mirror, kept as a tarball and a local image. A change of
# mirror or a --refresh-base makes a new one.
base_key="bookworm minbase +updates +security $MIRROR debootstrap $(dpkg-query -W -f='${Version}' debootstrap)"
if ((REFRESH)) || [[ "$(cat "$CACHE/base.key" 2>/dev/null)" != "$base_key" ]] || ! buildah inspect --type image "$BASE_IMAGE" >/dev/null 2>&1; then
  echo "image: debootstrap --variant=minbase bookworm from $MIRROR (a few minutes)" >&2
  rm -rf "$CACHE/minbase" "$CACHE/base.key"
  debootstrap --variant=minbase bookworm "$CACHE/minbase" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 ||
    { tail -20 "$CACHE/debootstrap.log" >&2; echo "image: debootstrap failed (log: $CACHE/debootstrap.log)" >&2; exit 1; }
  # The suites debian:bookworm-slim lists (debootstrap writes the release alone): point-release
  # updates and security fixes, where the runtime libraries' pins come from.
  rm -f "$CACHE/minbase/etc/apt/sources.list"
  cat >"$CACHE/minbase/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${MIRROR%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  # What an image needs of it: no apt lists, caches or logs from the bootstrap.
  rm -rf "$CACHE/minbase/var/lib/apt/lists/"* "$CACHE/minbase/var/cache/apt/"*.bin "$CACHE/minbase/var/cache/apt/archives/"*.deb \
    "$CACHE/minbase/var/log/"*
  tar -C "$CACHE/minbase" --numeric-owner -cf "$CACHE/minbase.tar" .
  container=$(buildah from scratch)
  buildah add "$container" "$CACHE/minbase.tar" / >/dev/null
  buildah config --created-by "debootstrap --variant=minbase bookworm $MIRROR" --cmd /bin/bash "$container"
  buildah commit --quiet --rm "$container" "$BASE_IMAGE" >/dev/null
  rm -rf "$CACHE/minbase"
  echo "$base_key" >"$CACHE/base.key"
fi

# 2. The programs of the build folder and the jieba dictionary they were built with, as an image
# holding /out/bin and /out/share/jieba: the Containerfile's BINARIES.
jieba="$(sed -n 's/^CHATTERBOX_CPPJIEBA_DIR:PATH=//p' "$BUILD/CMakeCache.txt")/dict"
[[ -f "$jieba/jieba.dict.utf8" ]] || { echo "image: no jieba dictionary in $jieba (scripts/fetch_cppjieba.sh)" >&2; exit 1; }
container=$(buildah from scratch)
for program in chatterbox-server chatterbox chatterbox-convert; do
  buildah copy "$container" "$BUILD/$program" "/out/bin/$program" >/dev/null
done
buildah copy "$container" "$jieba" /out/share/jieba >/dev/null
buildah commit --quiet --rm "$container" "$BINARIES_IMAGE" >/dev/null

# 3. The Containerfile's runtime stage on those (its build stage is skipped: nothing uses it). RUN steps
# run chrooted: no cgroups or user namespaces are needed to build.
buildah bud --quiet --isolation chroot --pull=never --layers=false --format docker \
  --build-arg RUNTIME_BASE="$BASE_IMAGE" --build-arg BINARIES="$BINARIES_IMAGE" \
  -f "$ROOT/deploy/container/Containerfile" -t "$TAG" "$ROOT" >&2
# The stage made of BINARIES leaves a working container behind; it and the image go.
for container in $(buildah containers --quiet --filter ancestor="$BINARIES_IMAGE"); do buildah rm "$container" >/dev/null; done
buildah rmi "$BINARIES_IMAGE" >/dev/null 2>&1 || true
echo "$TAG"
