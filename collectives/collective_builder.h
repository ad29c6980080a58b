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

// Validates `request` and builds its collective on `executor` (whose flow model holds the
// fabric's links), ready to Start; `choice` (optional) receives the algorithm and why.
sim::StatusOr<std::unique_ptr<Collective>> BuildCollective(const topology::Fabric& fabric,
                                                           const CollectiveRequest& request,
                                                           const FabricEfficiency& efficiency,
                                                           TransferExecutor* executor,
                                                           AlgorithmChoice* choice = nullptr);

// Adds one flow-model resource per fabric link, in link order (as topology::InstallLinks), at
// the bandwidth `efficiency` leaves of the line rate. REQUIRES: `model` has no resources yet.
void InstallEfficientLinks(const topology::Fabric& fabric, const FabricEfficiency& efficiency,
                           sim::FlowModel* model);

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_COLLECTIVE_BUILDER_H_
