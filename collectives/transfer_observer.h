// Observer of the transfers a TransferExecutor runs: tracing and statistics subscribe here.
//
// Contract (as sim/observer.h): an observer only reads; it receives values and cannot schedule or
// change anything, so results are the same with or without observers.

#ifndef PODSIM_COLLECTIVES_TRANSFER_OBSERVER_H_
#define PODSIM_COLLECTIVES_TRANSFER_OBSERVER_H_

#include <cstdint>

#include "sim/time.h"
#include "topology/fabric.h"

namespace podsim::collectives {

class TransferObserver {
 public:
  virtual ~TransferObserver() = default;
  // A transfer of `bytes` from src to dst was issued; `id` is unique within its executor (from
  // 1). For transfers addressed to a switch or its reduction engine, src or dst is that switch.
  virtual void OnTransferStarted(sim::Time now, uint64_t id, topology::VertexId src,
                                 topology::VertexId dst, double bytes) = 0;
  // The transfer's last byte arrived; called before the sender's completion callback runs.
  virtual void OnTransferCompleted(sim::Time now, uint64_t id) = 0;
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_TRANSFER_OBSERVER_H_
