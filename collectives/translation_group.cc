#include "collectives/translation_group.h"

#include <utility>

#include "sim/check.h"

namespace podsim::collectives {

using topology::LinkIndex;
using topology::VertexId;

TranslationGroup::TranslationGroup(const topology::Fabric* fabric)
    : fabric_(fabric), symmetry_(fabric) {
  if (fabric->torus() != nullptr) steps_ = fabric->shape();
}

TranslationGroup::TranslationGroup(const topology::Fabric* fabric, std::vector<int> steps)
    : fabric_(fabric), symmetry_(fabric), steps_(std::move(steps)) {
  for (size_t a = 0; a < steps_.size(); ++a) {
    size_ *= static_cast<uint64_t>(fabric->shape()[a] / steps_[a]);
  }
}

std::optional<TranslationGroup> TranslationGroup::OfSteps(const topology::Fabric* fabric,
                                                          std::vector<int> steps) {
  if (fabric->torus() == nullptr || !FabricSymmetry(fabric).translates_torus()) return std::nullopt;
  const std::vector<int>& shape = fabric->shape();
  if (steps.size() != shape.size()) return std::nullopt;
  for (size_t a = 0; a < steps.size(); ++a) {
    if (steps[a] < 1 || shape[a] % steps[a] != 0) return std::nullopt;
  }
  return TranslationGroup(fabric, std::move(steps));
}

VertexId TranslationGroup::Rep(VertexId chip) const {
  if (trivial()) return chip;
  std::vector<int> coord = fabric_->ChipCoord(chip);
  for (size_t a = 0; a < coord.size(); ++a) coord[a] %= steps_[a];
  return fabric_->ChipAt(coord);
}

VertexId TranslationGroup::Apply(VertexId chip, const FabricSymmetry::Shift& shift) const {
  return symmetry_.ApplyToVertex(chip, shift);
}

FabricSymmetry::Shift TranslationGroup::Generator(int axis) const {
  FabricSymmetry::Shift shift{std::vector<int>(steps_.size(), 0)};
  shift.delta[axis] = steps_[axis];
  return shift;
}

LinkOrbits TranslationGroup::Orbits() const {
  LinkOrbits orbits;
  const uint32_t links = fabric_->link_count();
  orbits.canonical.resize(links);
  orbits.multiplicity.assign(links, 1.0);
  if (trivial()) {
    for (LinkIndex l = 0; l < links; ++l) orbits.canonical[l] = l;
    return orbits;
  }
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

}  // namespace podsim::collectives
