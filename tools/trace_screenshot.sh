#!/usr/bin/env bash
# Regenerates docs/trace-train-step.png: a training step traced by podsim (Chrome JSON), loaded
# into the Performance panel of the DevTools that headless Chromium bundles, and screenshotted
# (docs/reference/traces.md 1c item 4). Everything runs offline once the packages are in.
#
#   tools/trace_screenshot.sh [BUILD_DIR] [OUT.png]
#
# Needs: a built podsim (BUILD_DIR, default build), Debian's chromium (installed here with
# apt-get when missing), node and npm (tools/setup.sh), and playwright-core, which
# `npm ci --prefix tools/trace_screenshot` installs from the committed lock file. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-docs/trace-train-step.png}

if ! command -v chromium >/dev/null 2>&1; then
  as_root=()
  [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  "${as_root[@]}" apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
[ -d tools/trace_screenshot/node_modules/playwright-core ] ||
  npm ci --prefix tools/trace_screenshot --no-audit --no-fund >/dev/null

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Four pipeline stages of tp=2 x dp=2 on 16 H100s, 1F1B with 8 microbatches: every stream of a
# training step (compute, tp, dp, pp, pp.recv) and the flows between stages.
"$build/podsim" train --system h100:16 --model llama3-8b \
  --layout tp=2,pp=4,dp=2,microbatches=8,schedule=1f1b --batch-tokens 128Ki --seq 4096 \
  --trace "$tmp/step.json" >/dev/null
node tools/trace_screenshot/shot.mjs "$tmp/step.json" "$out" "$(command -v chromium)"
echo "wrote $out"
