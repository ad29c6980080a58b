#include "collectives/translation_group.h"

#include <utility>

#include "sim/check.h"

namespace podsim::collectives {

using topology::LinkIndex;
using topology::VertexId;

TranslationGroup::TranslationGroup(const topology::Fabric* fabric)
    : fabric_(fabric), symmetry_(fabric) {
  if (symmetry_.has_axes()) {
    steps_ = symmetry_.axis_lengths();
  } else if (fabric->torus() != nullptr) {
    steps_ = fabric->shape();
  }
}

TranslationGroup::TranslationGroup(FabricSymmetry symmetry, std::vector<int> steps)
    : fabric_(&symmetry.fabric()), symmetry_(std::move(symmetry)), steps_(std::move(steps)) {
  for (size_t a = 0; a < steps_.size(); ++a) {
    size_ *= static_cast<uint64_t>(symmetry_.axis_lengths()[a] / steps_[a]);
  }
}

std::optional<TranslationGroup> TranslationGroup::OfSteps(const topology::Fabric* fabric,
                                                          std::vector<int> steps,
                                                          std::vector<int> slot_radix,
                                                          std::vector<int> node_radix) {
  FabricSymmetry symmetry(fabric, std::move(slot_radix), std::move(node_radix));
  if (!symmetry.has_axes() || steps.size() != symmetry.axis_lengths().size()) return std::nullopt;
  for (size_t a = 0; a < steps.size(); ++a) {
    if (!symmetry.AllowsStep(a, steps[a])) return std::nullopt;
  }
  return TranslationGroup(std::move(symmetry), std::move(steps));
}

VertexId TranslationGroup::Rep(VertexId chip) const {
  if (trivial()) return chip;
  std::vector<int> coord = symmetry_.Coord(chip);
  for (size_t a = 0; a < coord.size(); ++a) coord[a] %= steps_[a];
  return symmetry_.ChipAt(coord);
}

VertexId TranslationGroup::Apply(VertexId chip, const FabricSymmetry::Shift& shift) const {
  return symmetry_.ApplyToVertex(chip, shift);
}

FabricSymmetry::Shift TranslationGroup::Generator(int axis) const {
  FabricSymmetry::Shift shift{std::vector<int>(steps_.size(), 0)};
  shift.delta[axis] = steps_[axis];
  return shift;
}

namespace {

// Marks the links of NVSwitches that a lower switch of their node stands for (link_orbits.h,
// `twin`) and gives each the canonical link of its twin on that switch; multiplicities stay the
// translations': a flow on a twin stands for itself and its copies' flows, one on each link.
void FoldAlikeSwitches(const topology::Fabric& fabric, LinkOrbits* orbits) {
  const topology::GpuLayout* gpu = fabric.gpu();
  if (gpu == nullptr || gpu->switches_per_node < 2) return;
  const int switches = gpu->switches_per_node;
  std::vector<int> twin(static_cast<size_t>(switches));
  for (int s = 0; s < switches; ++s) {
    twin[s] = s;
    for (int t = 0; t < s; ++t) {
      if (gpu->nvlinks_per_switch[t] == gpu->nvlinks_per_switch[s]) {
        twin[s] = t;
        break;
      }
    }
  }
  orbits->twin.resize(fabric.link_count());
  for (LinkIndex l = 0; l < fabric.link_count(); ++l) orbits->twin[l] = l;
  const uint32_t gpus = fabric.chip_count();
  for (uint32_t g = 0; g < gpus; ++g) {
    for (int s = 0; s < switches; ++s) {
      if (twin[s] == s) continue;
      const size_t at = static_cast<size_t>(g) * switches;
      for (const std::vector<LinkIndex>* links : {&gpu->gpu_to_switch, &gpu->switch_to_gpu}) {
        const LinkIndex link = (*links)[at + s], alike = (*links)[at + twin[s]];
        PODSIM_CHECK(fabric.link(link).bandwidth_bytes_per_s ==
                         fabric.link(alike).bandwidth_bytes_per_s &&
                     fabric.link(link).latency == fabric.link(alike).latency)
            << "NVSwitches with as many NVLinks differ";
        orbits->twin[link] = alike;
        orbits->canonical[link] = orbits->canonical[alike];
      }
    }
  }
}

}  // namespace

LinkOrbits TranslationGroup::Orbits() const {
  LinkOrbits orbits = TranslationOrbits();
  FoldAlikeSwitches(*fabric_, &orbits);
  return orbits;
}

LinkOrbits TranslationGroup::TranslationOrbits() const {
  LinkOrbits orbits;
  const uint32_t links = fabric_->link_count();
  orbits.canonical.resize(links);
  orbits.multiplicity.assign(links, 1.0);
  if (trivial()) {
    for (LinkIndex l = 0; l < links; ++l) orbits.canonical[l] = l;
    return orbits;
  }
  // Hosts and the DCN switch are not chips either when slices are joined over DCN.
  if (fabric_->torus() == nullptr || fabric_->torus()->slices > 1) return SwitchedOrbits();
  std::vector<uint64_t> orbit_size(links, 0);
  for (LinkIndex l = 0; l < links; ++l) {
    const VertexId src = fabric_->link(l).src;
    if (src >= fabric_->chip_count() || fabric_->link(l).dst >= fabric_->chip_count()) {
      orbits.canonical[l] = l;  // A TPU host's PCIe link: no route between chips of one slice.
      continue;
    }
    const std::vector<int> from = fabric_->ChipCoord(src), to = fabric_->ChipCoord(Rep(src));
    FabricSymmetry::Shift shift{std::vector<int>(from.size())};
    for (size_t a = 0; a < from.size(); ++a) shift.delta[a] = to[a] - from[a];
    const LinkIndex canonical = symmetry_.ApplyToLink(l, shift);
    PODSIM_CHECK(canonical != topology::kNoLink) << "a translation of link " << l << " is missing";
    orbits.canonical[l] = canonical;
    ++orbit_size[canonical];
  }
  for (LinkIndex l = 0; l < links; ++l) {
    const uint64_t size = orbit_size[orbits.canonical[l]];
    orbits.multiplicity[l] = size == 0 ? 0 : static_cast<double>(size_) / static_cast<double>(size);
  }
  return orbits;
}

LinkOrbits TranslationGroup::SwitchedOrbits() const {
  // Switches are not chips, so links are not reached from their chip's representative: the
  // orbits are the classes of the relation "l and g(l)" over the generators g, found by union-find;
  // the canonical link is the lowest index of its class.
  const uint32_t links = fabric_->link_count();
  std::vector<LinkIndex> parent(links);
  for (LinkIndex l = 0; l < links; ++l) parent[l] = l;
  auto find = [&](LinkIndex l) {
    while (parent[l] != l) {
      parent[l] = parent[parent[l]];
      l = parent[l];
    }
    return l;
  };
  for (size_t a = 0; a < steps_.size(); ++a) {
    if (steps_[a] == symmetry_.axis_lengths()[a]) continue;
    const FabricSymmetry::Shift generator = Generator(static_cast<int>(a));
    for (LinkIndex l = 0; l < links; ++l) {
      const LinkIndex image = symmetry_.ApplyToLink(l, generator);
      PODSIM_CHECK(image != topology::kNoLink) << "a shift of link " << l << " is missing";
      const LinkIndex x = find(l), y = find(image);
      if (x != y) parent[std::max(x, y)] = std::min(x, y);
    }
  }
  LinkOrbits orbits;
  orbits.canonical.resize(links);
  std::vector<uint64_t> orbit_size(links, 0);
  for (LinkIndex l = 0; l < links; ++l) {
    orbits.canonical[l] = find(l);
    ++orbit_size[orbits.canonical[l]];
  }
  orbits.multiplicity.resize(links);
  for (LinkIndex l = 0; l < links; ++l) {
    orbits.multiplicity[l] =
        static_cast<double>(size_) / static_cast<double>(orbit_size[orbits.canonical[l]]);
  }
  return orbits;
}

}  // namespace podsim::collectives
