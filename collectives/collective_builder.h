// Building a collective's transfers on a caller's executor (for collective_network.cc); the
// validation and algorithm choice are SimulateCollective's (collective_runner.h).

#ifndef PODSIM_COLLECTIVES_COLLECTIVE_BUILDER_H_
#define PODSIM_COLLECTIVES_COLLECTIVE_BUILDER_H_

#include <memory>

#include "collectives/collective.h"
#include "collectives/collective_runner.h"
#include "collectives/efficiency_model.h"
#include "collectives/transfer_executor.h"
#include "sim/status.h"
#include "topology/fabric.h"

namespace podsim::collectives {

// What building the collectives of one fabric computes, memoized: their groups, by axes,
// explicit ranks and rank shape, and the layouts of phased collectives (phased_collective.h), by
// everything their pieces are built from. A step launches the same collectives for every layer
// and microbatch; finding a group's lines and checking its rings route by route took a seventh
// of a sweep's time, and building the members' phases and slots most of a step's. Holds only
// what was valid, for the network's life: at most one entry per distinct collective of the
// schedule, which is bounded before it runs. Not thread-safe.
class CollectiveCache {
 public:
  CollectiveCache();
  ~CollectiveCache();
  CollectiveCache(const CollectiveCache&) = delete;
  CollectiveCache& operator=(const CollectiveCache&) = delete;

  struct Impl;  // collective_runner.cc
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Validates `request` and builds its collective on `executor` (whose flow model holds the
// fabric's links), ready to Start; `choice` (optional) receives the algorithm and why. With
// `cache` (of this fabric), what the request needs is looked up there first and stored there.
sim::StatusOr<std::unique_ptr<Collective>> BuildCollective(const topology::Fabric& fabric,
                                                           const CollectiveRequest& request,
                                                           const FabricEfficiency& efficiency,
                                                           TransferExecutor* executor,
                                                           AlgorithmChoice* choice = nullptr,
                                                           CollectiveCache* cache = nullptr);

// Adds one flow-model resource per fabric link, in link order (as topology::InstallLinks), at
// the bandwidth `efficiency` leaves of the line rate. REQUIRES: `model` has no resources yet.
void InstallEfficientLinks(const topology::Fabric& fabric, const FabricEfficiency& efficiency,
                           sim::FlowModel* model);

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_COLLECTIVE_BUILDER_H_
