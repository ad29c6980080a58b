#include "collectives/fabric_symmetry.h"

#include <algorithm>
#include <numeric>

#include "sim/check.h"

namespace podsim::collectives {

using topology::LinkIndex;
using topology::VertexId;

FabricSymmetry::FabricSymmetry(const topology::Fabric* fabric) : fabric_(fabric) {
  if (fabric->torus() != nullptr) {
    torus_ = fabric->torus()->slices == 1;
    for (size_t a = 0; a < fabric->shape().size() && torus_; ++a) {
      const int n = fabric->shape()[a];
      torus_ = n == 1 || (n >= 3 && fabric->Wraps(static_cast<int>(a)));
    }
    return;
  }
  const topology::GpuLayout* g = fabric->gpu();
  if (g == nullptr || g->levels < 2) return;
  const int spp = g->spines_per_pod;
  if (g->levels == 3) {
    unit_nodes_ = g->nodes_per_su * g->sus_per_pod;
  } else {
    unit_nodes_ = std::lcm(g->nodes_per_su, spp);
  }
  gpu_ = unit_nodes_ > 0 && unit_nodes_ % spp == 0 && unit_nodes_ < g->nodes;
  if (!gpu_) return;
  role_.assign(fabric->vertex_count(), Role::kNone);
  index_.assign(fabric->vertex_count(), 0);
  auto mark = [&](const std::vector<VertexId>& vertices, Role role) {
    for (size_t i = 0; i < vertices.size(); ++i) {
      role_[vertices[i]] = role;
      index_[vertices[i]] = static_cast<uint32_t>(i);
    }
  };
  for (VertexId chip = 0; chip < fabric->chip_count(); ++chip) {
    role_[chip] = Role::kChip;
    index_[chip] = chip;
  }
  mark(g->nics, Role::kNic);
  mark(g->nvswitches, Role::kNvSwitch);
  mark(g->leaves, Role::kLeaf);
  mark(g->spines, Role::kSpine);
  mark(g->cores, Role::kCore);
}

std::optional<FabricSymmetry::Shift> FabricSymmetry::ToCanonical(
    const std::vector<VertexId>& chips) const {
  if (chips.empty()) return std::nullopt;
  if (torus_) {
    Shift shift{fabric_->ChipCoord(chips.front())};
    for (int& d : shift.delta) d = -d;
    return shift;
  }
  if (!gpu_) return std::nullopt;
  const topology::GpuLayout& g = *fabric_->gpu();
  int node = g.NodeOf(chips.front());
  for (VertexId chip : chips) node = std::min(node, g.NodeOf(chip));
  return Shift{{-(node / unit_nodes_) * unit_nodes_}};
}

FabricSymmetry::Shift FabricSymmetry::Inverse(const Shift& shift) const {
  Shift inverse = shift;
  for (int& d : inverse.delta) d = -d;
  return inverse;
}

VertexId FabricSymmetry::ApplyToVertex(VertexId vertex, const Shift& shift) const {
  if (torus_) {
    std::vector<int> coord = fabric_->ChipCoord(vertex);
    for (size_t a = 0; a < coord.size(); ++a) {
      const int n = fabric_->shape()[a];
      coord[a] = ((coord[a] + shift.delta[a]) % n + n) % n;
    }
    return fabric_->ChipAt(coord);
  }
  PODSIM_CHECK(gpu_) << "no symmetry to apply";
  const topology::GpuLayout& g = *fabric_->gpu();
  const int nodes = shift.delta[0];
  const int64_t gpus = int64_t{nodes} * g.gpus_per_node;
  const uint32_t i = index_[vertex];
  auto at = [](const std::vector<VertexId>& vertices, int64_t index) {
    PODSIM_CHECK(index >= 0 && index < static_cast<int64_t>(vertices.size()))
        << "shift leaves the fabric";
    return vertices[static_cast<size_t>(index)];
  };
  switch (role_[vertex]) {
    case Role::kChip:
      PODSIM_CHECK(i + gpus >= 0 && i + gpus < fabric_->chip_count()) << "shift leaves the fabric";
      return static_cast<VertexId>(i + gpus);
    case Role::kNic:
      return at(g.nics, i + gpus);
    case Role::kNvSwitch:
      return at(g.nvswitches, i + int64_t{nodes} * g.switches_per_node);
    case Role::kLeaf:
      return at(g.leaves, i + int64_t{nodes / g.nodes_per_su} * g.gpus_per_node);
    case Role::kSpine:
      return at(g.spines, i + int64_t{nodes / (g.nodes_per_su * g.sus_per_pod)} * g.spines_per_pod);
    case Role::kCore: {
      const int cpg = g.cores_per_group;
      const int j = static_cast<int>(i) / cpg;
      const int c = static_cast<int>(i) % cpg;
      const int moved = ((c + nodes / g.spines_per_pod) % cpg + cpg) % cpg;
      return at(g.cores, int64_t{j} * cpg + moved);
    }
    case Role::kNone:
      break;
  }
  PODSIM_CHECK(false) << "vertex " << vertex << " has no place in the GPU layout";
  return vertex;
}

LinkIndex FabricSymmetry::ApplyToLink(LinkIndex link, const Shift& shift) const {
  const topology::Link& l = fabric_->link(link);
  if (torus_ && (l.src >= fabric_->chip_count() || l.dst >= fabric_->chip_count())) {
    return topology::kNoLink;
  }
  const VertexId src = ApplyToVertex(l.src, shift);
  const VertexId dst = ApplyToVertex(l.dst, shift);
  if (torus_) {
    // Between neighbours: the link along the same axis and direction (axes >= 3 long, so the
    // direction is unambiguous).
    const std::vector<int> a = fabric_->ChipCoord(l.src), b = fabric_->ChipCoord(l.dst);
    for (size_t axis = 0; axis < a.size(); ++axis) {
      if (a[axis] == b[axis]) continue;
      const int n = fabric_->shape()[axis];
      const int direction = ((b[axis] - a[axis]) % n + n) % n == 1 ? 1 : -1;
      std::optional<LinkIndex> moved =
          fabric_->NeighborLink(src, static_cast<int>(axis), direction);
      return moved ? *moved : topology::kNoLink;
    }
    return topology::kNoLink;
  }
  for (LinkIndex candidate : fabric_->OutLinks(src)) {
    const topology::Link& c = fabric_->link(candidate);
    if (c.dst == dst && c.kind == l.kind) return candidate;
  }
  return topology::kNoLink;
}

}  // namespace podsim::collectives
