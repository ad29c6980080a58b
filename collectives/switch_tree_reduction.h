// SwitchTreeReduction: an all-reduce in a two-level tree of reducing switches, InfiniBand SHARP's
// aggregation tree for a group spanning several leaf switches (scalable units) of a fat tree.
//
// Each member sends its array up to its leaf in chunks; once a leaf holds chunk c from every member
// attached to it, it sends the partial sum up to the roots (the spines above it), striped evenly
// over all of them (1/R of the chunk each, as NCCL spreads its channels over several SHARP trees so
// that every leaf-spine cable carries its share); once a root holds its stripe of chunk c from
// every leaf it multicasts the reduced stripe back down to every leaf, and a leaf that holds all
// R stripes of chunk c multicasts the chunk down to its members. Every hop is an explicit flow on
// the fabric's link directions, so the reduction shows the NIC and leaf-spine bottlenecks and any
// contention instead of assuming them. Chunks pipeline: the upload of chunk c+1 overlaps the
// reduction and multicast of chunk c.
//
// Bytes per chunk of size C: every member up C and down C; every leaf up C and down C in total
// over its R roots. So a member's NIC moves V each way, T = V / W_nic on an idle non-blocking
// tree (book case G19: "multi-node must egress all B bytes from node switch"; at the spine level
// 2*D*F/12.8e12 s).

#ifndef PODSIM_COLLECTIVES_SWITCH_TREE_REDUCTION_H_
#define PODSIM_COLLECTIVES_SWITCH_TREE_REDUCTION_H_

#include <cstdint>
#include <vector>

#include "collectives/collective.h"
#include "collectives/transfer_executor.h"
#include "sim/flow_ids.h"
#include "sim/time.h"

namespace podsim::collectives {

// The resources a flow crosses between a rank and a switch or between two switches, and the
// latency it pays once.
struct SwitchRoute {
  std::vector<sim::ResourceId> links;
  sim::Time latency = sim::Time::Zero();
};

// A leaf switch of the tree: the routes to and from each member attached to it, and to and from
// each root. Every leaf lists the same roots in the same order.
struct TreeLeaf {
  std::vector<SwitchRoute> member_up, member_down;  // Per member: member -> leaf, leaf -> member.
  std::vector<SwitchRoute> root_up, root_down;      // Per root: leaf -> root, root -> leaf.
};

class SwitchTreeReduction : public Collective {
 public:
  // All-reduces `bytes` per member, cut into `chunks` chunks. With a per-message overhead each
  // member keeps 2 uploads in flight (double buffering, as in_switch_reduction.h). REQUIRES:
  // chunks >= 1; at least one leaf; every leaf has at least one member and the same number (>= 1)
  // of roots.
  SwitchTreeReduction(TransferExecutor* executor, std::vector<TreeLeaf> leaves, double bytes,
                      uint32_t chunks);
  void Start(sim::EventHandler on_done) override;

 private:
  void SendUp(uint32_t leaf, uint32_t member);
  void OnMemberUp(uint32_t leaf, uint32_t member);
  void OnLeafUp(uint32_t root, uint32_t chunk);
  void OnRootDown(uint32_t leaf, uint32_t chunk);
  void OnDelivered();

  TransferExecutor* executor_;
  std::vector<TreeLeaf> leaves_;
  uint32_t roots_;
  uint32_t chunks_;
  uint32_t window_;
  double chunk_bytes_;
  std::vector<std::vector<uint32_t>> up_issued_;     // [leaf][member]: uploads started.
  std::vector<std::vector<uint32_t>> up_sent_;       // [leaf][member]: uploads done.
  std::vector<std::vector<uint32_t>> leaf_arrived_;  // [leaf][chunk]: members' uploads arrived.
  std::vector<std::vector<uint32_t>> root_arrived_;  // [root][chunk]: leaves' stripes arrived.
  std::vector<std::vector<uint32_t>> leaf_reduced_;  // [leaf][chunk]: roots' stripes back down.
  size_t pending_ = 0;                               // Member deliveries not yet done.
  sim::Time start_;                                  // When the members' arrays were ready.
  sim::EventHandler on_done_;
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_SWITCH_TREE_REDUCTION_H_
