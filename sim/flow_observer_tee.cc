#include "sim/flow_observer_tee.h"

namespace podsim::sim {

FlowObserverTee::FlowObserverTee(std::vector<FlowObserver*> observers) {
  for (FlowObserver* observer : observers) {
    if (observer == nullptr) continue;
    observers_.push_back(observer);
    if (observer->WantsFlowUsage()) usage_observers_.push_back(observer);
  }
}

void FlowObserverTee::OnFlowStarted(Time now, FlowId flow, double bytes,
                                    std::span<const ResourceId> route,
                                    std::span<const double> weights) {
  for (FlowObserver* o : observers_) o->OnFlowStarted(now, flow, bytes, route, weights);
}

void FlowObserverTee::OnFlowRateChanged(Time now, FlowId flow, double rate) {
  for (FlowObserver* o : observers_) o->OnFlowRateChanged(now, flow, rate);
}

void FlowObserverTee::OnFlowCompleted(Time now, FlowId flow) {
  for (FlowObserver* o : observers_) o->OnFlowCompleted(now, flow);
}

void FlowObserverTee::OnResourceUsageChanged(Time now, ResourceId resource, double used) {
  for (FlowObserver* o : usage_observers_) o->OnResourceUsageChanged(now, resource, used);
}

void FlowObserverTee::OnUsageEchoed(Time now, ResourceId resource, double used) {
  for (FlowObserver* o : observers_) o->OnUsageEchoed(now, resource, used);
}

void FlowObserverTee::OnBytesEchoed(Time now, ResourceId resource, double bytes) {
  for (FlowObserver* o : observers_) o->OnBytesEchoed(now, resource, bytes);
}

}  // namespace podsim::sim
