// Simulating one collective on a fabric: choose the groups and the algorithm, build the transfers,
// run them on a fresh engine and flow model, and report the time and the bandwidths.
//
// Groups. On a torus the collective spans the requested physical axes (all of them by default):
// chips that differ only along those axes, within one slice, form a group, and all groups run at
// once (on 4x4x4 with axes x, 16 rings of 4 share nothing and run concurrently). On other fabrics
// there is one group of all chips, in chip order. `bytes` is the size of the whole gathered or
// reduced array of one group (the book's V, nccl-tests' S); for all-to-all, every rank's send
// buffers together (n of nccl-tests' per-rank S, each rank sending V / n^2 to every rank).
//
// Algorithms: ring, bidi-ring, line, multi-axis (shard_forwarding.h, phased_collective.h), tree
// (double_binary_tree.h), halving-doubling (halving_doubling.h), recursive-doubling
// (recursive_doubling.h), in-switch (in_switch_reduction.h), hierarchical (hierarchical.h),
// direct, chain, p2p (direct_collectives.h).
//
// Algorithm selection (Select), in the spirit of XLA on TPUs and NCCL on GPUs:
//   * all-gather, reduce-scatter, all-reduce on a torus: one axis -> bidirectional ring when the
//     axis wraps, line when it does not; several axes -> the multi-axis algorithm (pieces visiting
//     the axes in rotated orders, phased_collective.h), each axis ring or line as above.
//   * an all-reduce on a torus over a power-of-two group so small that recursive doubling is
//     surely faster -- its cost bounded from above (each step's slowest pair paying its route
//     latency and sharing every link of its route) below the torus algorithm's hop latencies
//     alone -- runs recursive doubling instead (MPICH's short-message all-reduce, Thakur et al.
//     2005; XLA's TPU choices are not public). On a v5e slice without wraparound that is an
//     array of up to ~45 kB, the book's latency-bound size (formulas.md 2.2): the
//     tensor-parallel all-reduces of a decode step.
//   * the same on switched fabrics (NVSwitch, fat trees, switch:N): a unidirectional ring in chip
//     order, each transfer striped over the parallel NVLink routes (NCCL's ring).
//   * GPU systems (NCCL's choices, src/graph/tuning.cc and measured.md V9):
//       - all-reduce inside one node with NVLink SHARP (NVSwitch gen 3+, 18 NVLinks per GPU:
//         H100/H200/B200/GB200): in-switch (NVLS, NCCL's default on 8xH100);
//       - all-reduce across nodes up to kTreeMaxBytes: double binary tree (log-depth latency);
//       - all-gather, reduce-scatter and larger all-reduces across nodes: hierarchical (NVLink in
//         the node, every rail's NIC across nodes);
//       - otherwise (one node without NVLS, e.g. A100): ring.
//   * all-to-all: direct; broadcast: pipelined chain; p2p: one transfer.
// The selector's reason (CollectiveResult::reason) names the rule that fired.

#ifndef PODSIM_COLLECTIVES_COLLECTIVE_RUNNER_H_
#define PODSIM_COLLECTIVES_COLLECTIVE_RUNNER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectives/collective_op.h"
#include "collectives/efficiency_model.h"
#include "collectives/link_load.h"
#include "collectives/transfer_observer.h"
#include "collectives/translation_group.h"
#include "sim/flow_observer.h"
#include "sim/status.h"
#include "sim/time.h"
#include "topology/fabric.h"

