#!/usr/bin/env bash
# ctest's js.* entries: the given test files of this folder (default: all) under Node's test runner.
# Skipped (exit 77)
# with the reason when node or the pinned npm packages are missing: scripts/setup.sh installs them
# (npm ci here).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v node >/dev/null; then
  echo "SKIP: node is not installed (scripts/setup.sh installs Debian's nodejs)"
  exit 77
fi
for package in openai puppeteer-core; do
  if [[ ! -f "$HERE/node_modules/$package/package.json" ]]; then
    echo "SKIP: the npm package $package is missing: run scripts/setup.sh (or npm ci in tests/js)"
    exit 77
  fi
done
cd "$HERE"
(($#)) || set -- ./*.test.mjs
exec node --test --test-reporter=spec "$@"
