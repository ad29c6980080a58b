// LinkCopyEcho: a symmetric quotient's flow-model events passed on to an observer, each change of a
// link's usage also as the same change on the link's copies (link_orbits.h, `twin`), whose flows
// the quotient leaves out, and each flow's bytes on a twin also as bytes echoed on its copies:
// trace counters and link reports see a simulated chip's links to every NVSwitch of its node
// loaded as the full simulation loads them.

#ifndef PODSIM_COLLECTIVES_LINK_COPY_ECHO_H_
#define PODSIM_COLLECTIVES_LINK_COPY_ECHO_H_

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "collectives/link_orbits.h"
#include "sim/flow_observer_tee.h"

namespace podsim::collectives {

class LinkCopyEcho : public sim::FlowObserverTee {
 public:
  // `observer` must outlive the echo.
  LinkCopyEcho(sim::FlowObserver* observer, const LinkOrbits& orbits);

  void OnFlowStarted(sim::Time now, sim::FlowId flow, double bytes,
                     std::span<const sim::ResourceId> route,
                     std::span<const double> weights) override;
  void OnResourceUsageChanged(sim::Time now, sim::ResourceId resource,
                              double used_bytes_per_s) override;
  void OnUsageEchoed(sim::Time now, sim::ResourceId resource, double used_bytes_per_s) override;

 private:
  // Calls f with each copy of `twin` (none if it is no twin).
  template <typename F>
  void ForEachCopy(sim::ResourceId twin, F&& f) const {
    auto it = copies_.find(twin.value);
    if (it == copies_.end()) return;
    for (uint32_t copy : it->second) f(sim::ResourceId{copy});
  }

  std::unordered_map<uint32_t, std::vector<uint32_t>> copies_;  // By twin.
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_LINK_COPY_ECHO_H_
