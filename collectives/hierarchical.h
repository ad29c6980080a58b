// Hierarchical collectives on GPU clusters: NVLink inside the node, InfiniBand across nodes
// (NCCL's "NVLink then network" decomposition; formulas.md 2.7 "Cross-node AG/RS" and
// "AllReduce_X over an array sharded on inner axis Y").
//
// For a group whose ranks fill several nodes with the same number g of ranks each:
//   all-reduce      = reduce-scatter in each node (ring over the node's g ranks, shards V/g)
//                   + all-reduce across nodes among the ranks with the same local index, all g
//                     rails in parallel, each on V/g (ring over the m nodes, shards V/(g m))
//                   + all-gather in each node.
//   reduce-scatter  = the first two reduce-scatter halves; all-gather the mirror image.
// Each rail's cross-node ring uses that GPU's own NIC, so the node's 8 NICs work at once and the
// cross-node part costs about (V/g) / W_nic = V / W_node_egress, while a single ring through the
// nodes crosses each node boundary through one NIC. The array is cut into `pieces` equal pieces
// that the caller pipelines (phased_collective.h), so the NVLink phases of one piece overlap the
// InfiniBand phase of the next and the whole costs about its slowest stage (book case G17:
// max(B / W_node, B (M-1) / (M W_nic_node))) rather than the sum of the stages.

#ifndef PODSIM_COLLECTIVES_HIERARCHICAL_H_
#define PODSIM_COLLECTIVES_HIERARCHICAL_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "collectives/collective_op.h"
#include "collectives/phased_collective.h"
#include "sim/status.h"
#include "topology/fabric.h"

namespace podsim::collectives {

// A group's ranks per node (nodes in order, each node's ranks in device order, as NCCL orders
// its rings whatever the ranks' order in the group) and per rail (the ranks at the same place in
// their node's device order, one per node: GPU 3 of one node pairs with GPU 3 of the next where
// both hold the same GPUs), for algorithms that treat NVLink nodes and the network apart. Fails
// with InvalidArgument, naming `algorithm`, unless every node holds equally many ranks of the group
// and there are at least two nodes. REQUIRES: fabric.gpu() != nullptr.
struct NodesAndRails {
  std::vector<std::vector<topology::VertexId>> nodes;
  std::vector<std::vector<topology::VertexId>> rails;
};
sim::StatusOr<NodesAndRails> SplitByNode(const topology::Fabric& fabric,
                                         const std::vector<topology::VertexId>& group,
                                         std::string_view algorithm);

// Fails with InvalidArgument unless the fabric is a GPU system and `group` spans at least two
// nodes with equally many ranks in each. REQUIRES: op is all-gather, reduce-scatter or all-reduce.
sim::StatusOr<std::vector<ExchangePiece>> HierarchicalPieces(
    const topology::Fabric& fabric, const std::vector<topology::VertexId>& group, CollectiveOp op,
    double bytes, uint32_t pieces);

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_HIERARCHICAL_H_