namespace podsim::collectives {

// The default work bound of one simulation, in point-to-point transfers: at the 0.4-0.65 us per
// transfer measured on the 2-core reference machine (ring:1024 ring all-reduce, 2.1M transfers
// in 0.84 s; gb200:72 --every-chip --flows, 2e7 in 12.8 s) at most about 3 s. `--max-transfers`
// raises it.
inline constexpr uint64_t kDefaultMaxTransfers = 5'000'000;

// OutOfRange "<what> would simulate about <estimate> point-to-point transfers, over the <limit>
// left of the run's work bound (--max-transfers, ... raises it)".
sim::Status TooManyTransfers(std::string_view what, double estimate, uint64_t limit);

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
  // Software cost of one message, paid before its bytes move (transfer_executor.h). Adds to the
  // efficiency model's own per-message overhead when `calibrated`.
  sim::Time per_message_overhead = sim::Time::Zero();
  // Explicit group: these chips, in this (ring) order, form the one group; the algorithms that
  // treat GPU nodes apart (hierarchical, tree, in-switch across nodes) take each node's ranks in
  // device order and the nodes in order, as NCCL lays its rings (hierarchical.h, SplitByNode).
  // Empty: the groups come from `axes` (tori) or are all chips (other fabrics). Not combined
  // with `axes`.
  std::vector<topology::VertexId> ranks;
  // With `ranks` on a torus: the ranks form a grid of this shape (mixed radix, first dimension
  // fastest; the product is ranks.size()), and the collective runs along its dimensions like the
  // multi-axis algorithm, as a ring where a line of the grid closes through direct links and a
  // line elsewhere. Empty: one ring in rank order.
  std::vector<int> rank_shape;
  // With `ranks`: per rank, the rank whose state stands for it (itself for a representative),
  // when a group of rotations of the rank grid maps the collective onto itself (RotatableDims;
  // a step's symmetric quotient). Only representatives are simulated, and each of their
  // transfers stands for its orbit (phased_collective.h); for the ring algorithms, lines, the
  // multi-axis and hierarchical algorithms and NVLS inside one node only. Empty: every rank
  // simulated.
  std::vector<topology::VertexId> rank_reps;
  // false (default): the pure fabric, line rate and hop latencies only (the idle-fabric closed
  // forms hold). true: CalibratedEfficiency(fabric) (efficiency_model.h): protocol efficiency per
  // link kind, switch reduction throughput, per-message overhead and launch latency as measured.
  bool calibrated = false;
  // A later chunk of one operation already launched (a step's pipelined tp overlap): the
  // efficiency model's launch latency is not paid again.
  bool launched = false;
  // Overrides the model `calibrated` picks, e.g. to study one factor at a time.
  std::optional<FabricEfficiency> efficiency;
  // Observers of the run (not owned; they only read, so results do not depend on them): every
  // transfer of this collective, and every flow and link usage of the shared flow model.
  TransferObserver* transfer_observer = nullptr;
  sim::FlowObserver* flow_observer = nullptr;
  // Fill CollectiveResult::bottleneck (link_load.h): a meter of every link's load, which only
  // reads (the run and its time are the same without it).
  bool measure_links = false;
  // With measure_links, also fill CollectiveResult::link_utilisation (one double per link of the
  // fabric, for reports' heat maps).
  bool keep_link_utilisation = false;
  // Work bound, checked before the transfers are built: the algorithm's estimated transfer count
  // (EstimatedTransfers) may not exceed it; OutOfRange naming the estimate, the limit and
  // --max-transfers otherwise.
  uint64_t max_transfers = kDefaultMaxTransfers;
  // false (default): a lone collective that the fabric's symmetries map onto itself (torus axes,
  // every one wrapped, with a ring or multi-axis algorithm; every GPU of a fat tree with the
  // hierarchical algorithm: SymmetryOf in the .cc) simulates one rank per orbit of them, each
  // transfer a flow class on the link orbits -- exactly the full simulation (docs/architecture.md,
  // "The symmetric quotient"). true: every rank of every group, the brute-force reference
  // (--reference). Observers always see every rank.
  bool reference = false;
};

