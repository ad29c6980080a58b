// Recursive halving-doubling (Thakur, Rabenseifner, Gropp 2005, "Optimization of collective
// communication operations in MPICH"), as phases of pairwise exchanges.
//
// With n = 2^k ranks, reduce-scatter is k halving steps: at step j each rank exchanges half of
// what it holds with the partner n/2^(j+1) positions away and keeps the other half reduced.
// All-gather is the reverse, k doubling steps with partners 1, 2, 4, ... positions away;
// all-reduce is both. Every step is a PhasedCollective phase whose lines are the partner pairs,
// so a rank moves to its next step as soon as its own exchange is done (per-rank dependencies).
// Volume per rank (n-1)/n V per half, like the ring, in log2(n) steps instead of n-1.

#ifndef PODSIM_COLLECTIVES_HALVING_DOUBLING_H_
#define PODSIM_COLLECTIVES_HALVING_DOUBLING_H_

#include <vector>

#include "collectives/collective_op.h"
#include "collectives/phased_collective.h"
#include "sim/status.h"
#include "topology/fabric.h"

namespace podsim::collectives {

// The single piece of halving-doubling for `op` over each group (ranks in position order) with
// `bytes` per group. Fails with InvalidArgument naming the group size unless it is a power of two;
// REQUIRES: op is all-gather, reduce-scatter or all-reduce; groups of equal size.
sim::StatusOr<std::vector<ExchangePiece>> HalvingDoublingPieces(
    const std::vector<std::vector<topology::VertexId>>& groups, CollectiveOp op, double bytes);

// The exchanges of one step of halving-doubling or recursive doubling: in every group, the ranks
// at positions p and p + distance for each p with (p & distance) == 0. REQUIRES: distance is a
// power of two below the groups' (power-of-two) size.
std::vector<std::vector<topology::VertexId>> PartnerPairs(
    const std::vector<std::vector<topology::VertexId>>& groups, size_t distance);

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_HALVING_DOUBLING_H_
