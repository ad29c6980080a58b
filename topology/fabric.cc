#include "topology/fabric.h"

#include <boost/graph/breadth_first_search.hpp>
#include <cmath>
#include <numeric>

#include "sim/check.h"
#include "sim/flow_model.h"

namespace podsim::topology {

std::string_view VertexKindName(VertexKind kind) {
  switch (kind) {
    case VertexKind::kChip:
      return "chip";
    case VertexKind::kNvSwitch:
      return "nvswitch";
    case VertexKind::kLeafSwitch:
      return "leaf";
    case VertexKind::kSpineSwitch:
      return "spine";
    case VertexKind::kCoreSwitch:
      return "core";
    case VertexKind::kNic:
      return "nic";
    case VertexKind::kHost:
      return "host";
    case VertexKind::kDcnSwitch:
      return "dcn";
    case VertexKind::kSwitch:
      return "switch";
  }
  return "unknown";
}

std::string_view LinkKindName(LinkKind kind) {
  switch (kind) {
    case LinkKind::kIci:
      return "ici";
    case LinkKind::kNvLink:
      return "nvlink";
    case LinkKind::kPcie:
      return "pcie";
    case LinkKind::kInfiniBand:
      return "infiniband";
    case LinkKind::kDcn:
      return "dcn";
    case LinkKind::kGeneric:
      return "generic";
  }
  return "unknown";
}

int TorusLayout::chips_per_slice() const {
  int chips = 1;
  for (int extent : shape) chips *= extent;
  return chips;
}

uint32_t GpuLayout::LeafOf(uint32_t gpu) const {
  const int su = SuOfNode(NodeOf(gpu));
  return static_cast<uint32_t>(su * gpus_per_node) + gpu % static_cast<uint32_t>(gpus_per_node);
}

VertexId Fabric::AddVertex(VertexKind kind, std::string name) {
  if (kind == VertexKind::kChip) {
    PODSIM_CHECK(chip_count_ == kinds_.size()) << "chips must be added before other vertices";
    ++chip_count_;
  }
  VertexId id = static_cast<VertexId>(boost::add_vertex(*graph_));
  PODSIM_CHECK(id == kinds_.size());
  kinds_.push_back(kind);
  names_.push_back(std::move(name));
  return id;
}

LinkIndex Fabric::AddLink(VertexId src, VertexId dst, double bandwidth_bytes_per_s,
                          sim::Time latency, LinkKind kind) {
  PODSIM_CHECK(src < vertex_count() && dst < vertex_count() && src != dst)
      << "bad link " << src << " -> " << dst;
  PODSIM_CHECK(std::isfinite(bandwidth_bytes_per_s) && bandwidth_bytes_per_s > 0)
      << "link bandwidth " << bandwidth_bytes_per_s;
  PODSIM_CHECK(latency >= sim::Time::Zero());
  const LinkIndex index = static_cast<LinkIndex>(links_.size());
  PODSIM_CHECK(index != kNoLink) << "too many links";
  boost::add_edge(src, dst, index, *graph_);
  links_.push_back(Link{src, dst, bandwidth_bytes_per_s, latency, kind});
  return index;
}

std::vector<LinkIndex> Fabric::OutLinks(VertexId v) const {
  std::vector<LinkIndex> out;
  auto index = boost::get(boost::edge_index, *graph_);
  for (auto [it, end] = boost::out_edges(v, *graph_); it != end; ++it) out.push_back(index[*it]);
  return out;
}

uint32_t Fabric::CountVertices(VertexKind kind) const {
  uint32_t count = 0;
  for (VertexKind k : kinds_) count += (k == kind);
  return count;
}

// ---- Routing ----

std::vector<LinkIndex> Fabric::Route(VertexId src, VertexId dst) const {
  std::vector<LinkIndex> route;
  AppendRoute(src, dst, &route);
  return route;
}

void Fabric::AppendRoute(VertexId src, VertexId dst, std::vector<LinkIndex>* route) const {
  PODSIM_CHECK(src < vertex_count() && dst < vertex_count()) << src << " -> " << dst;
  if (src == dst) return;
  const bool chips = src < chip_count_ && dst < chip_count_;
  if (chips && torus_) {
    AppendTorusRoute(src, dst, route);
    return;
  }
  if (chips && gpu_) {
    const int s = static_cast<int>((src % gpu_->gpus_per_node + dst % gpu_->gpus_per_node) %
                                   gpu_->switches_per_node);
    AppendGpuRoute(src, dst, s, route);
    return;
  }
  if (chips && star_) {
    route->push_back(star_->up[src]);
    route->push_back(star_->down[dst]);
    return;
  }
  std::vector<LinkIndex> path = BfsRoute(src, dst);
  route->insert(route->end(), path.begin(), path.end());
}

std::vector<WeightedRoute> Fabric::ParallelRoutes(VertexId src, VertexId dst,
                                                  bool every_axis_first) const {
  std::vector<WeightedRoute> routes;
  ParallelRoutes(src, dst, &routes, every_axis_first);
  return routes;
}

void Fabric::ParallelRoutes(VertexId src, VertexId dst, std::vector<WeightedRoute>* routes,
                            bool every_axis_first) const {
  // Reuses the caller's vectors (their capacity) so a hot loop of transfers does not allocate.
  auto next_route = [routes](size_t i, double fraction) -> std::vector<LinkIndex>* {
    if (routes->size() <= i) routes->emplace_back();
    (*routes)[i].fraction = fraction;
    (*routes)[i].route.clear();
    return &(*routes)[i].route;
  };
  size_t count = 0;
  if (torus_ && src < chip_count_ && dst < chip_count_) {
    // Neighbours (every ring step) need no coordinates: one of src's axis links reaches dst, and a
    // one-hop distance is never a tie (a wrapped axis of length 2 has no wrap link).
    const size_t base = static_cast<size_t>(src) * torus_->axes() * 2;
    for (size_t i = 0; i < static_cast<size_t>(torus_->axes()) * 2; ++i) {
      const LinkIndex l = torus_->neighbour_links[base + i];
      if (l != kNoLink && links_[l].dst == dst) {
        next_route(count++, 1.0)->push_back(l);
        routes->resize(count);
        return;
      }
    }
  }
  if (gpu_ && src != dst && src < chip_count_ && dst < chip_count_ &&
      gpu_->NodeOf(src) == gpu_->NodeOf(dst)) {
    const int total =
        std::accumulate(gpu_->nvlinks_per_switch.begin(), gpu_->nvlinks_per_switch.end(), 0);
    for (int s = 0; s < gpu_->switches_per_node; ++s) {
      AppendGpuRoute(src, dst, s,
                     next_route(count++, static_cast<double>(gpu_->nvlinks_per_switch[s]) / total));
    }
  } else if (torus_ && src != dst && src < chip_count_ && dst < chip_count_ &&
             SliceOf(src) == SliceOf(dst)) {
    // Equal-cost directions: on a wrapped axis whose distance is exactly half its length both
    // ways round are shortest; the transfer is split evenly over every combination.
    Coord from, to;
    LocalCoord(src, &from);
    LocalCoord(dst, &to);
    int tie_axes[kMaxAxes];
    int ties = 0;
    int first_axes[kMaxAxes];
    int firsts = 0;
    for (int axis = 0; axis < torus_->axes(); ++axis) {
      const int length = torus_->shape[axis];
      const int forward = ((to[axis] - from[axis]) % length + length) % length;
      if (forward != 0 && (every_axis_first || firsts == 0)) first_axes[firsts++] = axis;
      if (torus_->wraps[axis] && forward != 0 && 2 * forward == length) tie_axes[ties++] = axis;
    }
    const uint32_t combinations = 1u << ties;
    const double fraction = 1.0 / (combinations * static_cast<uint32_t>(firsts));
    for (int f = 0; f < firsts; ++f) {
      for (uint32_t c = 0; c < combinations; ++c) {
        uint32_t mask = 0;
        for (int i = 0; i < ties; ++i) {
          if ((c >> i) & 1u) mask |= 1u << tie_axes[i];
        }
        AppendTorusRoute(src, dst, next_route(count++, fraction), mask, first_axes[f]);
      }
    }
  } else {
    AppendRoute(src, dst, next_route(count++, 1.0));
  }
  routes->resize(count);
}

sim::Time Fabric::RouteLatency(const std::vector<LinkIndex>& route) const {
  sim::Time total = sim::Time::Zero();
  for (LinkIndex l : route) total += links_[l].latency;
  return total;
}

double Fabric::RouteBandwidth(const std::vector<LinkIndex>& route) const {
  double bandwidth = std::numeric_limits<double>::infinity();
  for (LinkIndex l : route) bandwidth = std::min(bandwidth, links_[l].bandwidth_bytes_per_s);
  return bandwidth;
}

void Fabric::AppendTorusRoute(uint32_t src, uint32_t dst, std::vector<LinkIndex>* route,
                              uint32_t negative_on_tie, int first_axis) const {
  if (SliceOf(src) != SliceOf(dst)) {
    // Between slices: over the hosts' NICs and the DCN (hardware.md 1.1: "DCN transfers go
    // host-to-host: PCIe -> host NIC -> network -> target host -> PCIe -> HBM").
    PODSIM_CHECK(!torus_->host_to_dcn.empty()) << "multi-slice torus without DCN links";
    route->push_back(torus_->chip_to_host[src]);
    route->push_back(torus_->host_to_dcn[torus_->host_of_chip[src]]);
    route->push_back(torus_->dcn_to_host[torus_->host_of_chip[dst]]);
    route->push_back(torus_->host_to_chip[dst]);
    return;
  }
  const TorusLayout& t = *torus_;
  Coord from, to;
  LocalCoord(src, &from);
  LocalCoord(dst, &to);
  uint32_t at = src;
  for (int i = 0; i < t.axes(); ++i) {
    const int axis = (first_axis + i) % t.axes();
    const int length = t.shape[axis];
    int steps = to[axis] - from[axis];
    if (steps == 0) continue;
    if (t.wraps[axis]) {
      const int forward = (steps % length + length) % length;
      const int backward = length - forward;
      // Shorter way round; on a tie (even length, opposite chip) the positive direction unless
      // the axis's bit in negative_on_tie asks for the other one.
      const bool tie_negative = forward == backward && ((negative_on_tie >> axis) & 1u) != 0;
      steps = forward <= backward && !tie_negative ? forward : -backward;
    }
    const int direction = steps > 0 ? 0 : 1;
    for (int i = 0; i < std::abs(steps); ++i) {
      const LinkIndex l =
          t.neighbour_links[(static_cast<size_t>(at) * t.axes() + axis) * 2 + direction];
      PODSIM_CHECK(l != kNoLink) << "torus route fell off axis " << axis << " at chip " << at;
      route->push_back(l);
      at = links_[l].dst;
    }
  }
  PODSIM_CHECK(at == dst) << "torus route from " << src << " ended at " << at << " not " << dst;
}

void Fabric::AppendGpuRoute(VertexId src, VertexId dst, int nvswitch,
                            std::vector<LinkIndex>* route) const {
  const GpuLayout& g = *gpu_;
  const int s_count = g.switches_per_node;
  const int src_node = g.NodeOf(src);
  const int dst_node = g.NodeOf(dst);
  if (src_node == dst_node) {
    route->push_back(g.gpu_to_switch[static_cast<size_t>(src) * s_count + nvswitch]);
    route->push_back(g.switch_to_gpu[static_cast<size_t>(dst) * s_count + nvswitch]);
    return;
  }
  PODSIM_CHECK(g.levels >= 2) << "GPUs " << src << " and " << dst << " on different nodes";
  route->push_back(g.gpu_to_nic[src]);
  route->push_back(g.nic_to_leaf[src]);
  const uint32_t leaf_a = g.LeafOf(src);
  const uint32_t leaf_b = g.LeafOf(dst);
  if (leaf_a != leaf_b) {
    // d-mod-k: the destination node picks the spine (and the core), spreading equal-cost paths.
    const int spp = g.spines_per_pod;
    const int j = dst_node % spp;
    route->push_back(g.leaf_to_spine[static_cast<size_t>(leaf_a) * spp + j]);
    const int pod_a = g.PodOfSu(g.SuOfNode(src_node));
    const int pod_b = g.PodOfSu(g.SuOfNode(dst_node));
    if (pod_a != pod_b) {
      const int c = (dst_node / spp) % g.cores_per_group;
      const size_t spine_a = static_cast<size_t>(pod_a) * spp + j;
      const size_t spine_b = static_cast<size_t>(pod_b) * spp + j;
      route->push_back(g.spine_to_core[spine_a * g.cores_per_group + c]);
      route->push_back(g.core_to_spine[spine_b * g.cores_per_group + c]);
    }
    route->push_back(g.spine_to_leaf[static_cast<size_t>(leaf_b) * spp + j]);
  }
  route->push_back(g.leaf_to_nic[dst]);
  route->push_back(g.nic_to_gpu[dst]);
}

namespace {

// Records, for every vertex BFS reaches, the link it was first reached by.
class PredecessorRecorder : public boost::default_bfs_visitor {
 public:
  explicit PredecessorRecorder(std::vector<LinkIndex>* via) : via_(via) {}
  template <typename Edge, typename Graph>
  void tree_edge(Edge e, const Graph& g) {
    (*via_)[boost::target(e, g)] = boost::get(boost::edge_index, g, e);
  }

