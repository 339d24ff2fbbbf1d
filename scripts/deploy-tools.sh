#!/usr/bin/env bash
# Install what the deployment tests (tests/deploy, ctest -L deploy) use, pinned:
#   - scripts/deploy-packages.txt's Debian packages (haproxy, debootstrap, buildah, podman, runc);
#   - Debian's kubectl (kubernetes-client) unpacked into .cache/deploy-tools/, not installed: a machine
#     may have another package's /usr/bin/kubectl (Google Cloud's, here), which dpkg would refuse to
#     overwrite, and the tests render with Debian's kustomize in any case;
#   - tests/deploy's npm packages (the Kubernetes API schemas, kubernetes-models) from its lock file.
# Idempotent; scripts/setup.sh runs it.
#
#   usage: scripts/deploy-tools.sh [--no-apt]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
APT=1
[[ "${1:-}" == "--no-apt" ]] && APT=0
KUBERNETES_CLIENT="kubernetes-client=1.20.5+really1.20.2-1.1+deb12u1"
TOOLS="$ROOT/.cache/deploy-tools"

as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

if ((APT)); then
  missing=()
  while read -r spec; do
    name="${spec%%=*}" version="${spec#*=}"
    [[ "$(dpkg-query -W -f='${Status} ${Version}' "$name" 2>/dev/null)" == "install ok installed $version" ]] || missing+=("$spec")
  done < <(grep -vE '^\s*(#|$)' "$ROOT/scripts/deploy-packages.txt")
  if ((${#missing[@]})); then
    echo "deploy-tools: installing ${missing[*]}" >&2
    as_root apt-get update -qq
    if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
      echo "deploy-tools: a pinned version is no longer in the archive; installing the current candidates instead" >&2
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]%%=*}"
    fi
  fi
fi

# Debian's kubectl, unpacked from its .deb (apt-get download checks it against the archive's signed index).
if [[ "$(cat "$TOOLS/kubernetes-client.version" 2>/dev/null)" != "$KUBERNETES_CLIENT" ]]; then
  rm -rf "$TOOLS/kubernetes-client" && mkdir -p "$TOOLS/kubernetes-client"
  download="$(mktemp -d)"
  chmod 755 "$download" # apt's _apt user writes there
  if ! (cd "$download" && apt-get download -qq "$KUBERNETES_CLIENT" 2>/dev/null); then
    echo "deploy-tools: $KUBERNETES_CLIENT is no longer in the archive; taking the current candidate" >&2
    (cd "$download" && apt-get download -qq "${KUBERNETES_CLIENT%%=*}")
  fi
  dpkg-deb -x "$download"/kubernetes-client_*.deb "$TOOLS/kubernetes-client"
  rm -rf "$download"
  echo "$KUBERNETES_CLIENT" >"$TOOLS/kubernetes-client.version"
fi

if ! cmp -s "$ROOT/tests/deploy/package-lock.json" "$ROOT/tests/deploy/node_modules/.installed-package-lock.json"; then
  (cd "$ROOT/tests/deploy" && npm ci --no-audit --no-fund --loglevel=error &&
    cp package-lock.json node_modules/.installed-package-lock.json)
fi
echo "deploy-tools: ready (kubectl: $TOOLS/kubernetes-client/usr/bin/kubectl)" >&2
