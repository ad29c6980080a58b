// PhasedCollective: a collective built from rounds of ring/line exchanges over subsets of ranks.
//
// The array is split into pieces that proceed independently and concurrently. Each piece runs a
// sequence of phases; in a phase the members are partitioned into lines (rings or lines of
// chips), each running a ShardForwarding with the phase's shard size. A member enters phase p+1
// of a piece as soon as its own line of phase p is done at that member (per-rank dependencies, no
// barrier).
//
// Pipelined pieces (`pipeline`): piece j enters a phase at a member only after piece j-1 has
// finished that phase there, so the pieces flow through the phases like chunks through NCCL's
// pipeline: while piece j crosses the network, piece j-1 is already gathered inside the node, and
// a sequence of phases on different links costs about its slowest phase instead of their sum.
//
// This one mechanism expresses the ring collectives on any fabric (one piece, one line of all
// members; all-reduce = a reduce-scatter phase then an all-gather phase) and the multi-axis torus
// collectives of reference/formulas.md: with k axes the array is split in k pieces whose phases
// visit the axes in rotated orders, so every axis carries traffic at once and the gather costs
// V / (W_bidi * k) instead of V / W_bidi.
//
// Symmetric reduction (`reps`): when a group of rotations of the rank grid maps the collective
// onto itself (collectives::RotatableDims), every member's state equals its orbit
// representative's at every instant, so only representatives enter phases and send; a send into
// another member is received by the representative standing for it (its image under a
// rotation, which keeps every line's direction). Each simulated send then stands for its orbit,
// and the work is the members' over the orbit size; lines without a representative are not built.

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
  uint32_t chunks = 1;  // Sends per step, pipelined (shard_forwarding.h).
};

struct ExchangePiece {
  std::vector<ExchangePhase> phases;
};

// The immutable part of a phased collective: its members, their representatives, and every
// phase's lines and slots. Built once per distinct collective and shared by its launches (a step
// launches the same collective for every layer and microbatch), so that a launch costs the lines
// its representatives run, not its members.
struct PhasedLayout {
  // REQUIRES: every phase partitions `members`; at least one piece with one phase; with
  // `pipeline`, every piece has the same number of phases. `reps`, when not empty: per member,
  // the member standing for it (itself for a representative), from a rotation group under which
  // the pieces are invariant.
  PhasedLayout(std::vector<topology::VertexId> members, std::vector<ExchangePiece> pieces,
               bool pipeline, const std::vector<topology::VertexId>& reps);

  struct Slot {  // Where a member sits in one phase.
    uint32_t line;
    uint32_t index;
  };
  struct Line {
    std::vector<topology::VertexId> ranks;  // Empty: no representative, so it never runs.
    std::vector<uint8_t> simulated;         // Per rank, with reps; empty: every rank.
    ForwardingPattern pattern;
    double shard_bytes;
    uint32_t chunks;
    uint32_t tag;  // What its ShardForwarding reports (an index into `tags`).
  };
  struct Run {
    uint32_t piece;
    uint32_t phase;
    std::vector<Line> lines;
    std::vector<Slot> slot_of_member;  // Indexed by member number.
  };
  struct LineRef {
    uint32_t run;
    uint32_t line;
  };

  std::vector<topology::VertexId> members;
  std::vector<uint32_t> member_of_vertex;     // Vertex -> member number.
  std::vector<uint32_t> rep_of_member;        // Member -> the member standing for it.
  std::vector<uint32_t> simulated;            // Members that are their own representative.
  std::vector<uint32_t> simulated_of_member;  // Member -> its index in `simulated`.
  std::vector<Run> runs;                      // Piece-major.
  std::vector<LineRef> tags;                  // Per tag, its line.
  std::vector<uint32_t> first_run_of_piece;
  std::vector<uint32_t> phases_of_piece;
  bool pipeline = false;
  bool mirrored = false;  // Built with reps.
};

class PhasedCollective : public Collective, public RankDoneListener, public ReceiveRouter {
 public:
  // REQUIRES: as PhasedLayout's.
  PhasedCollective(TransferExecutor* executor, std::vector<topology::VertexId> members,
                   std::vector<ExchangePiece> pieces, bool pipeline = false,
                   const std::vector<topology::VertexId>& reps = {});
  // A launch of a collective whose layout is built (and may be shared with other launches).
  PhasedCollective(TransferExecutor* executor, std::shared_ptr<const PhasedLayout> layout);

  // Starts every piece on every member; `on_done` runs when all members finished all pieces.
  void Start(sim::EventHandler on_done) override;

  void OnRankDone(uint32_t tag, uint32_t rank_index) override;
  void RouteReceive(uint32_t tag, uint32_t index, int direction) override;

 private:
  // Enters the member into `run` once its prerequisites are done (the piece's previous phase and,
  // when pipelined, the previous piece's same phase); does nothing before that or twice.
  void TryEnter(uint32_t run, uint32_t member);
  // Index of (run, simulated member) in entered_ and done_.
  size_t StateIndex(uint32_t run, uint32_t member) const;

  TransferExecutor* executor_;
  std::shared_ptr<const PhasedLayout> layout_;
  // Per run, per line of the layout: its forwarding (null for a line that never runs).
  std::vector<std::vector<std::unique_ptr<ShardForwarding>>> lines_;
  std::vector<uint8_t> entered_;  // Per run and simulated member: RankReady was called.
  std::vector<uint8_t> done_;     // Per run and simulated member: its line finished there.
  size_t remaining_ = 0;          // (piece, member) pairs not finished yet.
  sim::EventHandler on_done_;
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_PHASED_COLLECTIVE_H_
