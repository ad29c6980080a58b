// SequentialCollective: stages of collectives run one after another; the collectives of a stage
// run at once and the next stage starts when all of them are done (a barrier between stages).
// Used where the stages are different kinds of collective (rings inside nodes, switch reductions
// across them) that cannot hand over per rank.
//
// Pipelined in pieces: the array may be cut into pieces that each run the same stages on their
// share of the bytes. Stage s of piece p starts when stage s - 1 of piece p and stage s of piece
// p - 1 are done: each stage works on one piece at a time, in order, the stages of different
// pieces overlap, and a large array costs about its slowest stage rather than the sum of them
// (as hierarchical.h's pieces). One piece is the plain sequence. NCCL pipelines finer, through 8
// buffer slots per channel with no barrier across a stage's ranks; here each stage of each piece
// pays its latencies whole, so cutting an array into many more pieces makes it slower, not
// closer to NCCL: callers keep hierarchical.h's pieces of at least 4 MiB, at most 16.

#ifndef PODSIM_COLLECTIVES_SEQUENTIAL_COLLECTIVE_H_
#define PODSIM_COLLECTIVES_SEQUENTIAL_COLLECTIVE_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "collectives/collective.h"

namespace podsim::collectives {

class SequentialCollective : public Collective {
 public:
  using Stage = std::vector<std::unique_ptr<Collective>>;
  using Piece = std::vector<Stage>;
  // REQUIRES: at least one piece; every piece has the same number (>= 1) of stages, each holding
  // at least one collective.
  explicit SequentialCollective(std::vector<Piece> pieces);
  void Start(sim::EventHandler on_done) override;

 private:
  // Starts stage `stage` of piece `piece` if its predecessors are done and it has not started.
  void TryStart(size_t piece, size_t stage);

  std::vector<Piece> pieces_;
  size_t stages_ = 0;
  size_t finished_ = 0;  // Pieces through every stage.
  // Per piece: its stages done, and the collectives of its running stage not done yet.
  std::vector<size_t> done_;
  std::vector<size_t> started_;
  std::vector<size_t> pending_;
  sim::EventHandler on_done_;
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_SEQUENTIAL_COLLECTIVE_H_
