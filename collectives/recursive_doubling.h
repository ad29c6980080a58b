// Recursive doubling all-reduce (Thakur, Rabenseifner, Gropp 2005, "Optimization of collective
// communication operations in MPICH", sec. 4.5: MPICH's all-reduce for short messages), as phases
// of pairwise exchanges.
//
// With n = 2^k ranks in position order, step j (j = 0 .. k-1) pairs each rank with the one 2^j
// positions away; the two exchange their whole partial sums (V bytes each way) and both add.
// After k steps every rank holds the full reduction. Each rank moves k V bytes, against the ring's
// 2 (n-1)/n V, but pays only k route latencies against the ring's 2 (n-1) (or a torus
// algorithm's 2 x its steps per axis): the latency-optimal choice when V is small, and a poor
// one when V is large. Every step is a PhasedCollective phase whose lines are the partner pairs,
// so a rank moves to its next step as soon as its own exchange is done (per-rank dependencies).

#ifndef PODSIM_COLLECTIVES_RECURSIVE_DOUBLING_H_
#define PODSIM_COLLECTIVES_RECURSIVE_DOUBLING_H_

#include <vector>

#include "collectives/phased_collective.h"
#include "sim/status.h"
#include "topology/fabric.h"

namespace podsim::collectives {

// The single piece of a recursive-doubling all-reduce over each group (ranks in position order)
// of `bytes` per group. Fails with InvalidArgument naming the group size unless it is a power of
// two. REQUIRES: groups of equal size.
sim::StatusOr<std::vector<ExchangePiece>> RecursiveDoublingPieces(
    const std::vector<std::vector<topology::VertexId>>& groups, double bytes);

// The partner distances (in positions) of the steps, 1, 2, 4, ..., n/2, for n ranks.
// REQUIRES: n a power of two.
std::vector<size_t> RecursiveDoublingDistances(size_t n);

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_RECURSIVE_DOUBLING_H_
