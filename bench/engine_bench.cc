// Raw engine throughput: events/s for small scheduled callbacks (issue 2, target >= 20M/s).
//
// `pending` callbacks are in flight; each reschedules itself with a pseudo-random delay, so the
// heap holds `pending` entries throughout. Items processed = events executed.

#include <benchmark/benchmark.h>

#include <cstdint>

#include "sim/engine.h"

namespace podsim::sim {
namespace {

struct SelfRescheduling {
  Engine* engine;
  uint64_t state;
  int64_t remaining;
  void operator()() {
    if (--remaining <= 0) return;
    state = state * 6364136223846793005ull + 1442695040888963407ull;  // LCG: cheap, seeded.
    engine->Schedule(Time::Picoseconds(static_cast<int64_t>(1 + (state >> 54))), *this);
  }
};

void BM_EngineEvents(benchmark::State& state) {
  const int64_t pending = state.range(0);
  constexpr int64_t kEventsPerRun = 1 << 20;
  for (auto _ : state) {
    Engine engine;
    for (int64_t i = 0; i < pending; ++i) {
      engine.Schedule(Time::Picoseconds(i), SelfRescheduling{&engine, static_cast<uint64_t>(i) + 1,
                                                             kEventsPerRun / pending});
    }
    engine.Run();
    benchmark::DoNotOptimize(engine.now());
  }
  state.SetItemsProcessed(state.iterations() * (kEventsPerRun / pending) * pending);
}
BENCHMARK(BM_EngineEvents)->Arg(1)->Arg(64)->Arg(1024)->Arg(16384)->Unit(benchmark::kMillisecond);

// Lock-step bursts, the shape of a collective: `ranks` callbacks all due at one instant, each
// rescheduling itself one step (1 us) later, as every rank of a ring step does.
struct LockStep {
  Engine* engine;
  int64_t remaining;
  void operator()() {
    if (--remaining > 0) engine->Schedule(Time::Microseconds(1), *this);
  }
};

void BM_EngineLockStepBursts(benchmark::State& state) {
  const int64_t ranks = state.range(0);
  constexpr int64_t kEventsPerRun = 1 << 20;
  for (auto _ : state) {
    Engine engine;
    for (int64_t i = 0; i < ranks; ++i) {
      engine.Schedule(Time::Zero(), LockStep{&engine, kEventsPerRun / ranks});
    }
    engine.Run();
    benchmark::DoNotOptimize(engine.now());
  }
  state.SetItemsProcessed(state.iterations() * (kEventsPerRun / ranks) * ranks);
}
BENCHMARK(BM_EngineLockStepBursts)->Arg(1024)->Arg(16384)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace podsim::sim
