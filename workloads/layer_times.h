// LayerTimes: how long each transformer layer of the first pipeline stage (every virtual chunk's)
// takes forward and backward on the stage's lowest-numbered simulated chip, as the simulation runs
// them: from the first op of the layer's microbatch 0 to the last, counting its compute and its
// tensor-parallel collectives (streams "compute" and "tp"), the backward including the layer's
// recomputation. Korthikanti et al. 2022 (Table 4) time a layer that way. Under --tp-comm-overlap
// the tp chunks overlap the GEMMs they feed; under --ep-comm-overlap a backward interleaves with
// the next microbatch's forward, whose ops its span then includes.

#ifndef PODSIM_WORKLOADS_LAYER_TIMES_H_
#define PODSIM_WORKLOADS_LAYER_TIMES_H_

#include <cstdint>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "schedule.pb.h"
#include "sim/time.h"
#include "workloads/step_simulator.h"

namespace podsim::workloads {

struct LayerTime {
  int layer = 0;
  double forward_s = 0;
  double backward_s = 0;
};

// Observes a step of `schedule` (not owned, it must outlive the timer) and passes every call on to
// `next` (not owned; null: none).
class LayerTimer : public StepObserver {
 public:
  LayerTimer(const schedule::Schedule* schedule, StepObserver* next)
      : schedule_(schedule), next_(next) {}
  void OnOpStart(sim::Time now, uint32_t chip, int program, int op) override;
  void OnOpEnd(sim::Time now, uint32_t chip, int program, int op) override;
  void OnCollectiveAlgorithm(uint32_t chip, int program, int op,
                             std::string_view algorithm) override;
  // The layers of program 0 (the first pipeline stage) on its lowest simulated chip, in layer
  // order.
  std::vector<LayerTime> Times() const;

 private:
  void Extend(sim::Time now, uint32_t chip, int program, int op);
  using Span = std::pair<sim::Time, sim::Time>;
  const schedule::Schedule* schedule_;
  StepObserver* next_;
  // The lowest chip of program 0 seen so far, and per layer its forward's span and backward's.
  uint32_t chip_ = UINT32_MAX;
  std::map<int, std::pair<Span, Span>> spans_;
};

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_LAYER_TIMES_H_
