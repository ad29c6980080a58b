#include "collectives/link_load.h"

#include <algorithm>

namespace podsim::collectives {

namespace {
// Links within this fraction of the busiest one share its title.
constexpr double kTie = 0.01;
}  // namespace

LinkLoadMeter::LinkLoadMeter(const topology::Fabric* fabric)
    : fabric_(fabric), loads_(fabric->link_count()) {}

void LinkLoadMeter::OnFlowStarted(sim::Time, sim::FlowId, double bytes,
                                  std::span<const sim::ResourceId> route,
                                  std::span<const double> weights) {
  for (size_t i = 0; i < route.size(); ++i) {
    if (route[i].value >= loads_.size()) continue;
    loads_[route[i].value].bytes += sim::CarriedBytes(bytes, weights, i);
  }
}

void LinkLoadMeter::OnUsageEchoed(sim::Time now, sim::ResourceId resource,
                                  double used_bytes_per_s) {
  if (resource.value >= loads_.size()) return;
  Load& load = loads_[resource.value];
  load.bytes += load.echoed * (now - load.since).ToSeconds();
  load.echoed = used_bytes_per_s;
  load.since = now;
}

void LinkLoadMeter::OnBytesEchoed(sim::Time, sim::ResourceId resource, double bytes) {
  if (resource.value < loads_.size()) loads_[resource.value].bytes += bytes;
}

std::vector<double> LinkLoadMeter::Utilisation(sim::Time end, const LinkOrbits* orbits) const {
  std::vector<double> utilisation(loads_.size(), 0);
  const double seconds = end.ToSeconds();
  if (!(seconds > 0)) return utilisation;
  for (size_t link = 0; link < loads_.size(); ++link) {
    const Load& load = loads_[link];
    const double carried = load.bytes + load.echoed * (end - load.since).ToSeconds();
    utilisation[link] =
        carried /
        (fabric_->link(static_cast<topology::LinkIndex>(link)).bandwidth_bytes_per_s * seconds);
  }
  if (orbits == nullptr) return utilisation;
  // On a quotient a link is as busy as its orbit's canonical link.
  std::vector<double> expanded(loads_.size(), 0);
  for (size_t link = 0; link < loads_.size(); ++link) {
    expanded[link] = utilisation[orbits->canonical[link]];
  }
  return expanded;
}

Bottleneck LinkLoadMeter::Busiest(sim::Time end, const LinkOrbits* orbits) const {
  Bottleneck bottleneck;
  const std::vector<double> utilisation = Utilisation(end, orbits);
  if (utilisation.empty()) return bottleneck;
  bottleneck.utilisation = *std::max_element(utilisation.begin(), utilisation.end());
  if (!(bottleneck.utilisation > 0)) {
    bottleneck.utilisation = 0;
    return bottleneck;
  }
  // Every link of the busiest orbits is listed, as the full simulation lists them.
  for (size_t link = 0; link < utilisation.size(); ++link) {
    if (utilisation[link] < bottleneck.utilisation * (1 - kTie)) continue;
    bottleneck.links.push_back(static_cast<topology::LinkIndex>(link));
  }
  bottleneck.link_count = bottleneck.links.size();
  return bottleneck;
}

}  // namespace podsim::collectives
