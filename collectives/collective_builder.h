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

// The groups of the collectives built on one fabric, memoized by their axes, explicit ranks and
// rank shape: a step launches the same groups' collectives for every layer and microbatch, and
// finding a group's lines and whether they close into rings (routes checked link by link) took
// a seventh of a sweep's time. Holds only groups that were valid. Not thread-safe.
class GroupCache {
 public:
  GroupCache();
  ~GroupCache();
  GroupCache(const GroupCache&) = delete;
  GroupCache& operator=(const GroupCache&) = delete;

  struct Impl;  // collective_runner.cc
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Validates `request` and builds its collective on `executor` (whose flow model holds the
// fabric's links), ready to Start; `choice` (optional) receives the algorithm and why. With
// `groups` (of this fabric), the request's groups are looked up there first and stored there.
sim::StatusOr<std::unique_ptr<Collective>> BuildCollective(const topology::Fabric& fabric,
                                                           const CollectiveRequest& request,
                                                           const FabricEfficiency& efficiency,
                                                           TransferExecutor* executor,
                                                           AlgorithmChoice* choice = nullptr,
                                                           GroupCache* groups = nullptr);

// Adds one flow-model resource per fabric link, in link order (as topology::InstallLinks), at
// the bandwidth `efficiency` leaves of the line rate. REQUIRES: `model` has no resources yet.
void InstallEfficientLinks(const topology::Fabric& fabric, const FabricEfficiency& efficiency,
                           sim::FlowModel* model);

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_COLLECTIVE_BUILDER_H_
