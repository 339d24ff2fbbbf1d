#!/usr/bin/env bash
# ctest deploy.kubernetes: deploy/kubernetes's overlays render with Debian's kubectl kustomize
# (kubernetes-client, kustomize v2; unpacked by scripts/deploy-tools.sh) and with any other kubectl on
# PATH (a newer kustomize), to the same objects; the output, with the Prometheus adapter's rule, is valid
# against the Kubernetes API schemas (validate_manifests.mjs). Exit 77 (skipped) when the tools are
# missing, saying which.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DEBIAN_KUBECTL="$ROOT/.cache/deploy-tools/kubernetes-client/usr/bin/kubectl"
[[ "$(dpkg-query -W -f='${Status}' kubernetes-client 2>/dev/null)" == "install ok installed" ]] && DEBIAN_KUBECTL=/usr/bin/kubectl
[[ -x "$DEBIAN_KUBECTL" ]] || { echo "skipped: no Debian kubectl (run scripts/deploy-tools.sh)"; exit 77; }
[[ -d "$ROOT/tests/deploy/node_modules/kubernetes-models" ]] || { echo "skipped: no tests/deploy/node_modules (run scripts/deploy-tools.sh)"; exit 77; }
command -v node >/dev/null || { echo "skipped: no node"; exit 77; }
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# The objects of a rendering, one per line as compact JSON in a stable order, for comparing renderers
# (they order objects and keys differently).
canonical() { node -e '
  const { parseAllDocuments } = require(process.argv[1]);
  const text = require("fs").readFileSync(0, "utf8");
  const sorted = (v) => Array.isArray(v) ? v.map(sorted) : v && typeof v === "object" ?
    Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])])) : v;
  const drop_empty = (o) => { for (const k of ["annotations", "labels"]) if (o.metadata?.[k] && !Object.keys(o.metadata[k]).length) delete o.metadata[k]; return o; };
  console.log(parseAllDocuments(text).map((d) => JSON.stringify(sorted(drop_empty(d.toJS())))).sort().join("\n"));
' "$ROOT/tests/deploy/node_modules/yaml"; }

for overlay in cpu gpu; do
  "$DEBIAN_KUBECTL" kustomize "$ROOT/deploy/kubernetes/overlays/$overlay" >"$OUT/$overlay.yaml"
  echo "$overlay: rendered by Debian's kubectl $("$DEBIAN_KUBECTL" version --client --short 2>/dev/null || true)"
  node "$ROOT/tests/deploy/validate_manifests.mjs" "$OUT/$overlay.yaml" "$ROOT/deploy/kubernetes/prometheus-adapter/adapter-config.yaml"
  other="$(command -v kubectl || true)"
  if [[ -n "$other" && "$(readlink -f "$other")" != "$(readlink -f "$DEBIAN_KUBECTL")" ]]; then
    "$other" kustomize "$ROOT/deploy/kubernetes/overlays/$overlay" 2>/dev/null >"$OUT/$overlay-other.yaml"
    # The generated ConfigMap's name carries a hash each kustomize computes its own way.
    if ! diff <(canonical <"$OUT/$overlay.yaml" | sed -E 's/chatterbox-options-[a-z0-9]+/chatterbox-options-HASH/g') \
              <(canonical <"$OUT/$overlay-other.yaml" | sed -E 's/chatterbox-options-[a-z0-9]+/chatterbox-options-HASH/g'); then
      echo "FAIL: $other renders the $overlay overlay differently from Debian's kubectl"; exit 1
    fi
    echo "$overlay: $other ($("$other" version --client 2>/dev/null | head -1)) renders the same objects"
  fi
done
# What the overlays are for: the GPU one asks for a GPU and the CUDA image, the CPU one for neither.
grep -q 'nvidia.com/gpu: "1"' "$OUT/gpu.yaml" && grep -q 'image: chatterbox-server:cuda' "$OUT/gpu.yaml" ||
  { echo "FAIL: the gpu overlay asks for no GPU or not the CUDA image"; exit 1; }
! grep -q 'nvidia.com/gpu' "$OUT/cpu.yaml" && grep -q 'image: chatterbox-server:cpu' "$OUT/cpu.yaml" ||
  { echo "FAIL: the cpu overlay asks for a GPU or not the CPU image"; exit 1; }
