// PhasedCollective: a collective built from rounds of ring/line exchanges over subsets of ranks.
//
// The array is split into pieces that proceed independently and concurrently. Each piece runs a
// sequence of phases; in a phase the members are partitioned into lines (rings or lines of
// chips), each running a ShardForwarding with the phase's shard size. A member enters phase p+1
// of a piece as soon as its own line of phase p is done at that member (per-rank dependencies, no
// barrier).
//
// This one mechanism expresses the ring collectives on any fabric (one piece, one line of all
// members; all-reduce = a reduce-scatter phase then an all-gather phase) and the multi-axis torus
// collectives of reference/formulas.md: with k axes the array is split in k pieces whose phases
// visit the axes in rotated orders, so every axis carries traffic at once and the gather costs
// V / (W_bidi * k) instead of V / W_bidi.

#ifndef PODSIM_COLLECTIVES_PHASED_COLLECTIVE_H_
#define PODSIM_COLLECTIVES_PHASED_COLLECTIVE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "collectives/collective.h"
#include "collectives/shard_forwarding.h"
#include "collectives/transfer_executor.h"
#include "sim/event_handler.h"
#include "topology/fabric.h"

namespace podsim::collectives {

struct ExchangePhase {
  ForwardingPattern pattern = ForwardingPattern::kBidirectionalRing;
  // A partition of the collective's members into rings/lines, each in ring order.
  std::vector<std::vector<topology::VertexId>> lines;
  double shard_bytes = 0;
};

struct ExchangePiece {
  std::vector<ExchangePhase> phases;
};

class PhasedCollective : public Collective, public RankDoneListener {
 public:
  // REQUIRES: every phase partitions `members`; at least one piece with one phase.
  PhasedCollective(TransferExecutor* executor, std::vector<topology::VertexId> members,
                   std::vector<ExchangePiece> pieces);

  // Starts every piece on every member; `on_done` runs when all members finished all pieces.
  void Start(sim::EventHandler on_done) override;

  void OnRankDone(uint32_t tag, uint32_t rank_index) override;

 private:
  struct Slot {  // Where a member sits in one phase.
    uint32_t line;
    uint32_t index;
  };
  struct PhaseRun {
    uint32_t piece;
    uint32_t phase;
    std::vector<std::unique_ptr<ShardForwarding>> lines;
    std::vector<Slot> slot_of_member;  // Indexed by member number.
  };
  void EnterPhase(uint32_t run, uint32_t member);

  TransferExecutor* executor_;
  std::vector<topology::VertexId> members_;
  std::vector<uint32_t> member_of_vertex_;  // Vertex -> member number.
  std::vector<PhaseRun> runs_;              // Piece-major.
  struct LineRef {
    uint32_t run;
    uint32_t line;
  };
  std::vector<LineRef> lines_;  // Indexed by the tag each ShardForwarding reports.
  std::vector<uint32_t> first_run_of_piece_;
  std::vector<uint32_t> phases_of_piece_;
  size_t remaining_ = 0;  // (piece, member) pairs not finished yet.
  sim::EventHandler on_done_;
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_PHASED_COLLECTIVE_H_
