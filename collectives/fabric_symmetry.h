// FabricSymmetry: translations that map a fabric, and the routes Fabric::Route picks on it, onto
// themselves. A collective on chips C and the same collective on a translate of C then take the
// same time over the translated links, so collective_network.h rehearses one of them and moves
// its record to the others.
//
//   * Tori whose every axis longer than 1 wraps and is at least 3 long (one slice): any shift of
//     the coordinates. Dimension-order routing and its tie splitting are the same everywhere.
//   * GPU fat trees (topology/gpu_builder.h): shifting every node by whole pods (3 levels) or by
//     whole scalable units whose node count the spines per pod divide (2 levels). d-mod-k picks
//     spine dst_node % spines_per_pod, unchanged by such shifts, and core
//     (dst_node / spines_per_pod) % cores_per_group, which moves every route through core c to
//     core c + shift / spines_per_pod alike (every core of group j reaches spine j of every pod).
// Other fabrics (one NVLink node, DCN slices, unwrapped tori, switch:N) have none.

#ifndef PODSIM_COLLECTIVES_FABRIC_SYMMETRY_H_
#define PODSIM_COLLECTIVES_FABRIC_SYMMETRY_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "topology/fabric.h"

namespace podsim::collectives {

class FabricSymmetry {
 public:
  explicit FabricSymmetry(const topology::Fabric* fabric);

  // A translation: per torus axis, or (GPU) in nodes.
  struct Shift {
    std::vector<int> delta;
  };

  // The shift that moves `chips` to their canonical translate (on tori the first chip at the
  // origin; on GPU fat trees the lowest node into the first translation unit), or nullopt when
  // the fabric has no symmetry that applies.
  std::optional<Shift> ToCanonical(const std::vector<topology::VertexId>& chips) const;
  Shift Inverse(const Shift& shift) const;
  // Whether every shift of the torus's coordinates is a symmetry (the first case above).
  bool translates_torus() const { return torus_; }
  // REQUIRES: the shift keeps the vertex inside the fabric (shifts from ToCanonical and their
  // inverses do, for the chips they were made for and the links of their routes).
  topology::VertexId ApplyToVertex(topology::VertexId vertex, const Shift& shift) const;
  // The translated link, or kNoLink when none exists.
  topology::LinkIndex ApplyToLink(topology::LinkIndex link, const Shift& shift) const;

 private:
  enum class Role : uint8_t { kNone, kChip, kNic, kNvSwitch, kLeaf, kSpine, kCore };

  const topology::Fabric* fabric_;
  bool torus_ = false;
  bool gpu_ = false;
  int unit_nodes_ = 0;           // GPU: nodes per translation unit.
  std::vector<Role> role_;       // Per vertex (GPU fabrics).
  std::vector<uint32_t> index_;  // Per vertex: its index in the layout's array for its role.
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_FABRIC_SYMMETRY_H_