 private:
  std::vector<LinkIndex>* via_;
};

}  // namespace

std::vector<LinkIndex> Fabric::BfsRoute(VertexId src, VertexId dst) const {
  std::vector<LinkIndex> via(vertex_count(), kNoLink);
  boost::breadth_first_search(*graph_, src, boost::visitor(PredecessorRecorder(&via)));
  std::vector<LinkIndex> route;
  for (VertexId at = dst; at != src;) {
    const LinkIndex l = via[at];
    PODSIM_CHECK(l != kNoLink) << vertex_name(dst) << " is unreachable from " << vertex_name(src);
    route.push_back(l);
    at = links_[l].src;
  }
  std::reverse(route.begin(), route.end());
  return route;
}

// ---- Torus queries ----

const std::vector<int>& Fabric::shape() const {
  PODSIM_CHECK(torus_) << "not a torus";
  return torus_->shape;
}

std::vector<std::string> Fabric::AxisNames() const {
  static constexpr const char* kNames[] = {"x", "y", "z"};
  std::vector<std::string> names;
  for (int a = 0; a < static_cast<int>(shape().size()); ++a) names.push_back(kNames[a]);
  return names;
}

bool Fabric::Wraps(int axis) const {
  PODSIM_CHECK(torus_ && axis >= 0 && axis < torus_->axes()) << "axis " << axis;
  return torus_->wraps[axis];
}

int Fabric::SliceOf(uint32_t chip) const {
  PODSIM_CHECK(torus_ && chip < chip_count_) << "chip " << chip;
  return static_cast<int>(chip / static_cast<uint32_t>(torus_->chips_per_slice()));
}

std::vector<int> Fabric::ChipCoord(uint32_t chip) const {
  Coord coord;
  LocalCoord(chip, &coord);
  return std::vector<int>(coord.begin(), coord.begin() + torus_->axes());
}

void Fabric::LocalCoord(uint32_t chip, Coord* coord) const {
  PODSIM_CHECK(torus_ && chip < chip_count_) << "chip " << chip;
  uint32_t local = chip % static_cast<uint32_t>(torus_->chips_per_slice());
  coord->fill(0);
  for (int a = 0; a < torus_->axes(); ++a) {
    (*coord)[a] = static_cast<int>(local % static_cast<uint32_t>(torus_->shape[a]));
    local /= static_cast<uint32_t>(torus_->shape[a]);
  }
}

uint32_t Fabric::ChipAt(const std::vector<int>& coord, int slice) const {
  PODSIM_CHECK(torus_ && coord.size() == torus_->shape.size() && slice >= 0 &&
               slice < torus_->slices);
  uint32_t index = 0;
  for (size_t a = coord.size(); a-- > 0;) {
    PODSIM_CHECK(coord[a] >= 0 && coord[a] < torus_->shape[a]) << "coordinate " << coord[a];
    index = index * static_cast<uint32_t>(torus_->shape[a]) + static_cast<uint32_t>(coord[a]);
  }
  return index + static_cast<uint32_t>(slice) * static_cast<uint32_t>(torus_->chips_per_slice());
}

std::optional<LinkIndex> Fabric::NeighborLink(uint32_t chip, int axis, int direction) const {
  PODSIM_CHECK(torus_ && chip < chip_count_ && axis >= 0 && axis < torus_->axes() &&
               (direction == 1 || direction == -1));
  const LinkIndex l =
      torus_->neighbour_links[(static_cast<size_t>(chip) * torus_->axes() + axis) * 2 +
                              (direction > 0 ? 0 : 1)];
  if (l == kNoLink) return std::nullopt;
  return l;
}

// ---- GPU queries ----

std::vector<VertexId> Fabric::NodeSwitches(int node) const {
  PODSIM_CHECK(gpu_ && node >= 0 && node < gpu_->nodes) << "node " << node;
  auto first = gpu_->nvswitches.begin() + static_cast<ptrdiff_t>(node) * gpu_->switches_per_node;
  return std::vector<VertexId>(first, first + gpu_->switches_per_node);
}

std::optional<VertexId> Fabric::NicOf(uint32_t gpu) const {
  PODSIM_CHECK(gpu_ && gpu < chip_count_) << "gpu " << gpu;
  if (gpu_->nics.empty()) return std::nullopt;
  return gpu_->nics[gpu];
}

void InstallLinks(const Fabric& fabric, sim::FlowModel* model) {
  PODSIM_CHECK(model->resource_count() == 0) << "InstallLinks needs an empty FlowModel";
  for (LinkIndex i = 0; i < fabric.link_count(); ++i) {
    sim::StatusOr<sim::ResourceId> id = model->AddResource(fabric.link(i).bandwidth_bytes_per_s);
    PODSIM_CHECK(id.ok() && id->value == i) << "link " << i << " became another resource";
  }
}

}  // namespace podsim::topology
