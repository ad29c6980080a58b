// TranslationGroup: a subgroup of the translations of a torus (fabric_symmetry.h), the
// multiples of a step along each axis. A step simulation whose workload every element maps onto
// itself (workloads/step_symmetry.h) simulates one chip per orbit and one flow class per orbit of
// flows, exactly (docs/architecture.md, "The symmetric quotient").
//
// Translations move every chip, so the group acts freely on chips: every orbit has size() chips
// and each chip is the image of its orbit's representative under exactly one element.

#ifndef PODSIM_COLLECTIVES_TRANSLATION_GROUP_H_
#define PODSIM_COLLECTIVES_TRANSLATION_GROUP_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "collectives/fabric_symmetry.h"
#include "collectives/link_orbits.h"
#include "topology/fabric.h"

namespace podsim::collectives {

class TranslationGroup {
 public:
  // The trivial group: every chip its own orbit. Any fabric.
  explicit TranslationGroup(const topology::Fabric* fabric);

  // Translations by multiples of steps[a] along each torus axis a; nullopt unless
  // FabricSymmetry translates the fabric (TranslatesTorus), there is one step per axis and each
  // divides its axis's length.
  static std::optional<TranslationGroup> OfSteps(const topology::Fabric* fabric,
                                                 std::vector<int> steps);

  const topology::Fabric& fabric() const { return *fabric_; }
  uint64_t size() const { return size_; }
  bool trivial() const { return size_ == 1; }
  // Per torus axis (empty for the trivial group of a fabric that is not a torus).
  const std::vector<int>& steps() const { return steps_; }

  // The representative of the chip's orbit: its coordinates modulo the steps.
  topology::VertexId Rep(topology::VertexId chip) const;
  // The chip translated by `shift` (a delta in chips per axis, any integers).
  topology::VertexId Apply(topology::VertexId chip, const FabricSymmetry::Shift& shift) const;
  // The generator along `axis`: one step along it, nothing along the others.
  FabricSymmetry::Shift Generator(int axis) const;

  // Every link's orbit; the trivial group's maps each link to itself.
  LinkOrbits Orbits() const;

 private:
  TranslationGroup(const topology::Fabric* fabric, std::vector<int> steps);

  const topology::Fabric* fabric_;
  FabricSymmetry symmetry_;
  std::vector<int> steps_;
  uint64_t size_ = 1;
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_TRANSLATION_GROUP_H_
