#include "collectives/hierarchical.h"

#include <map>
#include <string>

namespace podsim::collectives {

sim::StatusOr<std::vector<ExchangePiece>> HierarchicalPieces(
    const topology::Fabric& fabric, const std::vector<topology::VertexId>& group, CollectiveOp op,
    double bytes) {
  if (fabric.gpu() == nullptr) {
    return sim::Status::InvalidArgument(
        "--algorithm hierarchical: needs a GPU system with NVLink nodes (like h100:16)");
  }
  std::map<int, std::vector<topology::VertexId>> by_node;  // Ordered by node: deterministic.
  for (topology::VertexId chip : group) by_node[fabric.NodeOf(chip)].push_back(chip);
  const size_t g = by_node.begin()->second.size();
  for (const auto& [node, ranks] : by_node) {
    if (ranks.size() != g) {
      return sim::Status::InvalidArgument(
          "--algorithm hierarchical: every node must hold as many ranks of the group (node " +
          std::to_string(node) + " holds " + std::to_string(ranks.size()) + ", expected " +
          std::to_string(g) + ")");
    }
  }
  const size_t m = by_node.size();
  if (m < 2) {
    return sim::Status::InvalidArgument(
        "--algorithm hierarchical: the group lies in one node; use ring or in-switch");
  }
  std::vector<std::vector<topology::VertexId>> nodes, rails(g);
  for (const auto& [node, ranks] : by_node) {
    nodes.push_back(ranks);
    for (size_t i = 0; i < g; ++i) rails[i].push_back(ranks[i]);
  }
  const ForwardingPattern ring = ForwardingPattern::kUnidirectionalRing;
  const double in_node_shard = bytes / static_cast<double>(g);
  const double rail_shard = in_node_shard / static_cast<double>(m);
  ExchangePiece piece;
  if (op == CollectiveOp::kReduceScatter || op == CollectiveOp::kAllReduce) {
    piece.phases.push_back(ExchangePhase{ring, nodes, in_node_shard});
    piece.phases.push_back(ExchangePhase{ring, rails, rail_shard});
  }
  if (op == CollectiveOp::kAllGather || op == CollectiveOp::kAllReduce) {
    piece.phases.push_back(ExchangePhase{ring, rails, rail_shard});
    piece.phases.push_back(ExchangePhase{ring, nodes, in_node_shard});
  }
  std::vector<ExchangePiece> pieces;
  pieces.push_back(std::move(piece));
  return pieces;
}

}  // namespace podsim::collectives
