// A Chakra execution trace as a podsim step schedule (workloads/schedule.proto), so that a
// workload recorded from PyTorch or generated for ASTRA-sim runs on any podsim system.
//
// Ranks are placed on chips in order (rank r on chip r), or as a rank map says; the system must
// have exactly as many chips as the trace has ranks unless a map is given (unmapped chips then
// idle). The schedule's mesh is one axis, "rank", over all chips; each rank is a program of its
// own, and each node becomes at most one op:
//   * COMP_NODE: a compute op on the chip's compute stream. kRecorded (default): it takes its
//     `duration_micros` as recorded, or, where none is recorded, its `num_ops` FLOPs and
//     `tensor_size` HBM bytes on the chip's calibrated roofline (a large GEMM's efficiency,
//     workloads/compute_model.h). kRoofline: the roofline wherever the node has num_ops or
//     tensor_size. Nodes with `is_cpu_op` true (the PyTorch converter's host-side op tree) and
//     nodes recording neither a duration nor any work take no time.
//   * MEM_LOAD_NODE, MEM_STORE_NODE: `tensor_size` bytes through HBM, on the compute stream
//     (podsim has no separate copy engine).
//   * COMM_COLL_NODE: a collective simulated on the fabric by podsim's algorithms, over the
//     process group `pg_name` names (comm groups), or over every rank when it names none (or
//     names "0" and the comm groups do not define it: ASTRA-sim's convention). Sizes
//     follow ASTRA-sim: `comm_size` is the whole buffer of an all-reduce, reduce-scatter or
//     broadcast, the per-rank input of an all-gather and the per-rank buffer of an all-to-all
//     (podsim's bytes are the whole gathered array: times the group size). BARRIER is a 4-byte
//     all-reduce, REDUCE_SCATTER_BLOCK a reduce-scatter; REDUCE, GATHER and SCATTER are refused.
//     Collectives of one process group run on one stream ("comm <pg_name>", "comm" for all
//     ranks), as NCCL runs a communicator's kernels; different groups overlap.
//   * COMM_SEND_NODE / COMM_RECV_NODE: a point-to-point transfer of `comm_size` bytes from
//     `comm_src` to `comm_dst`, on streams "send" and "recv" (a waiting receive never holds back
//     a send); sends and receives between the same two ranks with the same `comm_tag` pair up in
//     order.
//   * METADATA_NODE: no op (its dependencies pass through to its dependents).
// `data_deps` are dependencies; `ctrl_deps` too only when asked (the PyTorch converter records
// the host op tree there). The ops of a rank are listed in dependency order, the lowest node id
// first among those whose dependencies are met (ASTRA-sim issues ready nodes in ascending id
// order), and each stream runs its ops in that order. Nodes that podsim itself wrote
// (chakra_export.h) carry `podsim_*` attributes and come back as the ops they were.

#ifndef PODSIM_INTEROP_CHAKRA_IMPORT_H_
#define PODSIM_INTEROP_CHAKRA_IMPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "interop/chakra_file.h"
#include "interop/comm_groups.h"
#include "schedule.pb.h"
#include "sim/status.h"
#include "topology/system.h"

namespace podsim::interop {

enum class ChakraCompute { kRecorded, kRoofline };

struct ChakraImportOptions {
  bool ctrl_deps = false;
  ChakraCompute compute = ChakraCompute::kRecorded;
  std::vector<int64_t> rank_chips;  // Chip of each rank; empty: rank r on chip r.
  std::string source;               // What the trace is (its prefix), for the description.
};

// What the import did, for the report.
struct ChakraImportSummary {
  int ranks = 0;
  uint64_t nodes = 0;
  uint64_t ops = 0;
  uint64_t cpu_nodes = 0;    // is_cpu_op: no time.
  uint64_t empty_nodes = 0;  // Compute nodes recording neither a duration nor work.
  uint64_t metadata_nodes = 0;
  uint64_t recorded = 0;  // Compute ops at their recorded duration.
  uint64_t roofline = 0;  // Compute ops on the roofline.
  uint64_t collectives = 0;
  uint64_t sends = 0;
  // Sends of shifts podsim wrote (kPodsimShift): their receives are the shifts' ops.
  uint64_t shift_sends = 0;
};

struct ChakraImport {
  schedule::Schedule schedule;
  ChakraImportSummary summary;
};

// Errors (InvalidArgument) name the rank, the node id and name, and what is wrong: unknown node
// types and collective types, dependencies on nodes the rank does not have, dependency cycles,
// process groups the comm groups do not define or that the rank is not in, sends without their
// receive, a rank count that does not match the system.
sim::StatusOr<ChakraImport> ImportChakra(const topology::System& system,
                                         const std::vector<ChakraRankTrace>& ranks,
                                         const CommGroups& groups,
                                         const ChakraImportOptions& options = {});

}  // namespace podsim::interop

#endif  // PODSIM_INTEROP_CHAKRA_IMPORT_H_
