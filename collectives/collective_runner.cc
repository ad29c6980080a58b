#include "collectives/collective_runner.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <utility>

#include "collectives/collective.h"
#include "collectives/direct_collectives.h"
#include "collectives/phased_collective.h"
#include "collectives/transfer_executor.h"
#include "sim/engine.h"
#include "sim/flow_model.h"

namespace podsim::collectives {

namespace {

using topology::Fabric;
using topology::VertexId;
using Lines = std::vector<std::vector<VertexId>>;

// Broadcast chunking: NCCL pipelines a broadcast in chunks; podsim cuts the array into pieces of
// at most 1 MiB, and never more than 64, so a large broadcast approaches V / W while a small one
// is not split into messages smaller than the link can use.
constexpr double kBroadcastChunkBytes = 1 << 20;
constexpr uint32_t kMaxBroadcastChunks = 64;

struct GroupPlan {
  Lines groups;
  std::vector<int> axes;  // Torus axes spanned that are longer than 1; empty off tori.
  int group_size = 0;
};

std::string Join(const std::vector<std::string>& names) {
  std::string joined;
  for (const std::string& name : names) joined += (joined.empty() ? "" : ", ") + name;
  return joined;
}

sim::StatusOr<GroupPlan> MakeGroups(const Fabric& fabric, const std::vector<std::string>& names) {
  GroupPlan plan;
  if (fabric.torus() == nullptr) {
    if (!names.empty()) {
      return sim::Status::InvalidArgument(
          "--axes: this system has no torus axes; collectives on it span all chips");
    }
    plan.groups.emplace_back();
    for (VertexId chip = 0; chip < fabric.chip_count(); ++chip) plan.groups[0].push_back(chip);
    plan.group_size = static_cast<int>(fabric.chip_count());
    return plan;
  }
  const std::vector<std::string> axis_names = fabric.AxisNames();
  const std::vector<int>& shape = fabric.shape();
  std::vector<bool> spanned(shape.size(), false);
  if (names.empty()) {
    for (size_t a = 0; a < shape.size(); ++a) spanned[a] = true;
  } else {
    for (const std::string& name : names) {
      auto it = std::find(axis_names.begin(), axis_names.end(), name);
      if (it == axis_names.end()) {
        return sim::Status::InvalidArgument("--axes: the system has no axis '" + name +
                                            "' (its axes are " + Join(axis_names) + ")");
      }
      size_t a = static_cast<size_t>(it - axis_names.begin());
      if (spanned[a]) return sim::Status::InvalidArgument("--axes: axis '" + name + "' twice");
      spanned[a] = true;
    }
  }
  plan.group_size = 1;
  for (size_t a = 0; a < shape.size(); ++a) {
    if (!spanned[a]) continue;
    plan.group_size *= shape[a];
    if (shape[a] > 1) plan.axes.push_back(static_cast<int>(a));
  }
  // Chips that agree on every coordinate outside the spanned axes (and on the slice) share a
  // group; groups are numbered by those coordinates in chip order.
  std::vector<int64_t> group_of_key;
  std::vector<std::pair<int64_t, VertexId>> keyed;
  for (VertexId chip = 0; chip < fabric.chip_count(); ++chip) {
    std::vector<int> coord = fabric.ChipCoord(chip);
    int64_t key = fabric.SliceOf(chip);
    for (size_t a = 0; a < shape.size(); ++a) {
      key = key * shape[a] + (spanned[a] ? 0 : coord[a]);
    }
    keyed.emplace_back(key, chip);
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < keyed.size(); ++i) {
    if (i == 0 || keyed[i].first != keyed[i - 1].first) plan.groups.emplace_back();
    plan.groups.back().push_back(keyed[i].second);
  }
  return plan;
}

// Every line of chips along `axis` (other coordinates fixed), in axis order.
Lines LinesAlong(const Fabric& fabric, int axis) {
  Lines lines;
  const int length = fabric.shape()[axis];
  for (VertexId chip = 0; chip < fabric.chip_count(); ++chip) {
    std::vector<int> coord = fabric.ChipCoord(chip);
    if (coord[axis] != 0) continue;
    std::vector<VertexId> line;
    for (int i = 0; i < length; ++i) {
      coord[axis] = i;
      line.push_back(fabric.ChipAt(coord, fabric.SliceOf(chip)));
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

ForwardingPattern AxisPattern(const Fabric& fabric, int axis) {
  return fabric.Wraps(axis) ? ForwardingPattern::kBidirectionalRing : ForwardingPattern::kLine;
}

// Reduce-scatter phases shrink the per-rank array by each axis length; all-gather phases grow
// it. `size` is the per-rank bytes before the phases and is updated.
void AppendPhases(bool reduce, const std::vector<ForwardingPattern>& patterns,
                  const std::vector<Lines>& lines, const std::vector<int>& lengths, double* size,
                  ExchangePiece* piece) {
  for (size_t i = 0; i < lines.size(); ++i) {
    double shard = reduce ? *size / lengths[i] : *size;
    piece->phases.push_back(ExchangePhase{patterns[i], lines[i], shard});
    *size = reduce ? shard : *size * lengths[i];
  }
}

// One piece per spanned axis, each visiting the axes in a rotated order (formulas.md,
// multi-axis AllGather V / (W * axes)). With one axis this is a single ring or line per group.
std::vector<ExchangePiece> MultiAxisPieces(const Fabric& fabric, const GroupPlan& plan,
                                           CollectiveOp op, double bytes) {
  const size_t k = std::max<size_t>(plan.axes.size(), 1);
  std::vector<ExchangePiece> pieces;
  for (size_t j = 0; j < k; ++j) {
    std::vector<ForwardingPattern> patterns;
    std::vector<Lines> lines;
    std::vector<int> lengths;
    for (size_t p = 0; p < plan.axes.size(); ++p) {
      int axis = plan.axes[(j + p) % plan.axes.size()];
      patterns.push_back(AxisPattern(fabric, axis));
      lines.push_back(LinesAlong(fabric, axis));
      lengths.push_back(fabric.shape()[axis]);
    }
    ExchangePiece piece;
    const double piece_bytes = bytes / static_cast<double>(k);
    if (op == CollectiveOp::kAllGather) {
      double size = piece_bytes / plan.group_size;
      AppendPhases(false, patterns, lines, lengths, &size, &piece);
    } else {
      double size = piece_bytes;
      AppendPhases(true, patterns, lines, lengths, &size, &piece);
      if (op == CollectiveOp::kAllReduce) {
        std::reverse(patterns.begin(), patterns.end());
        std::reverse(lines.begin(), lines.end());
        std::reverse(lengths.begin(), lengths.end());
        AppendPhases(false, patterns, lines, lengths, &size, &piece);
      }
    }
    if (piece.phases.empty()) {  // Groups of one chip: nothing moves.
      Lines singletons;
      for (const auto& group : plan.groups) singletons.push_back(group);
      piece.phases.push_back(ExchangePhase{ForwardingPattern::kUnidirectionalRing, singletons, 0});
    }
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

// A ring (or line) over each group in group order: reduce-scatter and all-gather are one phase
// each with shards of V/n, all-reduce is both.
std::vector<ExchangePiece> GroupRingPieces(const GroupPlan& plan, CollectiveOp op, double bytes,
                                           ForwardingPattern pattern) {
  ExchangePiece piece;
  const double shard = bytes / plan.group_size;
  if (op == CollectiveOp::kReduceScatter || op == CollectiveOp::kAllReduce) {
    piece.phases.push_back(ExchangePhase{pattern, plan.groups, shard});
  }
  if (op == CollectiveOp::kAllGather || op == CollectiveOp::kAllReduce) {
    piece.phases.push_back(ExchangePhase{pattern, plan.groups, shard});
  }
  return {std::move(piece)};
}

std::vector<VertexId> Members(const GroupPlan& plan) {
  std::vector<VertexId> members;
  for (const auto& group : plan.groups) members.insert(members.end(), group.begin(), group.end());
  return members;
}

struct Choice {
  std::string algorithm;
  std::string reason;
};

Choice Select(const Fabric& fabric, const GroupPlan& plan, CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kPointToPoint:
      return {"p2p", "one transfer"};
    case CollectiveOp::kBroadcast:
      return {"chain", "pipelined chain, as NCCL's ring broadcast"};
    case CollectiveOp::kAllToAll:
      return {"direct", "every rank sends to every other at once over shortest routes"};
    default:
      break;
  }
  if (fabric.torus() != nullptr) {
    if (plan.axes.size() > 1) {
      return {"multi-axis",
              "torus collective over " + std::to_string(plan.axes.size()) +
                  " axes at once, rings on wrapped axes and lines elsewhere (XLA on TPU)"};
    }
    if (plan.axes.size() == 1 && !fabric.Wraps(plan.axes[0])) {
      return {"line", "the axis has no wraparound link"};
    }
    return {"bidi-ring", "the axis wraps: shards travel both ways (XLA on TPU)"};
  }
  return {"ring", "switched fabric: ring in rank order, striped over parallel links (NCCL)"};
}

sim::Status CheckAlgorithm(const std::string& algorithm, CollectiveOp op, const Fabric& fabric) {
  const std::vector<std::string>& names = AlgorithmNames();
  if (std::find(names.begin(), names.end(), algorithm) == names.end()) {
    return sim::Status::NotFound("--algorithm: unknown algorithm '" + algorithm +
                                 "'; expected one of " + Join(names));
  }
  auto mismatch = [&](const char* what) {
    return sim::Status::InvalidArgument("--algorithm " + algorithm + " " + what + " (got " +
                                        std::string(CollectiveOpName(op)) + ")");
  };
  const bool reduction = op == CollectiveOp::kAllGather || op == CollectiveOp::kReduceScatter ||
                         op == CollectiveOp::kAllReduce;
  if ((algorithm == "ring" || algorithm == "bidi-ring" || algorithm == "line" ||
       algorithm == "multi-axis") &&
      !reduction) {
    return mismatch("runs all-gather, reduce-scatter and all-reduce only");
  }
  if (algorithm == "multi-axis" && fabric.torus() == nullptr) {
    return sim::Status::InvalidArgument("--algorithm multi-axis needs a torus system");
  }
  if (algorithm == "direct" && op != CollectiveOp::kAllToAll) return mismatch("is all-to-all only");
  if (algorithm == "chain" && op != CollectiveOp::kBroadcast) return mismatch("is broadcast only");
  if (algorithm == "p2p" && op != CollectiveOp::kPointToPoint) return mismatch("is p2p only");
  if (op == CollectiveOp::kPointToPoint && algorithm != "p2p") return mismatch("cannot run p2p");
  return sim::Status::Ok();
}

std::string FormatBytes(double bytes) {
  std::ostringstream os;
  os << bytes;
  return os.str();
}

}  // namespace

const std::vector<std::string>& AlgorithmNames() {
  static const std::vector<std::string> kNames = {"ring",   "bidi-ring", "line", "multi-axis",
                                                  "direct", "chain",     "p2p"};
  return kNames;
}

sim::StatusOr<CollectiveResult> SimulateCollective(const Fabric& fabric,
                                                   const CollectiveRequest& request) {
  if (!(std::isfinite(request.bytes) && request.bytes > 0)) {
    return sim::Status::InvalidArgument("--bytes: must be > 0 (got " + FormatBytes(request.bytes) +
                                        ")");
  }
  if (request.bytes != std::floor(request.bytes)) {
    return sim::Status::InvalidArgument("--bytes: must be a whole number of bytes (got " +
                                        FormatBytes(request.bytes) + ")");
  }
  if (request.bytes > 1e15) {
    return sim::Status::OutOfRange("--bytes: at most 1e15 bytes (got " +
                                   FormatBytes(request.bytes) + ")");
  }
  PODSIM_ASSIGN_OR_RETURN(GroupPlan plan, MakeGroups(fabric, request.axes));
  const CollectiveOp op = request.op;
  if (op == CollectiveOp::kPointToPoint || op == CollectiveOp::kBroadcast) {
    if (request.src >= fabric.chip_count() ||
        (op == CollectiveOp::kPointToPoint && request.dst >= fabric.chip_count())) {
      return sim::Status::InvalidArgument("--src/--dst: chip out of range (the system has " +
                                          std::to_string(fabric.chip_count()) + " chips)");
    }
  }
  const bool sharded = op != CollectiveOp::kPointToPoint && op != CollectiveOp::kBroadcast;
  if (sharded && std::fmod(request.bytes, plan.group_size) != 0) {
    return sim::Status::InvalidArgument(
        "--bytes: " + FormatBytes(request.bytes) + " bytes do not divide evenly over the " +
        std::to_string(plan.group_size) + " ranks of a group; use a multiple of " +
        std::to_string(plan.group_size));
  }

  Choice choice = Select(fabric, plan, op);
  if (!request.algorithm.empty()) {
    PODSIM_RETURN_IF_ERROR(CheckAlgorithm(request.algorithm, op, fabric));
    choice = Choice{request.algorithm, "requested"};
  }

  sim::Engine engine;
  sim::FlowModel model(&engine);
  topology::InstallLinks(fabric, &model);
  TransferExecutor executor(&fabric, &engine, &model, request.per_message_overhead);

  std::unique_ptr<Collective> collective;
  const std::string& algorithm = choice.algorithm;
  if (algorithm == "p2p") {
    collective = std::make_unique<PointToPoint>(&executor, request.src, request.dst, request.bytes);
  } else if (algorithm == "chain") {
    // The chain starts at the root: rotate each group so it comes first.
    Lines chains = plan.groups;
    for (auto& chain : chains) {
      auto root = std::find(chain.begin(), chain.end(), request.src);
      if (root != chain.end()) std::rotate(chain.begin(), root, chain.end());
    }
    uint32_t chunks =
        static_cast<uint32_t>(std::clamp(std::ceil(request.bytes / kBroadcastChunkBytes), 1.0,
                                         static_cast<double>(kMaxBroadcastChunks)));
    collective = std::make_unique<ChainBroadcast>(&executor, chains, request.bytes, chunks);
  } else if (algorithm == "direct") {
    collective = std::make_unique<DirectAllToAll>(&executor, plan.groups, request.bytes);
  } else if (algorithm == "multi-axis" ||
             (fabric.torus() != nullptr && request.algorithm.empty())) {
    collective = std::make_unique<PhasedCollective>(
        &executor, Members(plan), MultiAxisPieces(fabric, plan, op, request.bytes));
  } else {
    ForwardingPattern pattern = algorithm == "ring"        ? ForwardingPattern::kUnidirectionalRing
                                : algorithm == "bidi-ring" ? ForwardingPattern::kBidirectionalRing
                                                           : ForwardingPattern::kLine;
    collective = std::make_unique<PhasedCollective>(
        &executor, Members(plan), GroupRingPieces(plan, op, request.bytes, pattern));
  }

  bool finished = false;
  sim::Time end;
  collective->Start([&] {
    finished = true;
    end = engine.now();
  });
  engine.Run();
  PODSIM_CHECK(finished) << algorithm << " did not complete: a dependency was never satisfied";

  CollectiveResult result;
  result.algorithm = algorithm;
  result.reason = choice.reason;
  result.time = end;
  result.ranks_per_group = op == CollectiveOp::kPointToPoint ? 2 : plan.group_size;
  result.groups = op == CollectiveOp::kPointToPoint ? 1 : static_cast<int>(plan.groups.size());
  const double seconds = end.ToSeconds();
  result.algbw_bytes_per_s = seconds > 0 ? request.bytes / seconds : 0;
  result.busbw_bytes_per_s =
      result.algbw_bytes_per_s * BusBandwidthFactor(op, result.ranks_per_group);
  result.transfers = executor.transfers();
  result.flows = model.completed_flows();
  result.events = engine.executed_events();
  return result;
}

}  // namespace podsim::collectives
