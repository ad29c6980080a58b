#include "collectives/sequential_collective.h"

#include <utility>

#include "sim/check.h"

namespace podsim::collectives {

SequentialCollective::SequentialCollective(std::vector<Stage> stages) : stages_(std::move(stages)) {
  PODSIM_CHECK(!stages_.empty()) << "a sequence needs a stage";
  for (const Stage& stage : stages_) PODSIM_CHECK(!stage.empty()) << "empty stage";
}

void SequentialCollective::Start(sim::EventHandler on_done) {
  on_done_ = std::move(on_done);
  StartStage(0);
}

void SequentialCollective::StartStage(size_t stage) {
  pending_ = stages_[stage].size();
  for (std::unique_ptr<Collective>& collective : stages_[stage]) {
    collective->Start([this, stage] {
      if (--pending_ > 0) return;
      if (stage + 1 < stages_.size()) {
        StartStage(stage + 1);
      } else {
        on_done_();
      }
    });
  }
}

}  // namespace podsim::collectives
