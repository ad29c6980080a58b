// DoubleBinaryTree: NCCL's double binary tree all-reduce (Sanders, Speck, Traeff 2009; NCCL 2.4,
// src/graph/trees.cc).
//
// Two binary trees span each group; each carries half of the array, cut into chunks that are
// pipelined: a rank sends chunk c to its parent once chunk c arrived from all its children (reduce
// up), the root starts sending chunk c down as soon as it has it reduced, and every rank forwards
// chunk c to its children as soon as it got it from its parent (broadcast down). The second tree
// is the first shifted by one position when the group is even and mirrored when it is odd, as in
// NCCL, so a
// leaf of one tree is an inner node of the other and every rank's links carry about the same
// load. Each rank sends one chunk at a time on each tree edge (one channel per peer and tree).
// The first tree is NCCL's (ncclGetBtree): the odd positions are its leaves and position 0 its
// root, with one child; depth ceil(log2 n).
//
// Across GPU nodes the trees are NCCL's: a chain through each node's GPUs over NVLink and the two
// binary trees between the nodes (NodeChainTreeParents), so only the node-level edges cross the
// network. NCCL runs several channels whose chains start at different GPUs and NICs; podsim runs
// one, so a large tree all-reduce across nodes leans on one or two NICs per node (the selector
// uses the tree only for small ones).
//
// Depth log2(n) instead of the ring's n-1 steps: the latency advantage for small all-reduces
// (formulas.md 2.7: "a tree of log N hops has the same bandwidth cost but lower latency").

#ifndef PODSIM_COLLECTIVES_DOUBLE_BINARY_TREE_H_
#define PODSIM_COLLECTIVES_DOUBLE_BINARY_TREE_H_

#include <cstdint>
#include <vector>

#include "collectives/collective.h"
#include "collectives/transfer_executor.h"
#include "topology/fabric.h"

namespace podsim::collectives {

// Parent of each position in NCCL's binary tree over positions 0..n-1 (-1 for the root), and
// the same for its complementary second tree. REQUIRES: n >= 1.
std::vector<int> BinaryTreeParents(int n);
std::vector<int> ComplementaryTreeParents(int n);

// NCCL's tree `tree` (0 or 1) for a group of GPUs laid out node by node, `ranks_per_node`
// consecutive positions per node (NCCL src/graph/connect.cc, ncclTopoPreset and connectTrees,
// with the BALANCED_TREE pattern NCCL's tree search tries first, src/graph/topo.h). Inside a node
// the ranks form a chain: local rank i's parent is local rank i-1, local rank 0 is the node's head.
// Between nodes the heads follow the node-level tree (BinaryTreeParents or
// ComplementaryTreeParents over the node positions); a head attaches to its parent node's second
// local rank when it is that node's first child (a lower position in the binary tree it was mapped
// from, NCCL's parentChildType 0) and to its head otherwise, so a node's NIC traffic is spread over
// two GPUs. With one rank per node this is the node-level tree itself. REQUIRES: nodes >= 1,
// ranks_per_node >= 1, tree is 0 or 1.
std::vector<int> NodeChainTreeParents(int nodes, int ranks_per_node, int tree);

class DoubleBinaryTree : public Collective {
 public:
  // All-reduce of `bytes_per_group` over every group at once, each tree's half in `chunks`. With
  // ranks_per_node > 1 each group is laid out node by node and runs NCCL's trees of chains
  // (NodeChainTreeParents); with 1 the trees span the ranks directly. REQUIRES: chunks >= 1;
  // ranks_per_node divides every group's size.
  DoubleBinaryTree(TransferExecutor* executor, std::vector<std::vector<topology::VertexId>> groups,
                   double bytes_per_group, uint32_t chunks, int ranks_per_node = 1);
  void Start(sim::EventHandler on_done) override;

 private:
  struct Node {
    int parent = -1;            // Index into nodes_, -1 for a root.
    int index_in_parent = 0;    // Which child of its parent this node is.
    std::vector<int> children;  // Indices into nodes_.
    std::vector<uint32_t> received_from_child;
    uint32_t up_sent = 0;
    bool up_busy = false;
    uint32_t received_from_parent = 0;
    std::vector<uint32_t> down_sent;
    std::vector<bool> down_busy;
    topology::VertexId vertex = 0;
  };
  uint32_t Reduced(const Node& node) const;  // Chunks reduced over the node's subtree.
  uint32_t DownAvailable(const Node& node) const;
  void TryUp(int node);
  void TryDown(int node);
  void Delivered();

  TransferExecutor* executor_;
  double chunk_bytes_;
  uint32_t chunks_;
  std::vector<Node> nodes_;  // One per (group, tree, rank).
  size_t pending_ = 0;
  sim::EventHandler on_done_;
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_DOUBLE_BINARY_TREE_H_
