// The benchmarks' main: Google Benchmark's, with the allocator policy podsim's own main sets
// (sim/freed_memory.h), so an engine or flow model is measured as podsim runs it.

#include <benchmark/benchmark.h>

#include "sim/freed_memory.h"

int main(int argc, char** argv) {
  podsim::sim::KeepFreedMemory();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
