#include "collectives/link_copy_echo.h"

#include "sim/check.h"

namespace podsim::collectives {

LinkCopyEcho::LinkCopyEcho(sim::FlowObserver* observer, const LinkOrbits& orbits)
    : sim::FlowObserverTee({observer}) {
  PODSIM_CHECK(observer != nullptr) << "LinkCopyEcho needs an observer";
  for (topology::LinkIndex link = 0; link < orbits.twin.size(); ++link) {
    if (orbits.IsCopy(link)) copies_[orbits.twin[link]].push_back(link);
  }
}

void LinkCopyEcho::OnResourceUsageChanged(sim::Time now, sim::ResourceId resource,
                                          double used_bytes_per_s) {
  sim::FlowObserverTee::OnResourceUsageChanged(now, resource, used_bytes_per_s);
  auto it = copies_.find(resource.value);
  if (it == copies_.end()) return;
  for (uint32_t copy : it->second) {
    sim::FlowObserverTee::OnResourceUsageChanged(now, sim::ResourceId{copy}, used_bytes_per_s);
  }
}

}  // namespace podsim::collectives
