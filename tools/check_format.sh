#!/usr/bin/env bash
# Fails if any tracked C++ file differs from clang-format's output (.clang-format, Google-based).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null 2>&1; then
  echo "check_format: clang-format not installed; skipped" >&2
  exit 0
fi
bad=$(git ls-files '*.cc' '*.h' | while read -r f; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"
done)
if [ -n "$bad" ]; then
  echo "check_format: run clang-format -i on:" >&2
  echo "$bad" >&2
  exit 1
fi
