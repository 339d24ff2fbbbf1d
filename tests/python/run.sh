#!/usr/bin/env bash
# ctest's python.* entries: pytest under the given Python (Debian's), or skip (77) saying what is missing.
#   usage: run.sh PYTHON PYTEST_ARGUMENTS...
set -euo pipefail
PYTHON="$1"
shift
if ! missing="$("$PYTHON" - <<'PY'
import importlib.util
print(" ".join(m for m in ("pytest", "numpy") if importlib.util.find_spec(m) is None))
PY
)" || [[ -n "$missing" ]]; then
  echo "skipped: $PYTHON lacks ${missing:-its modules} (Debian python3-pytest, python3-numpy; scripts/setup.sh installs them)"
  exit 77
fi
exec "$PYTHON" -m pytest -q -p no:cacheprovider "$@"
