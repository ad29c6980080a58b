#include "collectives/infiniband_sharp.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>

#include "collectives/hierarchical.h"
#include "collectives/in_switch_reduction.h"
#include "collectives/phased_collective.h"
#include "collectives/sequential_collective.h"
#include "collectives/switch_tree_reduction.h"

namespace podsim::collectives {

sim::StatusOr<std::unique_ptr<Collective>> MakeInfinibandSharp(
    TransferExecutor* executor, const topology::Fabric& fabric,
    const std::vector<topology::VertexId>& group, CollectiveOp op, double bytes, uint32_t pieces,
    double chunk_bytes, uint32_t max_chunks, const NodeSwitchesFn& node_switches) {
  const topology::GpuLayout* gpu = fabric.gpu();
  if (gpu == nullptr || gpu->levels < 2) {
    return sim::Status::InvalidArgument(
        "--algorithm in-switch: InfiniBand SHARP needs GPU nodes on a fat tree (like h100:64)");
  }
  PODSIM_ASSIGN_OR_RETURN(NodesAndRails split, SplitByNode(fabric, group, "in-switch"));
  const size_t g = split.rails.size();
  const std::vector<std::vector<topology::VertexId>>& nodes = split.nodes;
  const std::vector<std::vector<topology::VertexId>>& rails = split.rails;
  // A rail under one leaf reduces in that leaf; a rail over several leaves (several scalable
  // units) in a tree through the spines of its pod (switch_tree_reduction.h), all-reduce only.
  const bool one_leaf = std::all_of(rails.begin(), rails.end(), [&](const auto& rail) {
    return std::all_of(rail.begin(), rail.end(), [&](topology::VertexId chip) {
      return gpu->LeafOf(chip) == gpu->LeafOf(rail.front());
    });
  });
  if (!one_leaf && op != CollectiveOp::kAllReduce) {
    return sim::Status::InvalidArgument(
        "--algorithm in-switch: the group spans several scalable units, where podsim models "
        "SHARP's spine aggregation for all-reduce only (use hierarchical)");
  }
  const int pod = gpu->PodOfSu(gpu->SuOfNode(gpu->NodeOf(group.front())));
  for (topology::VertexId chip : group) {
    if (!one_leaf && gpu->PodOfSu(gpu->SuOfNode(gpu->NodeOf(chip))) != pod) {
      return sim::Status::InvalidArgument(
          "--algorithm in-switch: the group spans several pods; SHARP aggregation in the core "
          "switches is not modelled (use hierarchical)");
    }
  }

  // Each piece runs every stage on its bytes / pieces; the switches cut a piece's array into
  // chunks, at most max_chunks a piece. With one rank per node there is nothing to reduce or
  // gather inside a node: the leaves' stage alone, in one piece of the same chunks in all.
  const bool node_stages = g > 1;
  if (!node_stages) {
    max_chunks *= pieces;
    pieces = 1;
  }
  const double node_shard = bytes / pieces / static_cast<double>(g);
  const double rail_bytes = node_shard;  // The array each rail reduces or gathers across nodes.
  const uint32_t chunks = static_cast<uint32_t>(
      std::clamp(std::ceil(rail_bytes / chunk_bytes), 1.0, static_cast<double>(max_chunks)));
  std::vector<topology::VertexId> members;
  for (const auto& ranks : nodes) members.insert(members.end(), ranks.begin(), ranks.end());
  // Each node's NVSwitches reduce (NVLS), their resources made once and shared by the pieces;
  // without them a ring over each node's ranks.
  std::vector<std::vector<ReductionSwitch>> switches;
  if (node_switches && node_stages) {
    for (const auto& ranks : nodes) {
      PODSIM_ASSIGN_OR_RETURN(std::vector<ReductionSwitch> node, node_switches(ranks));
      switches.push_back(std::move(node));
    }
  }
  const uint32_t node_chunks =
      static_cast<uint32_t>(std::clamp(std::ceil(node_shard * static_cast<double>(g) / chunk_bytes),
                                       1.0, static_cast<double>(max_chunks)));
  auto in_node = [&](CollectiveOp node_op) {
    SequentialCollective::Stage stage;
    if (!switches.empty()) {
      for (const std::vector<ReductionSwitch>& node : switches) {
        stage.push_back(std::make_unique<InSwitchReduction>(
            executor, node_op, static_cast<uint32_t>(g), node, node_shard * g, node_chunks));
      }
      return stage;
    }
    // Reduce-scatter and all-gather rings move the same shards of V/g (shard_forwarding.h), so
    // one builder serves both.
    ExchangePiece piece;
    piece.phases.push_back(
        ExchangePhase{ForwardingPattern::kUnidirectionalRing, nodes, node_shard});
    stage.push_back(
        std::make_unique<PhasedCollective>(executor, members, std::vector<ExchangePiece>{piece}));
    return stage;
  };
  auto route = [&](std::initializer_list<topology::LinkIndex> links) {
    SwitchRoute r;
    for (topology::LinkIndex link : links) {
      r.links.push_back(sim::ResourceId{link});
      r.latency += fabric.link(link).latency;
    }
    return r;
  };
  // Every rail's tree: its members grouped by leaf, each leaf reaching every spine of the pod.
  auto through_tree = [&]() {
    SequentialCollective::Stage stage;
    const size_t spines = static_cast<size_t>(gpu->spines_per_pod);
    for (const auto& rail : rails) {
      std::map<uint32_t, TreeLeaf> by_leaf;  // Ordered by leaf: deterministic.
      for (topology::VertexId chip : rail) {
        TreeLeaf& leaf = by_leaf[gpu->LeafOf(chip)];
        leaf.member_up.push_back(route({gpu->gpu_to_nic[chip], gpu->nic_to_leaf[chip]}));
        leaf.member_down.push_back(route({gpu->leaf_to_nic[chip], gpu->nic_to_gpu[chip]}));
      }
      std::vector<TreeLeaf> leaves;
      for (auto& [index, leaf] : by_leaf) {
        for (size_t j = 0; j < spines; ++j) {
          leaf.root_up.push_back(route({gpu->leaf_to_spine[index * spines + j]}));
          leaf.root_down.push_back(route({gpu->spine_to_leaf[index * spines + j]}));
        }
        leaves.push_back(std::move(leaf));
      }
      stage.push_back(
          std::make_unique<SwitchTreeReduction>(executor, std::move(leaves), rail_bytes, chunks));
    }
    return stage;
  };
  auto through_leaves = [&](CollectiveOp rail_op) {
    if (!one_leaf) return through_tree();
    SequentialCollective::Stage stage;
    for (const auto& rail : rails) {
      ReductionSwitch leaf;
      for (topology::VertexId chip : rail) {
        const topology::LinkIndex up[] = {gpu->gpu_to_nic[chip], gpu->nic_to_leaf[chip]};
        const topology::LinkIndex down[] = {gpu->leaf_to_nic[chip], gpu->nic_to_gpu[chip]};
        leaf.up.push_back({sim::ResourceId{up[0]}, sim::ResourceId{up[1]}});
        leaf.down.push_back({sim::ResourceId{down[0]}, sim::ResourceId{down[1]}});
        leaf.up_latency.push_back(fabric.link(up[0]).latency + fabric.link(up[1]).latency);
        leaf.down_latency.push_back(fabric.link(down[0]).latency + fabric.link(down[1]).latency);
      }
      stage.push_back(std::make_unique<InSwitchReduction>(
          executor, rail_op, static_cast<uint32_t>(rail.size()),
          std::vector<ReductionSwitch>{std::move(leaf)}, rail_bytes, chunks));
    }
    return stage;
  };

  std::vector<SequentialCollective::Piece> all(pieces);
  for (SequentialCollective::Piece& stages : all) {
    if (op == CollectiveOp::kAllReduce || op == CollectiveOp::kReduceScatter) {
      if (node_stages) stages.push_back(in_node(CollectiveOp::kReduceScatter));
      stages.push_back(through_leaves(op));
    }
    if (op == CollectiveOp::kAllReduce && node_stages) {
      stages.push_back(in_node(CollectiveOp::kAllGather));
    }
    if (op == CollectiveOp::kAllGather) {
      stages.push_back(through_leaves(op));
      if (node_stages) stages.push_back(in_node(CollectiveOp::kAllGather));
    }
  }
  return std::unique_ptr<Collective>(std::make_unique<SequentialCollective>(std::move(all)));
}

}  // namespace podsim::collectives
