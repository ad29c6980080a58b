// Whole-fabric figures for reports: diameter, bisection and injection bandwidth.
//
// None is an all-pairs computation; each is linear in chips + links:
//   * Diameter: the longest route (in link hops) from a representative chip to every chip. Tori
//     with wraps are vertex-transitive, and on an unwrapped axis the end chip 0 is the farthest
//     from something, so chip 0's eccentricity is the diameter; fat trees' route lengths depend
//     only on the highest switch level two GPUs must cross, and chip 0 reaches every level that
//     exists. The last chip is measured too, which covers partly filled SUs, pods and slices.
//   * Bisection bandwidth: the least bandwidth crossing any cut into two equal halves, from the
//     exact argument for each structure (below, in BisectionBytesPerS).
//   * Injection bandwidth: the scale-up links leaving one chip.

#ifndef PODSIM_TOPOLOGY_FABRIC_METRICS_H_
#define PODSIM_TOPOLOGY_FABRIC_METRICS_H_

#include "topology/fabric.h"

namespace podsim::topology {

// Largest number of links on a route between two chips (0 for one chip).
int DiameterHops(const Fabric& fabric);

// One-way bisection bandwidth in bytes/s (what one half can send the other at once); twice this is
// the full-duplex figure hardware.md's tables quote (3.6 TB/s for an 8xH100 node).
//   * Torus slice: cutting axis a (length L >= 2) in half severs N/L rings, each crossing the cut
//     twice with a wrap and once without; the minimum over axes is the bisection (for k-ary
//     n-cubes the straight cut across an axis is optimal).
//   * Several TPU slices: the lesser of every slice cut through its torus and half the slices
//     cut off at their hosts' DCN links.
//   * One NVSwitch node: half the GPUs' NVLink egress (put every switch on one side).
//   * Fat tree: the least of (a) half the GPUs' NIC links, (b) with >= 2 SUs, half the SUs'
//     leaf up-links, (c) with >= 2 pods, half the pods' spine up-links: a balanced cut either
//     separates whole subtrees at some level or cuts NIC links.
//   * switch:N: floor(N/2) chips' links.
// An odd number of parts is halved fractionally.
double BisectionBytesPerS(const Fabric& fabric);

struct InjectionBandwidth {
  double max_bytes_per_s = 0;  // Scale-up (ICI, NVLink, generic) egress of the best-connected chip.
  double min_bytes_per_s = 0;  // ... of the worst-connected (edge chips of an unwrapped axis).
};
InjectionBandwidth ScaleUpInjection(const Fabric& fabric);

}  // namespace podsim::topology

#endif  // PODSIM_TOPOLOGY_FABRIC_METRICS_H_
