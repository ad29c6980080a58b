// Simulating one collective on a fabric: choose the groups and the algorithm, build the transfers,
// run them on a fresh engine and flow model, and report the time and the bandwidths.
//
// Groups. On a torus the collective spans the requested physical axes (all of them by default):
// chips that differ only along those axes, within one slice, form a group, and all groups run at
// once (on 4x4x4 with axes x, 16 rings of 4 share nothing and run concurrently). On other fabrics
// there is one group of all chips, in chip order. `bytes` is the size of the whole gathered or
// reduced array of one group (the book's V, nccl-tests' S).
//
// Algorithm selection (Select), in the spirit of XLA on TPUs and NCCL on GPUs:
//   * all-gather, reduce-scatter, all-reduce on a torus: one axis -> bidirectional ring when the
//     axis wraps, line when it does not; several axes -> the multi-axis algorithm (pieces visiting
//     the axes in rotated orders, phased_collective.h), each axis ring or line as above.
//   * the same on switched fabrics (NVSwitch, fat trees, switch:N): a unidirectional ring in chip
//     order, each transfer striped over the parallel NVLink routes (NCCL's ring).
//   * all-to-all: direct; broadcast: pipelined chain; p2p: one transfer.

#ifndef PODSIM_COLLECTIVES_COLLECTIVE_RUNNER_H_
#define PODSIM_COLLECTIVES_COLLECTIVE_RUNNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/collective_op.h"
#include "sim/status.h"
#include "sim/time.h"
#include "topology/fabric.h"

namespace podsim::collectives {

struct CollectiveRequest {
  CollectiveOp op = CollectiveOp::kAllReduce;
  double bytes = 0;  // V: the whole array of one group; > 0.
  // Torus axes to span by name ("x", "y", "z"); empty: all axes longer than 1.
  std::vector<std::string> axes;
  // "" picks one (Select); otherwise one of AlgorithmNames().
  std::string algorithm;
  // p2p: source and destination chips; broadcast: root = src.
  topology::VertexId src = 0;
  topology::VertexId dst = 0;
  // Software cost of one message, paid before its bytes move (transfer_executor.h).
  sim::Time per_message_overhead = sim::Time::Zero();
};

struct CollectiveResult {
  std::string algorithm;
  std::string reason;  // Why the algorithm was chosen (or "requested").
  sim::Time time;
  int ranks_per_group = 0;
  int groups = 0;
  double algbw_bytes_per_s = 0;  // bytes / time (nccl-tests)
  double busbw_bytes_per_s = 0;  // algbw * BusBandwidthFactor
  uint64_t transfers = 0;
  uint64_t flows = 0;
  uint64_t events = 0;
};

// The algorithm names --algorithm accepts.
const std::vector<std::string>& AlgorithmNames();

sim::StatusOr<CollectiveResult> SimulateCollective(const topology::Fabric& fabric,
                                                   const CollectiveRequest& request);

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_COLLECTIVE_RUNNER_H_
