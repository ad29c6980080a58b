// Collective: one running instance of a collective algorithm over groups of ranks.
//
// An algorithm turns an operation on groups of chips into point-to-point transfers with
// dependencies (transfer_executor.h); its time is whatever those transfers take on the fabric.

#ifndef PODSIM_COLLECTIVES_COLLECTIVE_H_
#define PODSIM_COLLECTIVES_COLLECTIVE_H_

#include "sim/event_handler.h"

namespace podsim::collectives {

class Collective {
 public:
  virtual ~Collective() = default;
  // Issues the first transfers at the engine's current time; `on_done` runs once every rank of
  // every group has finished. Called once.
  virtual void Start(sim::EventHandler on_done) = 0;
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_COLLECTIVE_H_
