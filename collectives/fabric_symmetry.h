// FabricSymmetry: automorphisms of a fabric that also map the routes Fabric::Route and
// Fabric::ParallelRoutes pick onto themselves. A collective on chips C and the same collective on
// the image of C then take the same time over the image links, so collective_network.h rehearses
// one of them and moves its record to the others, and a symmetric quotient (translation_group.h)
// simulates one chip per orbit.
//
// The symmetries are cyclic shifts along "symmetry axes":
//   * Tori whose every axis longer than 1 wraps and is at least 3 long (one slice): the torus's
//     own axes, any shift of the coordinates. Dimension-order routing and its tie splitting are
//     the same everywhere.
//   * GPU systems (topology/gpu_builder.h): the GPU slot in its node, as one axis or as the
//     digits of a mixed radix (slot_radix: tp=4 inside a node of 8 is slot = i + 4 q, i < 4,
//     q < 2, whose digits rotate separately), then the node.
//       - Slots permute in every node at once (slot s -> s + k mod gpus per node, or digit by
//         digit), carrying each GPU's NIC and rail leaf along; NVSwitches, spines and cores stay.
//         Every GPU has the same NVLinks to each NVSwitch of its node, rail leaves are alike
//         (each has the same up-links to every spine), and d-mod-k routing picks spine and core
//         from the destination node alone, so any permutation of the slots maps the routes of
//         Fabric::ParallelRoutes, which transfers take (in a node striped over every NVSwitch),
//         onto routes. Fabric::Route's single in-node route (one NVSwitch, picked from the
//         slots' sum) does not; nothing that a symmetric quotient runs uses it.
//       - With 3 levels of whole pods (spines per pod = nodes per SU, as built), the node is
//         three digits, node = n + 32 (u + 4 p) (n in its SU, u the SU in its pod, p the pod),
//         each rotating cyclically in every SU, pod or the fabric at once: n carries spine
//         n mod 32 of every pod and core group n along (d-mod-k picks spine dst % 32); u moves
//         the SU's leaves and each core c of a group to the core of the SU c = (c / 4, c % 4)'s
//         image (d-mod-k picks core (global SU) % cores_per_group), a permutation of the cores
//         only where cores_per_group and the 4 SUs of a pod divide one another; p moves the
//         pod's spines and the cores as a shift by whole pods does below. A ring over a pod's
//         nodes turns under u, one within each SU under n: both then simulate one node in 4 or
//         in 32 where whole-pod shifts left every node of a pod apart.
//       - With 2 levels of two or more whole SUs (one pod; its 16 spines divide the 32 nodes of
//         an SU), the same digits with one pod: n carries spine j to j + n mod 16 (d-mod-k picks
//         spine dst % 16, and dst's SU adds a multiple of 32), u moves the SU's leaves and no
//         spine. A pipeline whose stages are SUs, each stage's data-parallel ring over its SU's
//         nodes, turns under n: one node in 32 where whole-SU shifts, which move a stage onto
//         another, left every node apart.
//       - In both, n may itself be digits (node_radix: stages of 16 nodes in an SU of 32 are
//         n = a + 16 b, a < 16, b < 2), each rotating in every block of the digits above it at
//         once, as slot digits do. A rotation of any digit adds to n a multiple of its place
//         value p, within blocks of p x its length; every length is a power of 2 (32 nodes per
//         SU), so it permutes the residues n mod spines alike in every SU: spine j moves where
//         node j does, modulo the spines (with 3 levels there are as many spines as nodes of an
//         SU), and core group j with spine j.
//       - Otherwise nodes shift by whole translation units, cyclically: whole pods (3 levels),
//         whole scalable units whose node count the spines per pod divide (2 levels), or single
//         nodes when the fabric is one scalable unit (every node under the same rail leaves) whose
//         node count the spines divide or is below it. d-mod-k picks spine
//         dst_node % spines_per_pod, which the shift permutes (spine j serves the nodes that
//         j + shift serves afterwards; unchanged by shifts of whole units), and core
//         (dst_node / spines_per_pod) % cores_per_group, which moves every route through core c
//         to core c + shift / spines_per_pod alike (every core of group j reaches spine j of
//         every pod). A shift that wraps past the last node is a symmetry only when the fabric
//         is whole units and, with 3 levels, the core index wraps with it
//         ((nodes / spines_per_pod) % cores_per_group == 0); otherwise only the shifts that stay
//         inside the fabric (ToCanonical's) are used, and the node axis gives no group.
//   * Tori of several slices over DCN (topology/torus_builder.h), each slice as above: the
//     torus's axes, shifted in every slice at once by whole host tiles (a chip's host moves with
//     it, so its PCIe and DCN links map onto links), then the slice. Routes within a slice are
//     the torus's; between slices chip, host, DCN switch, host, chip, which every shift maps onto
//     the route between the images.
// Other fabrics (unwrapped tori, switch:N) have none.

#ifndef PODSIM_COLLECTIVES_FABRIC_SYMMETRY_H_
#define PODSIM_COLLECTIVES_FABRIC_SYMMETRY_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "topology/fabric.h"

