// The collective operations podsim simulates, and the nccl-tests bandwidth definitions.

#ifndef PODSIM_COLLECTIVES_COLLECTIVE_OP_H_
#define PODSIM_COLLECTIVES_COLLECTIVE_OP_H_

#include <string_view>

#include "sim/status.h"

namespace podsim::collectives {

enum class CollectiveOp {
  kAllGather,
  kReduceScatter,
  kAllReduce,
  kAllToAll,
  kBroadcast,
  kPointToPoint,
  // Every rank of a group sends its 1/n of `bytes` to the next rank of the group's ring (the
  // last to the first) and receives the previous rank's: one step of a ring, as context
  // parallelism's ring attention passes key/value blocks (XLA's collective-permute).
  kShift,
};

// "all-gather", "reduce-scatter", "all-reduce", "all-to-all", "broadcast", "p2p", "shift".
std::string_view CollectiveOpName(CollectiveOp op);
// Parses the names above; NotFound with the valid names otherwise.
sim::StatusOr<CollectiveOp> ParseCollectiveOp(std::string_view name);

// Bus bandwidth factor of nccl-tests (doc/PERFORMANCE.md; reference/measured.md V9): busbw =
// algbw * factor, where algbw = S / time and S is nccl-tests' size: the whole gathered or reduced
// array, for all-to-all one rank's send buffer (collective_runner.h). all-reduce 2(n-1)/n;
// all-gather, reduce-scatter and all-to-all (n-1)/n; broadcast and p2p 1; shift 1/n (each rank
// sends bytes/n, counted as nccl-tests' sendrecv counts its per-rank message). REQUIRES: ranks
// >= 1.
double BusBandwidthFactor(CollectiveOp op, int ranks);

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_COLLECTIVE_OP_H_
