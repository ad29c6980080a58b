// Flow-model throughput in flow completions/s (issue 2):
//   * Ring: a ring collective's pattern; every link direction of ring:N carries one flow at a
//     time, and each completion starts the next step's flow on the same link (target >= 5M/s).
//   * SharedTorus: ~1,000 concurrent flows on random dimension-order routes over a 16x16 torus
//     (1,024 link directions), sharing links; each completion starts a new random flow, keeping
//     the count constant (target >= 50,000/s).
//   * SharedTorusIdleLinks: the same load with 100,000 extra idle resources in the model; its
//     rate must match SharedTorus, or recomputation is not local.
// Routes are built here by hand so the benchmark depends on sim/ only.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <vector>

#include "sim/engine.h"
#include "sim/flow_model.h"
#include "sim/flow_observer.h"

namespace podsim::sim {
namespace {

void BM_RingPattern(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  constexpr int kSteps = 64;
  uint64_t completions = 0;
  for (auto _ : state) {
    Engine engine;
    FlowModel model(&engine);
    std::vector<ResourceId> links;
    for (int i = 0; i < ranks; ++i) links.push_back(*model.AddResource(4.5e10));
    std::vector<int> steps_left(ranks, kSteps);
    std::function<void(int)> send = [&](int rank) {
      FlowSpec spec{1 << 20, {links[rank]}, Time::Microseconds(1)};
      auto id = model.StartFlow(spec, [&send, &steps_left, rank] {
        if (--steps_left[rank] > 0) send(rank);
      });
      benchmark::DoNotOptimize(id);
    };
    for (int r = 0; r < ranks; ++r) send(r);
    engine.Run();
    completions += model.completed_flows();
  }
  state.SetItemsProcessed(static_cast<int64_t>(completions));
}
BENCHMARK(BM_RingPattern)->Arg(1024)->Unit(benchmark::kMillisecond);

// Link direction resources of a 16x16 torus: index ((y * 16 + x) * 4 + dir), dir 0:+x 1:-x 2:+y
// 3:-y. Routes go x first, then y, the shorter way round.
class Torus16x16 {
 public:
  static constexpr int kSide = 16;
  explicit Torus16x16(FlowModel* model, int idle_resources) {
    for (int i = 0; i < kSide * kSide * 4; ++i) links_.push_back(*model->AddResource(4.5e10));
    for (int i = 0; i < idle_resources; ++i) (void)*model->AddResource(4.5e10);
  }
  std::vector<ResourceId> Route(int src, int dst) const {
    std::vector<ResourceId> route;
    int x = src % kSide, y = src / kSide;
    const int dx = dst % kSide, dy = dst / kSide;
    auto walk = [&](int* pos, int target, int plus_dir, bool is_x) {
      int forward = (target - *pos + kSide) % kSide;
      bool plus = forward <= kSide / 2;
      while (*pos != target) {
        route.push_back(links_[((y * kSide + x) * 4) + (plus ? plus_dir : plus_dir + 1)]);
        *pos = (*pos + (plus ? 1 : kSide - 1)) % kSide;
        (void)is_x;
      }
    };
    walk(&x, dx, 0, true);
    walk(&y, dy, 2, false);
    return route;
  }

 private:
  std::vector<ResourceId> links_;
};

// Counts how far committed rate changes move a flow's rate (relative to its previous rate; a
// flow's first allocation is not a change): how much a precision threshold, below which a change
// would neither propagate nor reschedule, could skip.
class RateChangeCounter : public FlowObserver {
 public:
  void OnFlowStarted(Time, FlowId flow, double, std::span<const ResourceId>,
                     std::span<const double>) override {
    if (flow.slot >= rates_.size()) rates_.resize(flow.slot + 1, 0);
    rates_[flow.slot] = 0;
  }
  void OnFlowRateChanged(Time, FlowId flow, double rate) override {
    const double previous = rates_[flow.slot];
    rates_[flow.slot] = rate;
    if (previous <= 0) return;
    const double change = std::abs(rate - previous) / previous;
    ++changes;
    over_1e6 += change > 1e-6;
    over_1e4 += change > 1e-4;
  }
  bool WantsFlowUsage() const override { return false; }
  uint64_t changes = 0, over_1e6 = 0, over_1e4 = 0;

 private:
  std::vector<double> rates_;  // Per flow slot.
};

void RunSharedTorus(benchmark::State& state, int idle_resources,
                    RateChangeCounter* counter = nullptr) {
  constexpr int kConcurrent = 1000;
  constexpr uint64_t kCompletionsPerRun = 5000;
  uint64_t completions = 0;
  for (auto _ : state) {
    Engine engine;
    FlowModel model(&engine);
    Torus16x16 torus(&model, idle_resources);
    if (counter != nullptr) model.AddObserver(counter);
    std::mt19937 rng(1);
    uint64_t started = 0;
    std::function<void()> start = [&] {
      if (started >= kCompletionsPerRun) return;
      ++started;
      int src = static_cast<int>(rng() % 256);
      int dst = static_cast<int>((src + 1 + rng() % 255) % 256);
      FlowSpec spec{static_cast<double>(1 + rng() % (4 << 20)), torus.Route(src, dst),
                    Time::Microseconds(1)};
      auto id = model.StartFlow(spec, start);
      benchmark::DoNotOptimize(id);
    };
    for (int i = 0; i < kConcurrent; ++i) start();
    engine.Run();
    completions += model.completed_flows();
    state.counters["resolved_per_realloc"] =
        static_cast<double>(model.resolved_flows()) / static_cast<double>(model.reallocations());
    state.counters["repeated_per_realloc"] =
        static_cast<double>(model.repeated_sweeps()) / static_cast<double>(model.reallocations());
  }
  state.SetItemsProcessed(static_cast<int64_t>(completions));
}

void BM_SharedTorus(benchmark::State& state) { RunSharedTorus(state, 0); }
void BM_SharedTorusIdleLinks(benchmark::State& state) { RunSharedTorus(state, 100'000); }
// The same load observed (its time is not the model's: observers cost): the share of rate
// changes past 1e-6 and 1e-4 of the rate.
void BM_SharedTorusRateChanges(benchmark::State& state) {
  RateChangeCounter counter;
  RunSharedTorus(state, 0, &counter);
  const double changes = static_cast<double>(std::max<uint64_t>(counter.changes, 1));
  state.counters["rate_changes"] = static_cast<double>(counter.changes);
  state.counters["over_1e-6"] = static_cast<double>(counter.over_1e6) / changes;
  state.counters["over_1e-4"] = static_cast<double>(counter.over_1e4) / changes;
}
BENCHMARK(BM_SharedTorus)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SharedTorusIdleLinks)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SharedTorusRateChanges)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace podsim::sim
