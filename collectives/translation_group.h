// TranslationGroup: a subgroup of a fabric's shifts (fabric_symmetry.h: the translations of a
// torus, the slot rotations and node translations of a GPU system), the multiples of a step
// along each symmetry axis. A step simulation whose workload every element maps onto
// itself (workloads/step_symmetry.h) simulates one chip per orbit and one flow class per orbit of
// flows, exactly (docs/architecture.md, "The symmetric quotient").
//
// Every non-trivial element moves every chip, so the group acts freely on chips: every orbit has
// size() chips and each chip is the image of its orbit's representative under exactly one
// element.

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

  // Shifts by multiples of steps[a] along each symmetry axis a of FabricSymmetry(fabric,
  // slot_radix, node_radix); nullopt unless the fabric has symmetry axes, there is one step per
  // axis and each is allowed (FabricSymmetry::AllowsStep).
  static std::optional<TranslationGroup> OfSteps(const topology::Fabric* fabric,
                                                 std::vector<int> steps,
                                                 std::vector<int> slot_radix = {},
                                                 std::vector<int> node_radix = {});

  const topology::Fabric& fabric() const { return *fabric_; }
  uint64_t size() const { return size_; }
  bool trivial() const { return size_ == 1; }
  // Per symmetry axis (empty for the trivial group of a fabric without symmetry axes).
  const std::vector<int>& steps() const { return steps_; }
  // The fabric's shifts it is made of, with their slot and node digits.
  const FabricSymmetry& symmetry() const { return symmetry_; }

  // The representative of the chip's orbit: its coordinates modulo the steps.
  topology::VertexId Rep(topology::VertexId chip) const;
  // The chip shifted by `shift` (a delta in chips per symmetry axis, multiples of the steps).
  topology::VertexId Apply(topology::VertexId chip, const FabricSymmetry::Shift& shift) const;
  // The generator along `axis`: one step along it, nothing along the others.
  FabricSymmetry::Shift Generator(int axis) const;

  // Every link's orbit; the trivial group's maps each link to itself. On GPU systems the links of
  // NVSwitches that a lower switch of their node stands for are copies (link_orbits.h).
  LinkOrbits Orbits() const;

 private:
  // Orbits() under the translations alone.
  LinkOrbits TranslationOrbits() const;
  TranslationGroup(FabricSymmetry symmetry, std::vector<int> steps);
  // Orbits() of a fabric whose links are not all between chips (GPU systems).
  LinkOrbits SwitchedOrbits() const;

  const topology::Fabric* fabric_;
  FabricSymmetry symmetry_;
  std::vector<int> steps_;
  uint64_t size_ = 1;
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_TRANSLATION_GROUP_H_
