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

void LinkCopyEcho::OnFlowStarted(sim::Time now, sim::FlowId flow, double bytes,
                                 std::span<const sim::ResourceId> route,
                                 std::span<const double> weights) {
  sim::FlowObserverTee::OnFlowStarted(now, flow, bytes, route, weights);
  for (size_t i = 0; i < route.size(); ++i) {
    const double carried = sim::CarriedBytes(bytes, weights, i);
    ForEachCopy(route[i], [&](sim::ResourceId copy) {
      sim::FlowObserverTee::OnBytesEchoed(now, copy, carried);
    });
  }
}

void LinkCopyEcho::OnResourceUsageChanged(sim::Time now, sim::ResourceId resource,
                                          double used_bytes_per_s) {
  sim::FlowObserverTee::OnResourceUsageChanged(now, resource, used_bytes_per_s);
  ForEachCopy(resource, [&](sim::ResourceId copy) {
    sim::FlowObserverTee::OnResourceUsageChanged(now, copy, used_bytes_per_s);
  });
}

void LinkCopyEcho::OnUsageEchoed(sim::Time now, sim::ResourceId resource, double used_bytes_per_s) {
  sim::FlowObserverTee::OnUsageEchoed(now, resource, used_bytes_per_s);
  ForEachCopy(resource, [&](sim::ResourceId copy) {
    sim::FlowObserverTee::OnUsageEchoed(now, copy, used_bytes_per_s);
  });
}

}  // namespace podsim::collectives
