#!/bin/sh
# ctest entry point of the DevTools trace engine check (check.mjs). Exits 77 -- ctest's
# SKIP_RETURN_CODE for this test -- only when node is not installed; a missing npm package is a
# failure (the README's test command runs `npm ci --prefix tests/trace_engine`).
if ! command -v node >/dev/null 2>&1; then
  echo "node not found: skipping the DevTools trace engine check (tools/setup.sh installs nodejs)"
  exit 77
fi
exec node "$(dirname "$0")/check.mjs" "$@"
