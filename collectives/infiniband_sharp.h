// InfiniBand SHARP across nodes: the rail leaf switch (and above it the spines) reduce, as NCCL's
// CollNet / NVLS+SHARP.
//
// For a group filling several nodes with g ranks each, all under one scalable unit (so the ranks
// with the same local index, one rail, all hang off one rail-optimised leaf):
//   all-reduce      = reduce-scatter inside each node (NVLink SHARP in the node's NVSwitches,
//                     NCCL's NVLS, where the generation has it; else a ring over NVLink, shards
//                     V/g)
//                   + per rail, an all-reduce of V/g in the rail's leaf switch: every member sends
//                     its V/g up over its NIC, the leaf reduces and multicasts the result down
//                     (in_switch_reduction.h), all g rails at once
//                   + all-gather inside each node.
//   reduce-scatter  = the in-node reduce-scatter, then a reduce-scatter in the leaf.
//   all-gather      = an all-gather through the leaf, then the in-node all-gather.
// The cross-node part moves V/g per NIC each way instead of a ring's 2 (m-1)/m V/g (formulas.md
// "SHARP AllReduce": B/W instead of 2B/W). The array is cut into `pieces` that run the stages
// one after another, each stage on one piece at a time, so the NVLink stages of one piece overlap
// the leaf stage of the next (sequential_collective.h, NCCL's pipelining through its channel
// buffers) and a large all-reduce costs about its slowest stage. A group spanning several scalable
// units of one pod puts each rail on several leaves: its all-reduce then runs in SHARP's
// aggregation tree, the leaves reducing their members and the pod's spines reducing the leaves
// (switch_tree_reduction.h), so the node still egresses all V bytes, V/g per NIC (book case G19).
// Reduce-scatter and all-gather across scalable units, and groups across pods (core aggregation),
// are not modelled: they get an error.

#ifndef PODSIM_COLLECTIVES_INFINIBAND_SHARP_H_
#define PODSIM_COLLECTIVES_INFINIBAND_SHARP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "collectives/collective.h"
#include "collectives/collective_op.h"
#include "collectives/in_switch_reduction.h"
#include "collectives/transfer_executor.h"
#include "sim/status.h"
#include "topology/fabric.h"

namespace podsim::collectives {

// The reducing NVSwitches of one node's ranks (in_switch_reduction.h), their resources added to
// the model once per call; empty function: the nodes have no NVLS and reduce in rings.
using NodeSwitchesFn = std::function<sim::StatusOr<std::vector<ReductionSwitch>>(
    const std::vector<topology::VertexId>& ranks)>;

// The leaf and node reductions pipeline a piece's array in chunks of `chunk_bytes` (at most
// `max_chunks` over all pieces), as in_switch_reduction.h. REQUIRES: op is all-gather,
// reduce-scatter or all-reduce; pieces >= 1. Fails with InvalidArgument naming the reason when the
// group does not fit the description above.
sim::StatusOr<std::unique_ptr<Collective>> MakeInfinibandSharp(
    TransferExecutor* executor, const topology::Fabric& fabric,
    const std::vector<topology::VertexId>& group, CollectiveOp op, double bytes, uint32_t pieces,
    double chunk_bytes, uint32_t max_chunks, const NodeSwitchesFn& node_switches);

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_INFINIBAND_SHARP_H_