namespace podsim::collectives {

class FabricSymmetry {
 public:
  // `slot_radix` (GPU systems only; empty: one slot axis) factors the GPUs per node into the
  // lengths of slot digits, fastest first. REQUIRES: their product is the GPUs per node.
  // `node_radix` likewise factors the nodes of a scalable unit where nodes are digits
  // (unit_digits(); ignored elsewhere; empty: one digit). REQUIRES there: each divides the nodes
  // of an SU, and their product is that count.
  explicit FabricSymmetry(const topology::Fabric* fabric, std::vector<int> slot_radix = {},
                          std::vector<int> node_radix = {});

  // A shift along each symmetry axis (header comment): per torus axis, or (GPU) per slot digit,
  // then nodes.
  struct Shift {
    std::vector<int> delta;
  };

  // Whether the fabric has symmetry axes (a group of shifts, possibly only the identity).
  bool has_axes() const { return torus_ || gpu_ || slices_; }
  // The length of each symmetry axis: the torus's shape (several slices: then the slices), or
  // {slot digits..., nodes}, or with nodes as digits {slot digits..., node digits..., SUs,
  // pods} ({..., 32, 4, pods} with one node digit).
  const std::vector<int>& axis_lengths() const { return lengths_; }
  // Whether the cyclic shifts along `axis` by multiples of `step` are symmetries of the fabric.
  // REQUIRES: has_axes().
  bool AllowsStep(size_t axis, int step) const;
  // A chip's coordinates on the symmetry axes, and back. REQUIRES: has_axes().
  std::vector<int> Coord(topology::VertexId chip) const;
  topology::VertexId ChipAt(const std::vector<int>& coord) const;

  const topology::Fabric& fabric() const { return *fabric_; }
  // GPU systems: the lengths of the slot digits (empty on other fabrics).
  const std::vector<int>& slot_radix() const { return radix_; }
  // Whether a GPU fabric's nodes are digits (node in its SU, SU, pod: the header comment), and
  // the lengths of the node-in-SU digits then (empty otherwise).
  bool unit_digits() const { return pod_digits_; }
  const std::vector<int>& node_radix() const { return node_radix_; }

  // The shift that moves `chips` to their canonical translate (on tori the first chip at the
  // origin; on GPU fat trees the lowest node into the first translation unit: where nodes are
  // digits, its pod to the first pod, or on two levels its SU to the first SU; slots unmoved), or
  // nullopt when the fabric has no translation that applies.
  std::optional<Shift> ToCanonical(const std::vector<topology::VertexId>& chips) const;
  Shift Inverse(const Shift& shift) const;
  // Whether every shift of the torus's coordinates is a symmetry (the first case above).
  bool translates_torus() const { return torus_; }
  // REQUIRES: a shift by allowed steps (AllowsStep), or one that keeps the vertex inside the
  // fabric (shifts from ToCanonical and their inverses do, for the chips they were made for and
  // the links of their routes).
  topology::VertexId ApplyToVertex(topology::VertexId vertex, const Shift& shift) const;
  // The translated link, or kNoLink when none exists.
  topology::LinkIndex ApplyToLink(topology::LinkIndex link, const Shift& shift) const;

 private:
  enum class Role : uint8_t { kNone, kChip, kNic, kNvSwitch, kLeaf, kSpine, kCore, kHost };

  // The slot that `slot` moves to under the shift's slot digits.
  int MovedSlot(int slot, const Shift& shift) const;
  // The node that `node` moves to under the shift's node axis or node digits.
  int MovedNode(int node, const Shift& shift) const;
  // With node digits: the node of an SU that its `local` node moves to under the shift's
  // node-in-SU digits.
  int MovedLocalNode(int local, const Shift& shift) const;
  // With node digits: the axes of the SU in its pod and of the pod.
  size_t su_axis() const { return radix_.size() + node_radix_.size(); }
  size_t pod_axis() const { return su_axis() + 1; }
  // ApplyToVertex of a leaf, spine or core on a GPU fabric whose nodes are digits (pod_digits_).
  topology::VertexId ApplyAcrossPods(topology::VertexId vertex, const Shift& shift) const;
  // Several slices: finds the host tiles (tile_), and with them the symmetry (slices_).
  void FindHostTiles();
  // Several slices: the vertex a shift moves a chip or a host to (the DCN switch stays).
  topology::VertexId ApplyAcrossSlices(topology::VertexId vertex, const Shift& shift) const;
  // The link between the images of `l`'s ends along the same torus axis and direction (both
  // ends chips of one torus slice), or kNoLink.
  topology::LinkIndex MovedTorusLink(const topology::Link& l, topology::VertexId src) const;

  const topology::Fabric* fabric_;
  bool torus_ = false;
  bool gpu_ = false;
  bool slices_ = false;          // A torus of several slices over DCN.
  std::vector<int> tile_;        // Several slices: a host's chips along each torus axis.
  std::vector<int> lengths_;     // Of the symmetry axes.
  std::vector<int> radix_;       // GPU: lengths of the slot digits, the first axes.
  int unit_nodes_ = 0;           // GPU: nodes per translation unit; 0 when there is none.
  bool node_wraps_ = false;      // GPU: shifts by whole units wrap around (header comment).
  bool pod_digits_ = false;      // GPU: node axes {node-in-SU digits..., SU, pod} (header).
  std::vector<int> node_radix_;  // With pod_digits_: lengths of the node-in-SU digits.
  std::vector<Role> role_;       // Per vertex (GPU fabrics).
  std::vector<uint32_t> index_;  // Per vertex: its index in the layout's array for its role.
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_FABRIC_SYMMETRY_H_
