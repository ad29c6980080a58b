#include "collectives/fabric_symmetry.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>

#include "sim/check.h"

namespace podsim::collectives {

using topology::LinkIndex;
using topology::VertexId;

namespace {

int Mod(int64_t value, int64_t n) { return static_cast<int>(((value % n) + n) % n); }

// Mixed-radix digits (slots of a node, nodes of an SU), fastest first: `value`'s digits appended
// to `coord`; the value of `radix.size()` digits from `digits`; `value` with each digit d rotated
// by delta[d] within its length.
void AppendDigits(int value, const std::vector<int>& radix, std::vector<int>* coord) {
  for (int digit : radix) {
    coord->push_back(value % digit);
    value /= digit;
  }
}
int JoinDigits(const int* digits, const std::vector<int>& radix) {
  int value = 0, place = 1;
  for (size_t d = 0; d < radix.size(); ++d) {
    value += digits[d] * place;
    place *= radix[d];
  }
  return value;
}
int RotateDigits(int value, const std::vector<int>& radix, const int* delta) {
  int moved = 0, place = 1;
  for (size_t d = 0; d < radix.size(); ++d) {
    moved += Mod(value % radix[d] + delta[d], radix[d]) * place;
    value /= radix[d];
    place *= radix[d];
  }
  return moved;
}

}  // namespace

FabricSymmetry::FabricSymmetry(const topology::Fabric* fabric, std::vector<int> slot_radix,
                               std::vector<int> node_radix)
    : fabric_(fabric), radix_(std::move(slot_radix)), node_radix_(std::move(node_radix)) {
  PODSIM_CHECK((radix_.empty() && node_radix_.empty()) || fabric->gpu() != nullptr)
      << "slot or node digits of a fabric without GPU nodes";
  if (const topology::TorusLayout* t = fabric->torus(); t != nullptr) {
    bool wraps = true;
    for (size_t a = 0; a < fabric->shape().size() && wraps; ++a) {
      const int n = fabric->shape()[a];
      wraps = n == 1 || (n >= 3 && fabric->Wraps(static_cast<int>(a)));
    }
    if (!wraps) return;
    lengths_ = fabric->shape();
    if (t->slices == 1) {
      torus_ = true;
      return;
    }
    FindHostTiles();
    if (!slices_) lengths_.clear();
    return;
  }
  const topology::GpuLayout* g = fabric->gpu();
  if (g == nullptr) return;
  gpu_ = true;
  if (radix_.empty()) radix_ = {g->gpus_per_node};
  int slots = 1;
  for (int digit : radix_) {
    PODSIM_CHECK(digit >= 1) << "slot digit of length " << digit;
    slots *= digit;
  }
  PODSIM_CHECK(slots == g->gpus_per_node)
      << "slot digits of " << slots << " slots, not " << g->gpus_per_node;
  lengths_ = radix_;
  const int spp = g->spines_per_pod;
  // Whole pods whose spines are the nodes of a scalable unit, or two levels of whole scalable
  // units (one pod) whose spines divide their nodes: the node splits into its digits.
  pod_digits_ = (g->levels == 3 && g->pods > 1 && spp == g->nodes_per_su &&
                 g->nodes == g->pods * g->sus_per_pod * g->nodes_per_su) ||
                (g->levels == 2 && g->sus > 1 && spp > 0 && g->nodes_per_su % spp == 0 &&
                 g->nodes == g->sus * g->nodes_per_su);
  if (pod_digits_) {
    if (node_radix_.empty()) node_radix_ = {g->nodes_per_su};
    int nodes = 1;
    for (int digit : node_radix_) {
      PODSIM_CHECK(digit >= 1 && g->nodes_per_su % digit == 0)
          << "node digit of length " << digit << " in an SU of " << g->nodes_per_su;
      nodes *= digit;
      // A digit's blocks must divide the spines' residues or be made of them (header comment).
      PODSIM_CHECK(spp % nodes == 0 || nodes % spp == 0)
          << "node digits in blocks of " << nodes << " over " << spp << " spines";
    }
    PODSIM_CHECK(nodes == g->nodes_per_su)
        << "node digits of " << nodes << " nodes, not " << g->nodes_per_su;
    lengths_.insert(lengths_.end(), node_radix_.begin(), node_radix_.end());
    lengths_.insert(lengths_.end(), {g->sus_per_pod, g->pods});
  } else {
    node_radix_.clear();
    lengths_.push_back(g->nodes);
  }
  if (g->levels == 3) {
    unit_nodes_ = g->nodes_per_su * g->sus_per_pod;
  } else if (g->levels == 2 && g->sus == 1 && spp > 0 && (g->nodes % spp == 0 || g->nodes < spp)) {
    unit_nodes_ = 1;  // One SU: every node under the same leaves; spines permute (header).
  } else if (g->levels == 2) {
    unit_nodes_ = std::lcm(g->nodes_per_su, spp);
  }
  if (!(unit_nodes_ > 0 && spp > 0 && (unit_nodes_ % spp == 0 || g->sus == 1) &&
        unit_nodes_ < g->nodes)) {
    unit_nodes_ = 0;
  }
  node_wraps_ = unit_nodes_ > 0 && g->nodes % unit_nodes_ == 0 &&
                (g->levels < 3 || (g->nodes / spp) % g->cores_per_group == 0);
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

void FabricSymmetry::FindHostTiles() {
  const topology::TorusLayout& t = *fabric_->torus();
  if (t.hosts.empty()) return;
  const int axes = t.axes();
  // The chips of a host are a tile starting at multiples of its lengths (torus_builder.cc): the
  // length along an axis is how far the first host reaches from the origin.
  tile_.assign(static_cast<size_t>(axes), 1);
  for (int a = 0; a < axes; ++a) {
    std::vector<int> coord(static_cast<size_t>(axes), 0);
    for (int k = 1; k < t.shape[a]; ++k) {
      coord[a] = k;
      if (t.host_of_chip[fabric_->ChipAt(coord)] != t.host_of_chip[0]) break;
      tile_[a] = k + 1;
    }
    if (t.shape[a] % tile_[a] != 0) return;
  }
  // Every chip's host as the tiles say (else no symmetry).
  const uint32_t hosts_per_slice = static_cast<uint32_t>(t.hosts.size()) / t.slices;
  for (VertexId chip = 0; chip < fabric_->chip_count(); ++chip) {
    const std::vector<int> coord = fabric_->ChipCoord(chip);
    uint32_t host = 0, stride = 1;
    for (int a = 0; a < axes; ++a) {
      host += static_cast<uint32_t>(coord[a] / tile_[a]) * stride;
      stride *= static_cast<uint32_t>(t.shape[a] / tile_[a]);
    }
    host += static_cast<uint32_t>(fabric_->SliceOf(chip)) * hosts_per_slice;
    if (t.host_of_chip[chip] != host) return;
  }
  slices_ = true;
  lengths_.push_back(t.slices);
  role_.assign(fabric_->vertex_count(), Role::kNone);
  index_.assign(fabric_->vertex_count(), 0);
  for (size_t h = 0; h < t.hosts.size(); ++h) {
    role_[t.hosts[h]] = Role::kHost;
    index_[t.hosts[h]] = static_cast<uint32_t>(h);
  }
}

bool FabricSymmetry::AllowsStep(size_t axis, int step) const {
  PODSIM_CHECK(has_axes() && axis < lengths_.size()) << "no symmetry axis " << axis;
  const int length = lengths_[axis];
  if (step < 1 || length % step != 0) return false;
  if (slices_) return axis >= tile_.size() || step % tile_[axis] == 0;  // Whole host tiles.
  if (torus_ || step == length || axis < radix_.size()) return true;
  if (pod_digits_) {
    const topology::GpuLayout& g = *fabric_->gpu();
    const int cores = g.cores_per_group, sus = g.sus_per_pod;
    if (axis < su_axis()) return true;  // Node-in-SU digits: spines rotate along.
    // Scalable units of a pod: the core a route takes, (destination's SU) % cores_per_group,
    // moves alike from every SU of one residue only when one count divides the other.
    if (axis == su_axis()) return cores % sus == 0 || sus % cores == 0;
    return node_wraps_;  // Pods.
  }
  return node_wraps_ && step % unit_nodes_ == 0;  // GPU nodes: whole units.
}

std::vector<int> FabricSymmetry::Coord(VertexId chip) const {
  PODSIM_CHECK(has_axes() && chip < fabric_->chip_count()) << "chip " << chip;
  if (torus_) return fabric_->ChipCoord(chip);
  if (slices_) {
    std::vector<int> coord = fabric_->ChipCoord(chip);
    coord.push_back(fabric_->SliceOf(chip));
    return coord;
  }
  const int per_node = fabric_->gpu()->gpus_per_node;
  std::vector<int> coord;
  AppendDigits(static_cast<int>(chip % per_node), radix_, &coord);
  const int node = static_cast<int>(chip / per_node);
  if (pod_digits_) {
    const topology::GpuLayout& g = *fabric_->gpu();
    AppendDigits(node % g.nodes_per_su, node_radix_, &coord);
    coord.insert(coord.end(),
                 {node / g.nodes_per_su % g.sus_per_pod, node / (g.nodes_per_su * g.sus_per_pod)});
  } else {
    coord.push_back(node);
  }
  return coord;
}

VertexId FabricSymmetry::ChipAt(const std::vector<int>& coord) const {
  PODSIM_CHECK(has_axes() && coord.size() == lengths_.size()) << "coordinates of another fabric";
  if (torus_) return fabric_->ChipAt(coord);
  if (slices_) return fabric_->ChipAt({coord.begin(), coord.end() - 1}, coord.back());
  const int slot = JoinDigits(coord.data(), radix_);
  int64_t node = coord.back();
  if (pod_digits_) {
    const topology::GpuLayout& g = *fabric_->gpu();
    node = (static_cast<int64_t>(coord[pod_axis()]) * g.sus_per_pod + coord[su_axis()]) *
               g.nodes_per_su +
           JoinDigits(coord.data() + radix_.size(), node_radix_);
  }
  return static_cast<VertexId>(node * fabric_->gpu()->gpus_per_node + slot);
}

int FabricSymmetry::MovedSlot(int slot, const Shift& shift) const {
  return RotateDigits(slot, radix_, shift.delta.data());
}

std::optional<FabricSymmetry::Shift> FabricSymmetry::ToCanonical(
    const std::vector<VertexId>& chips) const {
  if (chips.empty()) return std::nullopt;
  if (torus_) {
    Shift shift{fabric_->ChipCoord(chips.front())};
    for (int& d : shift.delta) d = -d;
    return shift;
  }
  if (slices_) {
    // The first chip's host tile to the origin of the first slice.
    Shift shift{Coord(chips.front())};
    for (size_t a = 0; a < tile_.size(); ++a) shift.delta[a] -= shift.delta[a] % tile_[a];
    for (int& d : shift.delta) d = -d;
    return shift;
  }
  if (!gpu_ || unit_nodes_ == 0) return std::nullopt;
  const topology::GpuLayout& g = *fabric_->gpu();
  int node = g.NodeOf(chips.front());
  for (VertexId chip : chips) node = std::min(node, g.NodeOf(chip));
  Shift shift{std::vector<int>(lengths_.size(), 0)};
  if (!pod_digits_) {
    shift.delta.back() = -(node / unit_nodes_) * unit_nodes_;
  } else if (g.levels == 2) {
    shift.delta[su_axis()] = -(node / g.nodes_per_su);  // The first chip's SU to SU 0.
  } else {
    shift.delta.back() = -(node / unit_nodes_);  // Its pod to pod 0.
  }
  return shift;
}

FabricSymmetry::Shift FabricSymmetry::Inverse(const Shift& shift) const {
  Shift inverse = shift;
  for (int& d : inverse.delta) d = -d;
  return inverse;
}

VertexId FabricSymmetry::ApplyAcrossSlices(VertexId vertex, const Shift& shift) const {
  const topology::TorusLayout& t = *fabric_->torus();
  const size_t axes = tile_.size();
  PODSIM_CHECK(shift.delta.size() == axes + 1) << "a shift of another fabric";
  const int slice_delta = shift.delta[axes];
  if (vertex < fabric_->chip_count()) {
    std::vector<int> coord = fabric_->ChipCoord(vertex);
    for (size_t a = 0; a < axes; ++a) coord[a] = Mod(coord[a] + shift.delta[a], t.shape[a]);
    return fabric_->ChipAt(coord, Mod(fabric_->SliceOf(vertex) + slice_delta, t.slices));
  }
  if (role_[vertex] != Role::kHost) return vertex;  // The DCN switch.
  const uint32_t hosts_per_slice = static_cast<uint32_t>(t.hosts.size()) / t.slices;
  uint32_t local = index_[vertex] % hosts_per_slice, moved = 0, stride = 1;
  for (size_t a = 0; a < axes; ++a) {
    const int along = t.shape[a] / tile_[a];
    PODSIM_CHECK(shift.delta[a] % tile_[a] == 0)
        << "shift by " << shift.delta[a] << " chips, not by host tiles of " << tile_[a];
    const int x = Mod(
        static_cast<int>(local % static_cast<uint32_t>(along)) + shift.delta[a] / tile_[a], along);
    local /= static_cast<uint32_t>(along);
    moved += static_cast<uint32_t>(x) * stride;
    stride *= static_cast<uint32_t>(along);
  }
  const int slice = Mod(static_cast<int>(index_[vertex] / hosts_per_slice) + slice_delta, t.slices);
  return t.hosts[static_cast<size_t>(slice) * hosts_per_slice + moved];
}

int FabricSymmetry::MovedLocalNode(int local, const Shift& shift) const {
  return RotateDigits(local, node_radix_, shift.delta.data() + radix_.size());
}

int FabricSymmetry::MovedNode(int node, const Shift& shift) const {
  const topology::GpuLayout& g = *fabric_->gpu();
  if (!pod_digits_) return Mod(node + shift.delta.back(), g.nodes);
  const int per_su = g.nodes_per_su, sus = g.sus_per_pod;
  const int pod = Mod(node / (per_su * sus) + shift.delta[pod_axis()], g.pods);
  const int su = Mod(node / per_su % sus + shift.delta[su_axis()], sus);
  return (pod * sus + su) * per_su + MovedLocalNode(node % per_su, shift);
}

VertexId FabricSymmetry::ApplyAcrossPods(VertexId vertex, const Shift& shift) const {
  const topology::GpuLayout& g = *fabric_->gpu();
  const int64_t i = index_[vertex];
  const int per_su = g.nodes_per_su, sus = g.sus_per_pod, spp = g.spines_per_pod;
  switch (role_[vertex]) {
    case Role::kLeaf: {
      // An SU's leaves move with its nodes (a shift of the nodes within SUs leaves them).
      const int su = MovedNode(static_cast<int>(i / g.gpus_per_node) * per_su, shift) / per_su;
      const int rail = MovedSlot(static_cast<int>(i % g.gpus_per_node), shift);
      return g.leaves[static_cast<size_t>(su) * g.gpus_per_node + rail];
    }
    case Role::kSpine: {
      // d-mod-k: spine j of a pod serves the destination nodes j mod spp (spp = nodes per SU, or
      // with two levels a divisor of them), so it moves where node j of an SU does, modulo spp
      // (the header comment), and with the pod.
      const int pod = Mod(i / spp + shift.delta[pod_axis()], g.pods);
      const int j = MovedLocalNode(static_cast<int>(i % spp), shift) % spp;
      return g.spines[static_cast<size_t>(pod) * spp + j];
    }
    case Role::kCore: {
      // Group j follows spine j. Within the group, core c serves the destination SUs c mod cores
      // (an SU's global index pod * sus + su); SU c (pod c / sus, SU c % sus) is one of them, so c
      // moves where that SU does (the same for every SU of c's residue: AllowsStep). The pod is
      // not taken modulo the pods: where shifts wrap, the cores divide 4 x pods and it makes no
      // difference; where they do not (ToCanonical's shifts and their inverses), SU c's image may
      // lie past the fabric while the SUs of its residue that routes reach do not.
      const int cpg = g.cores_per_group;
      const int j = MovedLocalNode(static_cast<int>(i / cpg), shift) % spp;
      const int c = static_cast<int>(i % cpg);
      const int64_t image = static_cast<int64_t>(c / sus + shift.delta[pod_axis()]) * sus +
                            Mod(c % sus + shift.delta[su_axis()], sus);
      const int moved = Mod(image, cpg);
      return g.cores[static_cast<size_t>(j) * cpg + moved];
    }
    case Role::kChip:  // ApplyToVertex moves these itself.
    case Role::kNic:
    case Role::kNvSwitch:
    case Role::kNone:
    case Role::kHost:
      break;
  }
  PODSIM_CHECK(false) << "vertex " << vertex << " has no place in the GPU layout";
  return vertex;
}

VertexId FabricSymmetry::ApplyToVertex(VertexId vertex, const Shift& shift) const {
  if (slices_) return ApplyAcrossSlices(vertex, shift);
  if (torus_) {
    std::vector<int> coord = fabric_->ChipCoord(vertex);
    for (size_t a = 0; a < coord.size(); ++a) {
      const int n = fabric_->shape()[a];
      coord[a] = ((coord[a] + shift.delta[a]) % n + n) % n;
    }
    return fabric_->ChipAt(coord);
  }
  PODSIM_CHECK(gpu_ && shift.delta.size() == lengths_.size()) << "no symmetry to apply";
  const topology::GpuLayout& g = *fabric_->gpu();
  const int64_t i = index_[vertex];
  // A GPU (or its NIC) moves to its slot and node shifted, an NVSwitch with its node.
  switch (role_[vertex]) {
    case Role::kChip:
    case Role::kNic: {
      const int64_t gpu =
          static_cast<int64_t>(MovedNode(static_cast<int>(i / g.gpus_per_node), shift)) *
              g.gpus_per_node +
          MovedSlot(static_cast<int>(i % g.gpus_per_node), shift);
      return role_[vertex] == Role::kChip ? static_cast<VertexId>(gpu)
                                          : g.nics[static_cast<size_t>(gpu)];
    }
    case Role::kNvSwitch:
      return g.nvswitches[static_cast<size_t>(
          static_cast<int64_t>(MovedNode(static_cast<int>(i / g.switches_per_node), shift)) *
              g.switches_per_node +
          i % g.switches_per_node)];
    case Role::kLeaf:
    case Role::kSpine:
    case Role::kCore:
    case Role::kNone:
    case Role::kHost:
      break;
  }
  if (pod_digits_) return ApplyAcrossPods(vertex, shift);
  const int nodes = shift.delta.back();
  auto whole = [](int delta, int unit) {
    PODSIM_CHECK(unit > 0 && delta % unit == 0)
        << "shift by " << delta << " nodes, not by units of " << unit;
    return delta / unit;
  };
  switch (role_[vertex]) {
    case Role::kLeaf: {
      const int su =
          g.sus == 1 ? 0 : Mod(i / g.gpus_per_node + whole(nodes, g.nodes_per_su), g.sus);
      const int rail = MovedSlot(static_cast<int>(i % g.gpus_per_node), shift);
      return g.leaves[static_cast<size_t>(su) * g.gpus_per_node + rail];
    }
    case Role::kSpine: {
      if (g.levels < 3) {
        // d-mod-k sends traffic for node d through spine d % spp, so spine j moves with the nodes
        // it serves: j + shift mod spp when spp divides the node count (the identity for shifts
        // by whole units), and within the first `nodes` spines when there are fewer nodes than
        // spines (the others serve no node and stay).
        const int spp = g.spines_per_pod;
        const int j = static_cast<int>(i);
        if (g.nodes % spp == 0) return g.spines[static_cast<size_t>(Mod(j + nodes, spp))];
        PODSIM_CHECK(g.nodes < spp || nodes % spp == 0) << "spines of " << g.nodes << " nodes";
        if (g.nodes < spp && j < g.nodes)
          return g.spines[static_cast<size_t>(Mod(j + nodes, g.nodes))];
        return vertex;
      }
      const int pod =
          Mod(i / g.spines_per_pod + whole(nodes, g.nodes_per_su * g.sus_per_pod), g.pods);
      return g.spines[static_cast<size_t>(pod) * g.spines_per_pod + i % g.spines_per_pod];
    }
    case Role::kCore: {
      const int cpg = g.cores_per_group;
      const int64_t j = i / cpg;
      const int moved = Mod(i % cpg + whole(nodes, g.spines_per_pod), cpg);
      return g.cores[static_cast<size_t>(j * cpg + moved)];
    }
    case Role::kChip:  // Moved above.
    case Role::kNic:
    case Role::kNvSwitch:
    case Role::kNone:
    case Role::kHost:  // Several slices only (ApplyAcrossSlices).
      break;
  }
  PODSIM_CHECK(false) << "vertex " << vertex << " has no place in the GPU layout";
  return vertex;
}

LinkIndex FabricSymmetry::MovedTorusLink(const topology::Link& l, VertexId src) const {
  // Between neighbours: the link along the same axis and direction (axes >= 3 long, so the
  // direction is unambiguous).
  const std::vector<int> a = fabric_->ChipCoord(l.src), b = fabric_->ChipCoord(l.dst);
  for (size_t axis = 0; axis < a.size(); ++axis) {
    if (a[axis] == b[axis]) continue;
    const int n = fabric_->shape()[axis];
    const int direction = ((b[axis] - a[axis]) % n + n) % n == 1 ? 1 : -1;
    std::optional<LinkIndex> moved = fabric_->NeighborLink(src, static_cast<int>(axis), direction);
    return moved ? *moved : topology::kNoLink;
  }
  return topology::kNoLink;
}

LinkIndex FabricSymmetry::ApplyToLink(LinkIndex link, const Shift& shift) const {
  const topology::Link& l = fabric_->link(link);
  if (torus_ && (l.src >= fabric_->chip_count() || l.dst >= fabric_->chip_count())) {
    return topology::kNoLink;
  }
  const VertexId src = ApplyToVertex(l.src, shift);
  const VertexId dst = ApplyToVertex(l.dst, shift);
  const bool ici = l.src < fabric_->chip_count() && l.dst < fabric_->chip_count();
  if (torus_ || (slices_ && ici)) return MovedTorusLink(l, src);
  for (LinkIndex candidate : fabric_->OutLinks(src)) {
    const topology::Link& c = fabric_->link(candidate);
    if (c.dst == dst && c.kind == l.kind) return candidate;
  }
  return topology::kNoLink;
}

}  // namespace podsim::collectives
