// Generic fabrics for comparisons with other simulators (ASTRA-sim, SimGrid): a ring, a torus and
// a single switch, each with one bandwidth and one latency for every link direction.

#ifndef PODSIM_TOPOLOGY_GENERIC_BUILDER_H_
#define PODSIM_TOPOLOGY_GENERIC_BUILDER_H_

#include <vector>

#include "sim/status.h"
#include "sim/time.h"
#include "topology/fabric.h"

namespace podsim::topology {

struct GenericLinkOptions {
  double bytes_per_s = 0;  // One way, per link direction; > 0.
  sim::Time latency;       // Per hop.
};

// ring:N: N chips on a bidirectional ring (a 1-axis torus with wrap; no wrap link when N <= 2).
sim::StatusOr<Fabric> BuildRing(int chips, const GenericLinkOptions& link);

// torus:AxB[xC]: wraps on every axis unless `wraps` says otherwise.
sim::StatusOr<Fabric> BuildGenericTorus(const std::vector<int>& shape,
                                        const std::vector<bool>& wraps,
                                        const GenericLinkOptions& link);

// switch:N: N chips, each with one link pair to one non-blocking switch; every route is 2 hops.
sim::StatusOr<Fabric> BuildSwitch(int chips, const GenericLinkOptions& link);

}  // namespace podsim::topology

#endif  // PODSIM_TOPOLOGY_GENERIC_BUILDER_H_
