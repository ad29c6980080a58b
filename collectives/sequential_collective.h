// SequentialCollective: stages of collectives run one after another; the collectives of a stage
// run at once and the next stage starts when all of them are done (a barrier between stages).
// Used where the stages are different kinds of collective (rings inside nodes, switch reductions
// across them) that cannot hand over per rank.

#ifndef PODSIM_COLLECTIVES_SEQUENTIAL_COLLECTIVE_H_
#define PODSIM_COLLECTIVES_SEQUENTIAL_COLLECTIVE_H_

#include <memory>
#include <vector>

#include "collectives/collective.h"

namespace podsim::collectives {

class SequentialCollective : public Collective {
 public:
  using Stage = std::vector<std::unique_ptr<Collective>>;
  // REQUIRES: every stage holds at least one collective.
  explicit SequentialCollective(std::vector<Stage> stages);
  void Start(sim::EventHandler on_done) override;

 private:
  void StartStage(size_t stage);

  std::vector<Stage> stages_;
  size_t pending_ = 0;  // Collectives of the running stage not done yet.
  sim::EventHandler on_done_;
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_SEQUENTIAL_COLLECTIVE_H_
