#include "collectives/double_binary_tree.h"

#include <algorithm>
#include <utility>

#include "sim/check.h"

namespace podsim::collectives {

std::vector<int> BinaryTreeParents(int n) {
  PODSIM_CHECK(n >= 1) << "a tree needs a rank";
  // NCCL's ncclGetBtree (src/graph/trees.cc): position 0 is the root; the parent of r is r with
  // its lowest set bit b cleared and bit 2b set, or just b cleared when that is out of range.
  std::vector<int> parents(n, -1);
  for (int r = 1; r < n; ++r) {
    const int bit = r & -r;
    int up = (r ^ bit) | (bit << 1);
    if (up >= n) up = r ^ bit;
    parents[r] = up;
  }
  return parents;
}

std::vector<int> ComplementaryTreeParents(int n) {
  const std::vector<int> first = BinaryTreeParents(n);
  // NCCL (src/graph/trees.cc, ncclGetDtree): shift by one for an even count, mirror for odd.
  auto map = [n](int position) { return n % 2 == 0 ? (position + 1) % n : n - 1 - position; };
  std::vector<int> second(n, -1);
  for (int p = 0; p < n; ++p) second[map(p)] = first[p] < 0 ? -1 : map(first[p]);
  return second;
}

std::vector<int> NodeChainTreeParents(int nodes, int ranks_per_node, int tree) {
  PODSIM_CHECK(nodes >= 1 && ranks_per_node >= 1 && (tree == 0 || tree == 1))
      << "a tree of chains needs nodes, ranks per node and tree 0 or 1";
  const int g = ranks_per_node;
  const std::vector<int> first = BinaryTreeParents(nodes);
  // The position each node holds in the binary tree it was mapped from (ComplementaryTreeParents'
  // map, inverted), which decides whether it is its parent's first or second child.
  std::vector<int> source(nodes);
  for (int p = 0; p < nodes; ++p) {
    const int mapped = tree == 0 ? p : nodes % 2 == 0 ? (p + 1) % nodes : nodes - 1 - p;
    source[mapped] = p;
  }
  const std::vector<int> node_parents = tree == 0 ? first : ComplementaryTreeParents(nodes);
  std::vector<int> parents(static_cast<size_t>(nodes) * g, -1);
  for (int k = 0; k < nodes; ++k) {
    for (int i = 1; i < g; ++i) parents[k * g + i] = k * g + i - 1;
    const int up = node_parents[k];
    if (up < 0) continue;
    const bool first_child = source[k] < first[source[k]];
    parents[k * g] = up * g + (first_child && g > 1 ? 1 : 0);
  }
  return parents;
}

DoubleBinaryTree::DoubleBinaryTree(TransferExecutor* executor,
                                   std::vector<std::vector<topology::VertexId>> groups,
                                   double bytes_per_group, uint32_t chunks, int ranks_per_node)
    : executor_(executor), chunk_bytes_(bytes_per_group / 2 / chunks), chunks_(chunks) {
  PODSIM_CHECK(chunks_ >= 1 && ranks_per_node >= 1) << "a tree needs a chunk and a rank per node";
  for (const auto& group : groups) {
    const int n = static_cast<int>(group.size());
    PODSIM_CHECK(n % ranks_per_node == 0)
        << "a group of " << n << " ranks is not " << ranks_per_node << " per node";
    for (int tree = 0; tree < 2; ++tree) {
      const std::vector<int> parents =
          ranks_per_node > 1 ? NodeChainTreeParents(n / ranks_per_node, ranks_per_node, tree)
          : tree == 0        ? BinaryTreeParents(n)
                             : ComplementaryTreeParents(n);
      const int base = static_cast<int>(nodes_.size());
      nodes_.resize(nodes_.size() + n);
      for (int p = 0; p < n; ++p) nodes_[base + p].vertex = group[p];
      for (int p = 0; p < n; ++p) {
        if (parents[p] < 0) continue;
        Node& parent = nodes_[base + parents[p]];
        nodes_[base + p].parent = base + parents[p];
        nodes_[base + p].index_in_parent = static_cast<int>(parent.children.size());
        parent.children.push_back(base + p);
      }
      for (int p = 0; p < n; ++p) {
        Node& node = nodes_[base + p];
        node.received_from_child.assign(node.children.size(), 0);
        node.down_sent.assign(node.children.size(), 0);
        node.down_busy.assign(node.children.size(), false);
        if (node.parent >= 0) pending_ += 2 * static_cast<size_t>(chunks_);  // Up and down.
      }
    }
  }
}

void DoubleBinaryTree::Start(sim::EventHandler on_done) {
  on_done_ = std::move(on_done);
  if (pending_ == 0) {
    executor_->engine()->Schedule(sim::Time::Zero(), std::move(on_done_));
    return;
  }
  for (int i = 0; i < static_cast<int>(nodes_.size()); ++i) TryUp(i);
}

uint32_t DoubleBinaryTree::Reduced(const Node& node) const {
  uint32_t reduced = chunks_;
  for (uint32_t received : node.received_from_child) reduced = std::min(reduced, received);
  return reduced;
}

uint32_t DoubleBinaryTree::DownAvailable(const Node& node) const {
  return node.parent < 0 ? Reduced(node) : node.received_from_parent;
}

void DoubleBinaryTree::TryUp(int i) {
  Node& node = nodes_[i];
  if (node.parent < 0 || node.up_busy || node.up_sent >= chunks_ || Reduced(node) <= node.up_sent)
    return;
  node.up_busy = true;
  executor_->Send(node.vertex, nodes_[node.parent].vertex, chunk_bytes_, [this, i] {
    Node& node = nodes_[i];
    node.up_busy = false;
    ++node.up_sent;
    ++nodes_[node.parent].received_from_child[node.index_in_parent];
    const int parent = node.parent;
    TryUp(parent);
    TryDown(parent);
    TryUp(i);
    Delivered();
  });
}

void DoubleBinaryTree::TryDown(int i) {
  Node& node = nodes_[i];
  const uint32_t available = DownAvailable(node);
  for (size_t k = 0; k < node.children.size(); ++k) {
    if (node.down_busy[k] || node.down_sent[k] >= available) continue;
    node.down_busy[k] = true;
    const int child = node.children[k];
    executor_->Send(node.vertex, nodes_[child].vertex, chunk_bytes_, [this, i, k, child] {
      Node& node = nodes_[i];
      node.down_busy[k] = false;
      ++node.down_sent[k];
      ++nodes_[child].received_from_parent;
      TryDown(child);
      TryDown(i);
      Delivered();
    });
  }
}

void DoubleBinaryTree::Delivered() {
  PODSIM_CHECK(pending_ > 0) << "more tree transfers than expected";
  if (--pending_ == 0) on_done_();
}

}  // namespace podsim::collectives
