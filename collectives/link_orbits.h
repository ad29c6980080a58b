// LinkOrbits: the links of a fabric grouped into orbits of a symmetry group (translation_group.h),
// which is what a symmetric quotient simulates on.
//
// Every link maps to its orbit's canonical link, which stands for the whole orbit as one
// flow-model resource. A flow class that crosses a link of orbit L then loads every link of L
// alike; with a group H acting on the flows, one flow per H-orbit crossing h links of L puts
// h * |H| / |L| flows on each link of L (for every link l of L, the pairs (g, l') with g in H and
// l' on the route with g l' = l number h times the |H| / |L| elements fixing a link), so its
// weight on the canonical link is h times `multiplicity`, |H| / |L| (sim/flow_model.h,
// "Weights"). The trivial group maps every link to itself with multiplicity 1.

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
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_LINK_ORBITS_H_