struct CollectiveResult {
  std::string algorithm;
  std::string reason;  // Why the algorithm was chosen (or "requested").
  sim::Time time;
  int ranks_per_group = 0;
  int groups = 0;
  // nccl-tests' algbw: its size S over the time, S = `bytes`, except for all-to-all, where S is
  // one rank's send buffer, bytes / ranks_per_group (nccl-tests' alltoall.cu).
  double algbw_bytes_per_s = 0;
  double busbw_bytes_per_s = 0;  // algbw * BusBandwidthFactor
  uint64_t transfers = 0;
  uint64_t flows = 0;
  uint64_t events = 0;
  // Ranks simulated (all of them, or one per orbit of the fabric's symmetries).
  uint64_t simulated_ranks = 0;
  bool symmetric = false;  // One rank per orbit.
  // With CollectiveRequest::measure_links: the busiest links over the run, which ended at
  // `time`; when collectives ran concurrently, of the shared fabric over the whole run (until the
  // last of them ended), the same for each.
  Bottleneck bottleneck;
  // With keep_link_utilisation: every link's mean utilisation of its line rate over the run, in
  // link order (LinkLoadMeter::Utilisation; on a quotient every link of an orbit has its figure).
  std::vector<double> link_utilisation;
};

// The algorithm SimulateCollective runs for `request` (validated as it would be), and why.
struct AlgorithmChoice {
  std::string algorithm;
  std::string reason;
  // BuildCollective: the estimate its work bound was checked against (0 where none was).
  double estimated_transfers = 0;
};
sim::StatusOr<AlgorithmChoice> ChooseAlgorithm(const topology::Fabric& fabric,
                                               const CollectiveRequest& request);

// Per entry of `request.rank_shape` (one entry for the one ring of the ranks when the shape is
// empty), whether the collective built for `request` stays the same transfers with the same
// dependencies when its ranks are rotated cyclically along that dimension (the rank at grid
// position i takes the place of the one at i + 1, modulo the length): true for the ring
// algorithms over one dimension and the multi-axis algorithm's ring dimensions; false for lines,
// trees, recursive doubling and every other algorithm, and for dimensions of length 1. A step's
// symmetric quotient relies on it (workloads/step_symmetry.h). Fails as ChooseAlgorithm does.
sim::StatusOr<std::vector<bool>> RotatableDims(const topology::Fabric& fabric,
                                               const CollectiveRequest& request);

// The symmetry of a lone collective over explicit ranks (a step's group rehearsed alone on an
// idle fabric, collective_network.h): the largest product found of cyclic shifts along the
// fabric's symmetry axes (fabric_symmetry.h; on GPU systems also with the slot and node digits of
// the block the ranks fill) each of which maps the ranks onto themselves and every phase's rings
// and lines onto rings and lines of that phase in their own order, and per rank the first rank of
// its orbit (CollectiveRequest::rank_reps). Simulating one rank per orbit then gives exactly the
// full run (docs/architecture.md, "The symmetric quotient"). nullopt where no shift but the
// identity does, for rooted ops, algorithms not reduced by rotations, requests with rank_reps or
// `reference`, and fabrics without symmetry axes. Fails as ChooseAlgorithm does.
struct RankSymmetry {
  TranslationGroup group;
  std::vector<topology::VertexId> rank_reps;
};
sim::StatusOr<std::optional<RankSymmetry>> SymmetryOfRanks(const topology::Fabric& fabric,
                                                           const CollectiveRequest& request);

// The algorithm names --algorithm accepts.
const std::vector<std::string>& AlgorithmNames();

// One line on what algorithm `name` (one of AlgorithmNames()) runs, on which collectives, and whose
// algorithm it is; "" for an unknown name.
std::string_view AlgorithmSummary(std::string_view name);

// Simulates one collective on an otherwise idle fabric. Bad input (bytes, axes, ranks, an
// algorithm that cannot run the op or on this fabric) fails with one clear InvalidArgument or
// NotFound naming the flag and what was expected.
sim::StatusOr<CollectiveResult> SimulateCollective(const topology::Fabric& fabric,
                                                   const CollectiveRequest& request);

// Simulates several collectives started together on one engine and flow model, so that they
// share the links their routes have in common max-min fairly; result i is request i's, its time
// measured from the common start. Every request must use the same efficiency model (`calibrated`
// and `efficiency` alike); each in-switch collective gets reduction engines of its own.
sim::StatusOr<std::vector<CollectiveResult>> SimulateConcurrentCollectives(
    const topology::Fabric& fabric, const std::vector<CollectiveRequest>& requests);

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_COLLECTIVE_RUNNER_H_
