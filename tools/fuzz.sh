#!/usr/bin/env bash
# Runs every libFuzzer target of fuzz/ (docs/fuzzing.md) under ASan + UBSan.
#
#   tools/fuzz.sh [SECONDS_PER_TARGET] [RUNS]
#
# Configures and builds build-fuzz (clang, PODSIM_FUZZ=ON, PODSIM_SANITIZE=ON) if needed, then
# runs each target one after the other for SECONDS_PER_TARGET (default 60) or RUNS executions,
# whichever comes first, on its seed corpus, regressions and dictionary. New inputs and crash
# reproducers go to a scratch folder ($PODSIM_FUZZ_OUT, default build-fuzz/fuzz-out/<target>/),
# never into fuzz/corpus. Exits 1 if any target crashed, hung (-timeout=10 s per input) or ran
# out of memory (-rss_limit_mb=2048); copy the reproducer into fuzz/regressions/<target>/. The
# regressions run first, so one that still crashes fails its target at once.
#
# Environment: PODSIM_FUZZ_TARGETS="system layout" runs only those; PODSIM_FUZZ_BUILD picks the
# build folder; PODSIM_FUZZ_BUILD_JOBS limits the build's parallelism; PODSIM_FUZZ_ARGS adds
# libFuzzer flags (e.g. "-jobs=2 -workers=2"); PODSIM_FUZZ_JOBS runs that many targets at once.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
runs=${2:-}
build=${PODSIM_FUZZ_BUILD:-build-fuzz}
out=${PODSIM_FUZZ_OUT:-$build/fuzz-out}
targets=${PODSIM_FUZZ_TARGETS:-system byte_size layout model scenario schedule_text schedule_binary chakra}

# As tools/check_format.sh does for clang-format: no clang, no fuzzing (Debian: clang and
# libclang-rt-14-dev, which has libFuzzer).
if [ ! -f "$build/CMakeCache.txt" ] && ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: clang++ not installed; skipped" >&2
  exit 0
fi

if [ ! -f "$build/CMakeCache.txt" ]; then
  # -O1 -g1, as the ASan step of .ci/run: line tables for the reports, a faster compile.
  cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DPODSIM_FUZZ=ON \
    -DPODSIM_SANITIZE=ON -DPODSIM_BUILD_TESTS=OFF -DPODSIM_BUILD_BENCHMARKS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" >/dev/null
fi
cmake --build "$build" --target podsim_fuzzers ${PODSIM_FUZZ_BUILD_JOBS:+-j "$PODSIM_FUZZ_BUILD_JOBS"}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# One target's run: its log, reproducers and a one-line summary (in $out/<target>/summary.txt,
# "ok" or "FAILED" last) under its scratch folder, so targets may run side by side.
run_target() {
  local target=$1
  local binary="$build/fuzz/${target}_fuzzer"
  local scratch="$out/$target"
  mkdir -p "$scratch/corpus" "$scratch/crashes"
  local log="$scratch/log.txt"
  local flags=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
               -dict="fuzz/$target.dict" -artifact_prefix="$scratch/crashes/")
  [ -n "$runs" ] && flags+=(-runs="$runs")
  # shellcheck disable=SC2086  # PODSIM_FUZZ_ARGS is a list of flags.
  echo "+ $binary ${flags[*]} ${PODSIM_FUZZ_ARGS:-} $scratch/corpus fuzz/corpus/$target fuzz/regressions/$target"
  local status=0
  # shellcheck disable=SC2086
  "$binary" "${flags[@]}" ${PODSIM_FUZZ_ARGS:-} "$scratch/corpus" "fuzz/corpus/$target" \
    "fuzz/regressions/$target" >"$log" 2>&1 || status=$?
  local execs took crashes
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  crashes=$(find "$scratch/crashes" -type f | sort)
  if [ "$status" -ne 0 ] || [ -n "$crashes" ]; then
    {
      echo "FAILED $target (exit $status); log: $log"
      grep -E -m 12 "ERROR: |runtime error|fuzz check failed|Check failed|SUMMARY|^    #[0-4] " \
        "$log" || tail -20 "$log"
      [ -n "$crashes" ] && echo "reproducers: $crashes"
    } >&2
  fi
  printf '%-16s %12s execs %6ss  %s\n' "$target" "${execs:-?}" "${took:-?}" \
    "$([ "$status" -eq 0 ] && [ -z "$crashes" ] && echo ok || echo FAILED)" >"$scratch/summary.txt"
}

# PODSIM_FUZZ_JOBS targets at a time (default 1): each is one process, so CI's two cores run two.
jobs=${PODSIM_FUZZ_JOBS:-1}
for target in $targets; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  rm -f "$out/$target/summary.txt"
  run_target "$target" &
done
wait
failed=()
summary=()
for target in $targets; do
  line=$(cat "$out/$target/summary.txt" 2>/dev/null || echo "$target FAILED (no summary)")
  summary+=("$line")
  [ "${line##* }" = ok ] || failed+=("$target")
done
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
