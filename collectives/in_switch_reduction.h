// InSwitchReduction: NVLink SHARP (NVLS) / InfiniBand SHARP, the switch doing the reduction.
//
// Every member sends its data up to each switch that reduces (its share of the bytes to switch s
// in proportion to its links to s, as NCCL stripes over all NVLinks); once a switch holds a chunk
// from every member it reduces it and multicasts the result down to every member. The switches
// are explicit: the up flows cross the member->switch links (and, when the efficiency model
// limits it, the switch's reduction engine, a resource of its own), the down flows the
// switch->member links. The array is cut into chunks so the upload of chunk c+1 overlaps the
// multicast of chunk c. When messages carry a software overhead each member keeps 2 chunks in
// flight to each switch (double buffering; NCCL allows up to NCCL_STEPS = 8 per connection,
// src/include/device.h), so the overhead of one chunk overlaps the bytes of the other instead of
// idling the link; chunks in flight share the link and finish together, so the last multicast
// waits for 2 chunks (8 would cost 8/256 = 3% on a large all-reduce). Without overhead there is
// nothing to hide and one chunk is in flight.
//
// Bytes per member per chunk of size C (n members):
//   all-reduce      up C,     down C         -> T = V / W_egress (formulas.md 2.7 "SHARP
//                                               AllReduce", book case G18), vs 2 V (n-1)/n / W
//                                               for a ring.
//   reduce-scatter  up C,     down C / n
//   all-gather      up C / n, down C (n-1)/n (multicast; a member's own piece stays local)

#ifndef PODSIM_COLLECTIVES_IN_SWITCH_REDUCTION_H_
#define PODSIM_COLLECTIVES_IN_SWITCH_REDUCTION_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "collectives/collective.h"
#include "collectives/collective_op.h"
#include "collectives/transfer_executor.h"
#include "sim/flow_ids.h"
#include "sim/time.h"

namespace podsim::collectives {

// One reducing switch and how each member reaches it.
struct ReductionSwitch {
  // Share of every member's bytes this switch handles; they sum to 1 over a node's switches, of
  // which a quotient keeps those that are not copies (link_orbits.h).
  double fraction = 1;
  std::vector<std::vector<sim::ResourceId>> up;  // Per member: member -> switch.
  // The switch's reduction engine (a resource of limited throughput), which every upload of a
  // reducing op crosses after its links; an all-gather's uploads are multicast stores that do
  // not use it. Empty: unlimited.
  std::optional<sim::ResourceId> engine;
  std::vector<std::vector<sim::ResourceId>> down;   // Per member: switch -> member.
  std::vector<sim::Time> up_latency, down_latency;  // Per member.
};

class InSwitchReduction : public Collective {
 public:
  // `members` is the number of ranks; each switch lists routes for all of them. `simulated`, when
  // not empty, lists the members that send and receive, representatives of a symmetric quotient
  // (collective_runner.h, CollectiveRequest::rank_reps): every member's uploads and deliveries
  // are then those of its representative, moved by a symmetry, so a switch holds a chunk from
  // every member when it holds it from every representative. REQUIRES: op is all-reduce,
  // reduce-scatter or all-gather; chunks >= 1; members >= 1; `simulated` ascending members.
  InSwitchReduction(TransferExecutor* executor, CollectiveOp op, uint32_t members,
                    std::vector<ReductionSwitch> switches, double bytes, uint32_t chunks,
                    std::vector<uint32_t> simulated = {});
  void Start(sim::EventHandler on_done) override;

 private:
  void SendUp(uint32_t sw, uint32_t member);
  void OnUpDone(uint32_t sw, uint32_t member);

  TransferExecutor* executor_;
  CollectiveOp op_;
  uint32_t members_;
  std::vector<uint32_t> simulated_;  // The members that send and receive.
  std::vector<ReductionSwitch> switches_;
  uint32_t chunks_;
  uint32_t window_;
  double up_bytes_ = 0;    // Per member per chunk, before the switch's fraction.
  double down_bytes_ = 0;  // Per member per chunk, before the switch's fraction.
  std::vector<std::vector<uint32_t>> up_issued_;  // [switch][member]: chunk uploads started.
  std::vector<std::vector<uint32_t>> up_sent_;    // [switch][member]: chunks uploaded.
  std::vector<std::vector<uint32_t>> arrived_;    // [switch][chunk]: members whose chunk arrived.
  size_t pending_ = 0;                            // Down transfers not yet delivered.
  sim::EventHandler on_done_;
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_IN_SWITCH_REDUCTION_H_
