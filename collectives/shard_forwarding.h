// ShardForwarding: the step-by-step neighbour exchange behind ring and line collectives.
//
// The ranks of one ring (or line) pass shards to their neighbours in steps. At step s a rank
// forwards, in each direction it uses, the shard it received at step s-1 (its own at step 0), so
// a rank's sends are gated by its receives and never by a global barrier: per-rank dependencies,
// as NCCL's and XLA's rings run. A rank also finishes one send in a direction before it starts
// the next there (one channel per direction).
//
// Patterns (n ranks; the reduce-scatter of each is the all-gather's transpose, with the same
// shards on the same links in mirrored order, so it takes the same time):
//   * Unidirectional ring: n-1 steps clockwise. (reference/formulas.md: V(N-1)/(N W_uni))
//   * Bidirectional ring: every shard travels both ways for floor(n/2) steps; with n even the
//     shard of the opposite rank is split, half going each way, so both directions carry
//     (n-1)/2 shards. The exchange takes n/2 hops and (n-1)/n V / W_bidi: the book's AllGather
//     T = max(T_min X/2, V/W_ici), where the book rounds (n-1)/n to 1.
//   * Line (an axis without wraparound): every shard travels towards both ends; the link next to
//     an end carries n-1 shards, so it takes about twice the wrapped time (formulas.md).
//   * Shift: one step of the unidirectional ring: every rank sends its shard to the next and
//     receives the previous rank's (CollectiveOp::kShift).
// The bytes of each send are the shard size given; the caller sizes shards per operation.
//
// Chunks: with `chunks` C > 1 every step is cut into C sends, and chunk k of step s goes as soon
// as chunk k of step s-1 has arrived and the previous send in that direction is done. Sends of a
// direction stream back to back (SendTiming in transfer_executor.h), so the route latency of a
// chunk overlaps the delivery of the previous one, as in NCCL's pipelined rings; a step's latency
// is paid once per pipeline fill instead of once per step. C = 1 (the default) sends one shard
// per step.

#ifndef PODSIM_COLLECTIVES_SHARD_FORWARDING_H_
#define PODSIM_COLLECTIVES_SHARD_FORWARDING_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "collectives/transfer_executor.h"
#include "sim/time.h"
#include "topology/fabric.h"

namespace podsim::collectives {

enum class ForwardingPattern { kUnidirectionalRing, kBidirectionalRing, kLine, kShift };

std::string_view ForwardingPatternName(ForwardingPattern pattern);

// Told when a rank has sent and received everything it will in one ShardForwarding.
class RankDoneListener {
 public:
  virtual ~RankDoneListener() = default;
  virtual void OnRankDone(uint32_t tag, uint32_t rank_index) = 0;
};

// Takes the receives of ranks a ShardForwarding does not simulate (ShardForwarding::Mirror).
class ReceiveRouter {
 public:
  virtual ~ReceiveRouter() = default;
  // The rank at `index` of the ShardForwarding reporting `tag` received its next send from
  // `direction` (0: sent by its -1 neighbour towards +1; 1: the other way), now.
  virtual void RouteReceive(uint32_t tag, uint32_t index, int direction) = 0;
};

class ShardForwarding {
 public:
  // `ranks` in ring (or line) order. `listener` and `executor` must outlive this object; `tag` is
  // passed back to the listener.
  ShardForwarding(TransferExecutor* executor, std::vector<topology::VertexId> ranks,
                  ForwardingPattern pattern, double shard_bytes, RankDoneListener* listener,
                  uint32_t tag, uint32_t chunks = 1);
  ShardForwarding(const ShardForwarding&) = delete;
  ShardForwarding& operator=(const ShardForwarding&) = delete;

  // The rank at `index` has its input and may start sending. Each rank is made ready once.
  void RankReady(uint32_t index);

  // Symmetric reduction (phased_collective.h): only the ranks with `simulated` set are made
  // ready and send; a send into one that is not goes to `router`, which hands it to the rank
  // standing for it (Receive). `router` must outlive this object.
  void Mirror(std::vector<uint8_t> simulated, ReceiveRouter* router);
  // The rank at `index` received its next send from `direction` now (a routed receive).
  void Receive(uint32_t index, int direction);

  size_t size() const { return ranks_.size(); }
  topology::VertexId rank(uint32_t index) const { return ranks_[index]; }
  // Number of steps in which the rank at `index` sends in `direction` (0: +1 neighbour, 1: -1
  // neighbour); each step is `chunks` sends.
  uint32_t StepCount(uint32_t index, int direction) const;

 private:
  struct RankState {
    bool ready = false;
    bool done = false;
    bool sending[2] = {false, false};
    uint32_t sent[2] = {0, 0};      // Sends completed per direction.
    uint32_t received[2] = {0, 0};  // Receives completed per direction.
    sim::Time ready_time;           // When RankReady was called.
    sim::Time last_done[2];         // When the last send in each direction completed.
    // Arrival times of the receives not yet forwarded: receive r is at arrivals[d][r - base[d]].
    std::vector<sim::Time> arrivals[2];
    uint32_t base[2] = {0, 0};
  };

  uint32_t Neighbour(uint32_t index, int direction) const;
  uint32_t ReceiveCount(uint32_t index, int direction) const;
  void TryAdvance(uint32_t index);
  void OnSendDone(uint32_t index, int direction);
  // Counts the receive and keeps its arrival time if a later send forwards it.
  void RecordReceive(uint32_t index, int direction);
  void CheckDone(uint32_t index);

  TransferExecutor* executor_;
  std::vector<topology::VertexId> ranks_;
  ForwardingPattern pattern_;
  double shard_bytes_;
  uint32_t chunks_;
  RankDoneListener* listener_;
  uint32_t tag_;
  std::vector<RankState> state_;
  std::vector<uint8_t> simulated_;  // Empty: every rank.
  ReceiveRouter* router_ = nullptr;
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_SHARD_FORWARDING_H_
