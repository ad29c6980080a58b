// Observer of the engine: tracing, statistics and determinism checks subscribe here.
//
// Contract: an observer only reads. It receives values and const references and has no way to
// schedule, cancel or change anything, so a run produces the same results with or without
// observers attached (tests check this byte for byte).

#ifndef PODSIM_SIM_OBSERVER_H_
#define PODSIM_SIM_OBSERVER_H_

#include <cstdint>

#include "sim/time.h"

namespace podsim::sim {

class Observer {
 public:
  virtual ~Observer() = default;

  // Called just before the handler of each executed event runs; `sequence` is the event's
  // insertion number, unique within an engine.
  virtual void OnEvent(Time time, uint64_t sequence) {
    (void)time;
    (void)sequence;
  }
  // Called when Run() or RunUntil() returns.
  virtual void OnRunEnd(Time now) { (void)now; }
};

}  // namespace podsim::sim

#endif  // PODSIM_SIM_OBSERVER_H_
