// Observer of the flow model (flow_model.h): link-utilisation counters and flow slices in
// traces, bandwidth statistics. Like sim::Observer it only reads; it cannot change a rate.

#ifndef PODSIM_SIM_FLOW_OBSERVER_H_
#define PODSIM_SIM_FLOW_OBSERVER_H_

#include <cstddef>
#include <span>

#include "sim/flow_ids.h"
#include "sim/time.h"

namespace podsim::sim {

class FlowObserver {
 public:
  virtual ~FlowObserver() = default;

  // A flow was accepted by StartFlow; it starts moving bytes after its latency. `weights`:
  // FlowSpec::weights, one per resource of the route, or empty for 1 on each.
  virtual void OnFlowStarted(Time now, FlowId flow, double bytes, std::span<const ResourceId> route,
                             std::span<const double> weights) {
    (void)now, (void)flow, (void)bytes, (void)route, (void)weights;
  }
  // The max-min share of an active flow changed (bytes/s).
  virtual void OnFlowRateChanged(Time now, FlowId flow, double rate_bytes_per_s) {
    (void)now, (void)flow, (void)rate_bytes_per_s;
  }
  // The flow delivered its last byte; called before its completion callback runs.
  virtual void OnFlowCompleted(Time now, FlowId flow) { (void)now, (void)flow; }
  // The total rate of the flows crossing a resource changed (bytes/s).
  virtual void OnResourceUsageChanged(Time now, ResourceId resource, double used_bytes_per_s) {
    (void)now, (void)resource, (void)used_bytes_per_s;
  }
  // Whether OnResourceUsageChanged is to report the usage of the flows the model runs. False for
  // an observer that counts each flow's bytes from OnFlowStarted: it hears only of usage echoed
  // on held resources (OnUsageEchoed). The answer must not change over the observer's life:
  // models and tees ask once, when it is attached; reporting usage costs a call per resource a
  // reallocation touched.
  virtual bool WantsFlowUsage() const { return true; }
  // A held resource carries `used_bytes_per_s` from now on, for flows a caller stands in for
  // (FlowModel::EchoUsage); by default a usage change like any other.
  virtual void OnUsageEchoed(Time now, ResourceId resource, double used_bytes_per_s) {
    OnResourceUsageChanged(now, resource, used_bytes_per_s);
  }
  // A flow the model leaves out carries `bytes` (its weight there applied) over `resource`,
  // started now with the flow that stands for it (a symmetric quotient's flow on a copy link,
  // collectives/link_copy_echo.h, which also echoes the usage of those flows). An observer that
  // counts bytes from OnFlowStarted counts these too; one that integrates usage ignores them.
  virtual void OnBytesEchoed(Time now, ResourceId resource, double bytes) {
    (void)now, (void)resource, (void)bytes;
  }
};

// The bytes a flow of `bytes` puts on the `hop`-th resource of its route, given OnFlowStarted's
// `weights` (empty: 1 on each): what byte-counting observers add up.
inline double CarriedBytes(double bytes, std::span<const double> weights, size_t hop) {
  return weights.empty() ? bytes : bytes * weights[hop];
}

}  // namespace podsim::sim

#endif  // PODSIM_SIM_FLOW_OBSERVER_H_
