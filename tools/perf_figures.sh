#!/usr/bin/env bash
# Reproduces the figures of README "Performance" on this machine (Release build in ./build).
# Run it on an otherwise idle machine: the figures are wall-clock times.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

echo "== engine (events/s)"
"$build/bench/podsim_engine_bench" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
echo "== flow model (completions/s)"
"$build/bench/podsim_flow_model_bench"
if command -v valgrind >/dev/null; then
  # Instructions of one BM_SharedTorus run: deterministic, unlike the wall times above.
  echo "== flow model (instructions of one BM_SharedTorus run, callgrind)"
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$build/bench/podsim_flow_model_bench" \
    --benchmark_filter='BM_SharedTorus$' --benchmark_min_time=0 2>&1 | grep Collected
fi

timed() {
  # Best of three wall times, and the peak memory of that run.
  local best="" mem=""
  for _ in 1 2 3; do
    local out
    out=$( { /usr/bin/time -f "%e %M" "$@" >/dev/null; } 2>&1 | tail -1)
    local t=${out% *} m=${out#* }
    if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; mem=$m; fi
  done
  printf '%-90s %6.2f s %8d KB\n' "$*" "$best" "$mem"
}

echo "== schedules (ops/s)"
"$build/bench/podsim_schedule_bench" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
echo "== topology"
timed "$build/podsim" topology tpu-v5p:16x20x28 --json
timed "$build/podsim" topology h100:16384 --json
timed "$build/podsim" topology ring:1048576 --json
echo "== collectives"
timed "$build/podsim" collective --system ring:1024 --op all-reduce --bytes 1MiB --algorithm ring --reference
timed "$build/podsim" collective --system torus:16x16x16 --op all-reduce --bytes 1GiB --reference
timed "$build/podsim" collective --system ring:4096 --op all-reduce --bytes 1MiB --algorithm ring
timed "$build/podsim" collective --system ring:65536 --op all-reduce --bytes 1MiB --algorithm ring
timed "$build/podsim" collective --system torus:16x16x16 --op all-reduce --bytes 1GiB
timed "$build/podsim" collective --system tpu-v5p:16x20x28 --op all-reduce --bytes 1073748480
timed "$build/podsim" collective --system h100:1024 --op all-reduce --bytes 1GiB
timed "$build/podsim" collective --system h100:4096 --op all-reduce --bytes 1GiB
timed "$build/podsim" collective --system h100:16384 --op all-reduce --bytes 1GiB --max-transfers 1e7
echo "== training steps"
timed "$build/podsim" train --system tpu-v5p:16x20x28 --model llama3-70b --layout fsdp=2240,tp=4 --batch-tokens 18350080 --seq 4096
timed "$build/podsim" train --system tpu-v5p:16x20x28 --model llama3-70b --layout fsdp=2240,tp=4 --batch-tokens 18350080 --seq 4096 --exact
timed "$build/podsim" train --system h100:16384 --model llama3-405b --layout tp=8,pp=16,dp=128,microbatches=16 --batch-tokens 16Mi --seq 8192
# The exact 405B step takes about 40 s (replays; 1.5 minutes before them): one run.
/usr/bin/time -f "%e s %M KB (one run)" "$build/podsim" train --system h100:16384 --model llama3-405b --layout tp=8,pp=16,dp=128,microbatches=16 --batch-tokens 16Mi --seq 8192 --max-transfers 1e9 --exact | grep -E "step time|simulated"
timed "$build/podsim" train --system h100:1024 --model llama3-70b --layout tp=8,pp=4,dp=32,microbatches=8 --batch-tokens 4Mi --seq 8192
timed "$build/podsim" train --system a100:1024 --model llama3-70b --layout tp=8,pp=8,dp=16,microbatches=16 --batch-tokens 4Mi --seq 4096
timed "$build/podsim" train --system h100:1024 --model llama3-70b --layout dp=8,fsdp=128 --batch-tokens 4Mi --seq 8192 --recompute full
timed "$build/podsim" train --system h100:1024 --model llama3-70b --layout dp=1,fsdp=1024 --batch-tokens 4Mi --seq 8192 --recompute full
timed "$build/podsim" train --system tpu-v5e:16x16,slices=32 --model custom:layers=32,d_model=4096,ffn=28672,heads=64,kv_heads=64,head_dim=128,vocab=32000 --layout dp=32,fsdp=256 --batch-tokens 100663296 --seq 2048 --recompute full
echo "== inference"
timed "$build/podsim" infer --system tpu-v5e:16x16 --model llama3-70b --layout tp=16,dp=16 --phase decode --batch 256 --context 8192
echo "== sweep"
/usr/bin/time -f "%e s %M KB" "$build/podsim" sweep --system tpu-v5p:16x20x28 --model llama3-70b --batch-tokens 18350080 --seq 4096 --jobs 2 | head -3
# The GPU sweeps, exact steps (under one and about two and a half minutes): one run each.
/usr/bin/time -f "%e s %U s of CPU %M KB" "$build/podsim" sweep --system h100:64 --model llama3-8b --batch-tokens 1Mi --seq 4096 --top 5 --jobs 2 | sed -n 4p
/usr/bin/time -f "%e s %U s of CPU %M KB" "$build/podsim" sweep --system h100:64 --model mixtral-8x7b:layers=8 --batch-tokens 512Ki --seq 4096 --top 5 --jobs 2 | sed -n 4p
