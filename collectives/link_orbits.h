// LinkOrbits: the links of a fabric grouped into orbits of a symmetry group (translation_group.h),
// which is what a symmetric quotient simulates on.
//
// Every link maps to its orbit's canonical link, which stands for the whole orbit as one
// flow-model resource. A flow class that crosses a link of orbit L then loads every link of L
// alike; with a group H acting on the flows, one flow per H-orbit crossing h links of L puts
// h * |H| / |L| flows on each link of L (for every link l of L, the pairs (g, l') with g in H and
// l' on the route with g l' = l number h times the |H| / |L| elements fixing a link), so its
// weight on the canonical link is h times `multiplicity`, |H| / |L| (sim/flow_model.h,
// "Weights"). The trivial group maps every link to itself with multiplicity 1, copies
// (below) apart.

#ifndef PODSIM_COLLECTIVES_LINK_ORBITS_H_
#define PODSIM_COLLECTIVES_LINK_ORBITS_H_

#include <vector>

#include "topology/fabric.h"

namespace podsim::collectives {

struct LinkOrbits {
  std::vector<topology::LinkIndex> canonical;  // Per link: one fixed link of its orbit.
  // Per link: |H| / the size of its orbit; 0 for a link the group does not act on (a TPU host's
  // PCIe link), which no flow of the quotient may cross.
  std::vector<double> multiplicity;
  // Per link (empty: none): the twin that stands for it, or the link itself. A link is a copy
  // (twin != itself) where it is an NVSwitch's link to or from a GPU of its node and a lower
  // switch of the node has as many NVLinks to every GPU; its twin is that switch's link with the
  // same GPU and direction. Permuting such switches fixes every chip and maps the fabric onto
  // itself, and every flow that crosses an NVSwitch does so on a stripe per switch in proportion
  // to its NVLinks (a transfer between two GPUs of a node, topology::Fabric::ParallelRoutes) or
  // on an upload and a multicast per switch (NVLink SHARP), so each flow on a copy has an equal
  // twin that starts, moves and ends with it: the quotient leaves flows on copies out, and a
  // copy's canonical link is its twin's, with its load.
  std::vector<topology::LinkIndex> twin;
  bool IsCopy(topology::LinkIndex link) const { return !twin.empty() && twin[link] != link; }
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_LINK_ORBITS_H_
