#include "collectives/hierarchical.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace podsim::collectives {

namespace {

// Ring steps are cut into chunks of at least 128 KiB, at most 8 (the sends NCCL keeps in flight
// per channel): 8 chunks of 128 KiB take 21 us at a 50 GB/s NIC, far more than a few us of route
// latency, so the latency hides behind the bytes of the chunks in flight.
constexpr double kChunkBytes = 128 << 10;
constexpr uint32_t kMaxChunks = 8;

uint32_t Chunks(double shard_bytes) {
  return static_cast<uint32_t>(
      std::clamp(std::ceil(shard_bytes / kChunkBytes), 1.0, static_cast<double>(kMaxChunks)));
}

}  // namespace

sim::StatusOr<NodesAndRails> SplitByNode(const topology::Fabric& fabric,
                                         const std::vector<topology::VertexId>& group,
                                         std::string_view algorithm) {
  std::map<int, std::vector<topology::VertexId>> by_node;  // Ordered by node: deterministic.
  for (topology::VertexId chip : group) by_node[fabric.NodeOf(chip)].push_back(chip);
  const size_t g = by_node.begin()->second.size();
  NodesAndRails split;
  split.rails.resize(g);
  for (auto& [node, ranks] : by_node) {
    // Each node's ranks in device order, whatever their order in the group: NCCL's search of
    // the intra-node ring tries the GPUs' PCI order first (src/graph/search.cc,
    // ncclTopoSearchRec, FORCED_ORDER_PCI), which an NVSwitch node accepts, and joins the nodes
    // in the order of its node list. Every order takes the same time there (each pair of GPUs
    // reaches every NVSwitch alike); this one is kept by the slot rotations
    // (collectives/fabric_symmetry.h).
    std::sort(ranks.begin(), ranks.end());
    if (ranks.size() != g) {
      return sim::Status::InvalidArgument(
          "--algorithm " + std::string(algorithm) +
          ": every node must hold as many ranks of the group (node " + std::to_string(node) +
          " holds " + std::to_string(ranks.size()) + ", expected " + std::to_string(g) + ")");
    }
    split.nodes.push_back(ranks);
    for (size_t i = 0; i < g; ++i) split.rails[i].push_back(ranks[i]);
  }
  if (split.nodes.size() < 2) {
    return sim::Status::InvalidArgument("--algorithm " + std::string(algorithm) +
                                        ": the group lies in one node; use ring or in-switch");
  }
  return split;
}

sim::StatusOr<std::vector<ExchangePiece>> HierarchicalPieces(
    const topology::Fabric& fabric, const std::vector<topology::VertexId>& group, CollectiveOp op,
    double bytes, uint32_t pieces) {
  if (fabric.gpu() == nullptr) {
    return sim::Status::InvalidArgument(
        "--algorithm hierarchical: needs a GPU system with NVLink nodes (like h100:16)");
  }
  PODSIM_ASSIGN_OR_RETURN(NodesAndRails split, SplitByNode(fabric, group, "hierarchical"));
  const size_t g = split.rails.size();
  const size_t m = split.nodes.size();
  const std::vector<std::vector<topology::VertexId>>& nodes = split.nodes;
  const std::vector<std::vector<topology::VertexId>>& rails = split.rails;
  const ForwardingPattern ring = ForwardingPattern::kUnidirectionalRing;
  const double in_node_shard = bytes / pieces / static_cast<double>(g);
  const double rail_shard = in_node_shard / static_cast<double>(m);
  const ExchangePhase node_phase{ring, nodes, in_node_shard, Chunks(in_node_shard)};
  const ExchangePhase rail_phase{ring, rails, rail_shard, Chunks(rail_shard)};
  ExchangePiece piece;
  if (op == CollectiveOp::kReduceScatter || op == CollectiveOp::kAllReduce) {
    piece.phases.push_back(node_phase);
    piece.phases.push_back(rail_phase);
  }
  if (op == CollectiveOp::kAllGather || op == CollectiveOp::kAllReduce) {
    piece.phases.push_back(rail_phase);
    piece.phases.push_back(node_phase);
  }
  return std::vector<ExchangePiece>(pieces, piece);
}

}  // namespace podsim::collectives
