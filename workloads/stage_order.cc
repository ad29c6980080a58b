#include "workloads/stage_order.h"

#include <algorithm>
#include <cstdint>

#include "workloads/memory.h"

namespace podsim::workloads {

std::vector<StageUnit> StageOrder(const Layout& layout, int stage, bool ep_comm_overlap) {
  const int pp = layout.pp;
  const int m = layout.microbatch_count();
  const int v = layout.virtual_stages;
  const int total = m * v;
  auto forward = [&](int k) { return StageUnit{true, (k / (pp * v)) * pp + k % pp, (k / pp) % v}; };
  auto backward = [&](int k) {
    return StageUnit{false, (k / (pp * v)) * pp + k % pp, v - 1 - (k / pp) % v};
  };
  std::vector<StageUnit> order;
  if (layout.schedule == PipelineSchedule::kGpipe) {
    for (int k = 0; k < m; ++k) order.push_back(StageUnit{true, k, 0});
    for (int k = 0; k < m; ++k) order.push_back(StageUnit{false, k, 0});
    return order;
  }
  if (layout.schedule == PipelineSchedule::kOneFOneB || v == 1) {
    const int warmup =
        static_cast<int>(std::min<int64_t>(OneFOneBWarmup(layout, stage, ep_comm_overlap), m));
    int f = 0, b = 0;
    for (; f < warmup; ++f) order.push_back(StageUnit{true, f, 0});
    while (f < m) {
      order.push_back(StageUnit{true, f++, 0});
      order.push_back(StageUnit{false, b++, 0});
    }
    while (b < m) order.push_back(StageUnit{false, b++, 0});
    return order;
  }
  // Interleaved: Megatron needs m to be a multiple of pp for this mapping of k.
  const int warmup = std::min((pp - stage - 1) * 2 + (v - 1) * pp, total);
  int f = 0, b = 0;
  for (; f < warmup; ++f) order.push_back(forward(f));
  while (f < total) {
    order.push_back(forward(f++));
    order.push_back(backward(b++));
  }
  while (b < total) order.push_back(backward(b++));
  return order;
}

int64_t MostForwardsInFlight(const std::vector<StageUnit>& units, int chunk,
                             bool overlapped_pairs) {
  int64_t in_flight = 0, most = 0;
  auto step = [&](const StageUnit& unit) {
    if (unit.chunk != chunk) return;
    in_flight += unit.forward ? 1 : -1;
    most = std::max(most, in_flight);
  };
  for (size_t u = 0; u < units.size(); ++u) {
    // Paired as training_schedule.cc pairs them: a backward with the forward right after it.
    if (overlapped_pairs && !units[u].forward && u + 1 < units.size() && units[u + 1].forward) {
      step(units[u + 1]);
      step(units[u]);
      ++u;
      continue;
    }
    step(units[u]);
  }
  return most;
}

}  // namespace podsim::workloads
