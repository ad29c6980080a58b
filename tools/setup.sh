#!/usr/bin/env bash
# Installs the Debian 12 packages podsim needs, only those that are missing.
# Idempotent and quiet when everything is present; works as root or with sudo.
set -euo pipefail

packages=(
  build-essential cmake ninja-build
  libboost-dev libboost-graph-dev
  libprotobuf-dev protobuf-compiler
  libspdlog-dev libfmt-dev
  nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev  # tools/fuzz.sh: libFuzzer and the sanitizers (docs/fuzzing.md)
  libopenmpi-dev openmpi-bin  # -DPODSIM_WITH_MPI=ON: sweeps over MPI ranks (.ci/run tests it)
  python3
  python3-dev python3-pybind11  # python/: the module that makes `import podsim` work (docs/python.md)
  libjs-vega  # reports/: Vega, inlined into every --report FILE.html (docs/reports.md)
  chromium  # tests/report_test.py renders the reports in a headless browser
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# node and npm run the Chrome DevTools trace engine check (tests/trace_engine); any install that
# provides the commands will do (NodeSource's nodejs bundles npm and conflicts with Debian's).
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "setup: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq >/dev/null
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
