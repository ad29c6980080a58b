// Handles of the flow model: a resource (one direction of a link, a NIC, a switch port) and a
// flow (bytes moving over a route of resources).

#ifndef PODSIM_SIM_FLOW_IDS_H_
#define PODSIM_SIM_FLOW_IDS_H_

#include <cstdint>

namespace podsim::sim {

// Dense index of a resource in its FlowModel, in creation order from 0.
struct ResourceId {
  uint32_t value = 0;
  friend auto operator<=>(const ResourceId&, const ResourceId&) = default;
};

// Names a flow; stays unique for the life of the model even when slots are reused.
struct FlowId {
  uint32_t slot = 0;
  uint32_t generation = 0;  // 0 names no flow.
  bool valid() const { return generation != 0; }
  friend bool operator==(const FlowId&, const FlowId&) = default;
};

}  // namespace podsim::sim

#endif  // PODSIM_SIM_FLOW_IDS_H_
