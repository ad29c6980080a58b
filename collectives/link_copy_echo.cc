#include "collectives/link_copy_echo.h"

#include "sim/check.h"

namespace podsim::collectives {

LinkCopyEcho::LinkCopyEcho(sim::FlowObserver* observer, const LinkOrbits& orbits)
    : observer_(observer) {
  PODSIM_CHECK(observer_ != nullptr) << "LinkCopyEcho needs an observer";
  for (topology::LinkIndex link = 0; link < orbits.twin.size(); ++link) {
    if (orbits.IsCopy(link)) copies_[orbits.twin[link]].push_back(link);
  }
}

void LinkCopyEcho::OnFlowStarted(sim::Time now, sim::FlowId flow, double bytes,
                                 std::span<const sim::ResourceId> route) {
  observer_->OnFlowStarted(now, flow, bytes, route);
}

void LinkCopyEcho::OnFlowRateChanged(sim::Time now, sim::FlowId flow, double rate_bytes_per_s) {
  observer_->OnFlowRateChanged(now, flow, rate_bytes_per_s);
}

void LinkCopyEcho::OnFlowCompleted(sim::Time now, sim::FlowId flow) {
  observer_->OnFlowCompleted(now, flow);
}

void LinkCopyEcho::OnResourceUsageChanged(sim::Time now, sim::ResourceId resource,
                                          double used_bytes_per_s) {
  observer_->OnResourceUsageChanged(now, resource, used_bytes_per_s);
  auto it = copies_.find(resource.value);
  if (it == copies_.end()) return;
  for (uint32_t copy : it->second) {
    observer_->OnResourceUsageChanged(now, sim::ResourceId{copy}, used_bytes_per_s);
  }
}

}  // namespace podsim::collectives
