#include "topology/fabric_metrics.h"

#include <algorithm>
#include <limits>

namespace podsim::topology {

namespace {

double Sum(const Fabric& f, const std::vector<LinkIndex>& links, size_t first, size_t count) {
  double total = 0;
  for (size_t i = first; i < first + count && i < links.size(); ++i) {
    total += f.link(links[i]).bandwidth_bytes_per_s;
  }
  return total;
}

double TorusSliceBisection(const Fabric& f) {
  const TorusLayout& t = *f.torus();
  const double chips = t.chips_per_slice();
  double best = std::numeric_limits<double>::infinity();
  for (int a = 0; a < t.axes(); ++a) {
    if (t.shape[a] < 2) continue;
    // Bandwidth of one +1 link along this axis (all links of a torus are alike).
    const LinkIndex l = t.neighbour_links[static_cast<size_t>(a) * 2];
    const double rings = chips / t.shape[a];
    best = std::min(best, rings * (t.wraps[a] ? 2 : 1) * f.link(l).bandwidth_bytes_per_s);
  }
  return best == std::numeric_limits<double>::infinity() ? 0 : best;
}

}  // namespace

int DiameterHops(const Fabric& fabric) {
  if (const TorusLayout* t = fabric.torus()) {
    // Dimension-order routes take the shorter way round each wrapped axis (Fabric::Route), so
    // the farthest chip of a slice is half of every wrapped axis and all of every open one away;
    // between slices a route is 4 hops over the hosts and the DCN.
    int hops = 0;
    for (int a = 0; a < t->axes(); ++a) hops += t->wraps[a] ? t->shape[a] / 2 : t->shape[a] - 1;
    return t->slices > 1 ? std::max(hops, 4) : hops;
  }
  // Other fabrics route through a bounded number of switch levels: every route is short.
  const uint32_t chips = fabric.chip_count();
  size_t longest = 0;
  for (VertexId src : {VertexId{0}, chips - 1}) {
    for (VertexId dst = 0; dst < chips; ++dst) {
      longest = std::max(longest, fabric.Route(src, dst).size());
    }
  }
  return static_cast<int>(longest);
}

double BisectionBytesPerS(const Fabric& f) {
  if (f.chip_count() < 2) return 0;
  if (const TorusLayout* t = f.torus()) {
    const double slice = TorusSliceBisection(f);
    if (t->slices == 1) return slice;
    const size_t hosts_per_slice = t->hosts.size() / t->slices;
    const double per_slice_dcn = Sum(f, t->host_to_dcn, 0, hosts_per_slice);
    return std::min(slice * t->slices, per_slice_dcn * t->slices / 2.0);
  }
  if (const GpuLayout* g = f.gpu()) {
    const uint32_t half = f.chip_count() / 2;
    if (g->levels == 1) return Sum(f, g->gpu_to_switch, 0, half * g->switches_per_node);
    double best = Sum(f, g->nic_to_leaf, 0, half);
    const size_t leaves_per_su = g->gpus_per_node;
    if (g->sus >= 2) {
      const double su_up = Sum(f, g->leaf_to_spine, 0, leaves_per_su * g->spines_per_pod);
      best = std::min(best, su_up * g->sus / 2.0);
    }
    if (g->pods >= 2) {
      const double pod_up =
          Sum(f, g->spine_to_core, 0, static_cast<size_t>(g->spines_per_pod) * g->cores_per_group);
      best = std::min(best, pod_up * g->pods / 2.0);
    }
    return best;
  }
  if (const StarLayout* s = f.star()) return Sum(f, s->up, 0, f.chip_count() / 2);
  return 0;
}

InjectionBandwidth ScaleUpInjection(const Fabric& fabric) {
  InjectionBandwidth result;
  result.min_bytes_per_s = std::numeric_limits<double>::infinity();
  for (VertexId c = 0; c < fabric.chip_count(); ++c) {
    double egress = 0;
    for (LinkIndex l : fabric.OutLinks(c)) {
      const LinkKind kind = fabric.link(l).kind;
      if (kind == LinkKind::kIci || kind == LinkKind::kNvLink || kind == LinkKind::kGeneric) {
        egress += fabric.link(l).bandwidth_bytes_per_s;
      }
    }
    result.max_bytes_per_s = std::max(result.max_bytes_per_s, egress);
    result.min_bytes_per_s = std::min(result.min_bytes_per_s, egress);
  }
  if (fabric.chip_count() == 0) result.min_bytes_per_s = 0;
  return result;
}

}  // namespace podsim::topology
