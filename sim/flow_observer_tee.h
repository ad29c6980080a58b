// FlowObserverTee: passes every flow-model event (flow_observer.h) on to several observers, in
// the order given; flows' usage only to those that want it (WantsFlowUsage, asked when the tee is
// built). Subclasses may add events of their own by overriding and calling through; one that adds
// to flows' usage must add to echoed usage (OnUsageEchoed) too, which the tee passes on as such.

#ifndef PODSIM_SIM_FLOW_OBSERVER_TEE_H_
#define PODSIM_SIM_FLOW_OBSERVER_TEE_H_

#include <span>
#include <vector>

#include "sim/flow_observer.h"

namespace podsim::sim {

class FlowObserverTee : public FlowObserver {
 public:
  // Null observers are skipped; the others must outlive the tee.
  explicit FlowObserverTee(std::vector<FlowObserver*> observers);
  void OnFlowStarted(Time now, FlowId flow, double bytes, std::span<const ResourceId> route,
                     std::span<const double> weights) override;
  void OnFlowRateChanged(Time now, FlowId flow, double rate_bytes_per_s) override;
  void OnFlowCompleted(Time now, FlowId flow) override;
  // To the observers that want flows' usage.
  void OnResourceUsageChanged(Time now, ResourceId resource, double used_bytes_per_s) override;
  bool WantsFlowUsage() const override { return !usage_observers_.empty(); }
  void OnUsageEchoed(Time now, ResourceId resource, double used_bytes_per_s) override;
  void OnBytesEchoed(Time now, ResourceId resource, double bytes) override;

 private:
  std::vector<FlowObserver*> observers_;
  std::vector<FlowObserver*> usage_observers_;  // Those of observers_ that want flows' usage.
};

}  // namespace podsim::sim

#endif  // PODSIM_SIM_FLOW_OBSERVER_TEE_H_
