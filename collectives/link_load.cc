#include "collectives/link_load.h"

#include <algorithm>

namespace podsim::collectives {

namespace {
// Links within this fraction of the busiest one share its title.
constexpr double kTie = 0.01;
}  // namespace

LinkLoadMeter::LinkLoadMeter(const topology::Fabric* fabric)
    : fabric_(fabric),
      bytes_(fabric->link_count(), 0),
      rate_(fabric->link_count(), 0),
      since_(fabric->link_count(), sim::Time::Zero()) {}

void LinkLoadMeter::OnResourceUsageChanged(sim::Time now, sim::ResourceId resource,
                                           double used_bytes_per_s) {
  const size_t link = resource.value;
  if (link >= rate_.size()) return;
  bytes_[link] += rate_[link] * (now - since_[link]).ToSeconds();
  rate_[link] = used_bytes_per_s;
  since_[link] = now;
}

Bottleneck LinkLoadMeter::Busiest(sim::Time end, const LinkOrbits* orbits) const {
  Bottleneck bottleneck;
  const double seconds = end.ToSeconds();
  if (!(seconds > 0)) return bottleneck;
  std::vector<double> utilisation(rate_.size(), 0);
  for (size_t link = 0; link < rate_.size(); ++link) {
    const double carried = bytes_[link] + rate_[link] * (end - since_[link]).ToSeconds();
    utilisation[link] =
        carried /
        (fabric_->link(static_cast<topology::LinkIndex>(link)).bandwidth_bytes_per_s * seconds);
  }
  bottleneck.utilisation = *std::max_element(utilisation.begin(), utilisation.end());
  if (!(bottleneck.utilisation > 0)) {
    bottleneck.utilisation = 0;
    return bottleneck;
  }
  std::vector<bool> busiest(rate_.size(), false);
  for (size_t link = 0; link < rate_.size(); ++link) {
    if (utilisation[link] < bottleneck.utilisation * (1 - kTie)) continue;
    busiest[link] = true;
    bottleneck.links.push_back(static_cast<topology::LinkIndex>(link));
  }
  if (orbits == nullptr) {
    bottleneck.link_count = bottleneck.links.size();
    return bottleneck;
  }
  for (size_t link = 0; link < orbits->canonical.size(); ++link) {
    if (busiest[orbits->canonical[link]]) ++bottleneck.link_count;
  }
  return bottleneck;
}

}  // namespace podsim::collectives
