#include "collectives/collective_runner.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "collectives/collective.h"
#include "collectives/collective_builder.h"
#include "collectives/direct_collectives.h"
#include "collectives/double_binary_tree.h"
#include "collectives/halving_doubling.h"
#include "collectives/hierarchical.h"
#include "collectives/in_switch_reduction.h"
#include "collectives/infiniband_sharp.h"
#include "collectives/phased_collective.h"
#include "collectives/recursive_doubling.h"
#include "collectives/transfer_executor.h"
#include "collectives/translation_group.h"
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

// Pipelining of the tree and in-switch algorithms: tree chunks of 256 KiB (NCCL's default chunk
// for the Simple protocol is 128-512 KiB per channel), in-switch chunks of 1 MiB (a chunk's
// share per NVSwitch must take longer than the per-message overhead it hides), at most 64 per
// tree and 256 per in-switch reduction, so a large in-switch all-reduce is within 1/256 of V / W.
constexpr double kTreeChunkBytes = 256 << 10;
constexpr double kInSwitchChunkBytes = 1 << 20;
constexpr uint32_t kMaxTreeChunks = 64;
constexpr uint32_t kMaxInSwitchChunks = 256;
// Hierarchical collectives pipeline their array through the in-node and cross-node phases in
// pieces of at least 4 MiB (NCCL's default buffer per channel, NCCL_BUFFSIZE), at most 16, so
// the NICs and NVLinks work at once while small arrays are not split into latency-bound crumbs.
constexpr double kHierarchicalChunkBytes = 4 << 20;
constexpr uint32_t kMaxHierarchicalChunks = 16;
// InfiniBand SHARP's in-node and leaf reductions cut each of those pieces into in-switch chunks.
constexpr uint32_t kMaxSharpChunksPerPiece = 16;

// Largest all-reduce across nodes given to the double binary tree, and the fewest nodes it must
// span; other all-reduces go hierarchical. NCCL's tuner picks by its latency + size/bandwidth model
// per algorithm (src/graph/tuning.cc); podsim uses the crossover its own simulation shows with the
// calibrated model. NCCL's tree chains each node's GPUs (double_binary_tree.h), so on 2 or 4 nodes
// its depth (7 NVLink hops of the chain and 1-2 between nodes, each way) is no shorter than the
// hierarchical ring's steps and the tree is never faster (h100:16 and h100:32: 0.5% slower at
// 4 KiB, 5-6% at 64 KiB); on 8 nodes it is faster up to about 120 KiB (h100:64: 85 vs 89 us at
// 64 KiB, 104 vs 91 us at 256 KiB; checked in collective_algorithms_test.cc). Larger clusters cross
// later (h100:128: still 121 vs 133 us at 256 KiB), which this single threshold does not follow.
constexpr int kTreeMinNodes = 8;
constexpr double kTreeMaxBytes = 128 << 10;

uint32_t ChunkCount(double bytes, double chunk_bytes, uint32_t max_chunks) {
  return static_cast<uint32_t>(
      std::clamp(std::ceil(bytes / chunk_bytes), 1.0, static_cast<double>(max_chunks)));
}

// One dimension of a multi-axis collective: the lines of chips a phase runs along, how shards
// travel on them, and their length.
struct GridDim {
  Lines lines;
  ForwardingPattern pattern = ForwardingPattern::kLine;
  int length = 1;
};

struct GroupPlan {
  Lines groups;
  std::vector<int> axes;  // Torus axes spanned that are longer than 1; empty off tori.
  int group_size = 0;
  // Explicit ranks with a rank_shape of more than one dimension longer than 1 (tori only): the
  // group's lines along each of those dimensions.
  std::vector<GridDim> grid;
};

std::string Join(const std::vector<std::string>& names) {
  std::string joined;
  for (const std::string& name : names) joined += (joined.empty() ? "" : ", ") + name;
  return joined;
}

// A line of three or more closes into a ring when the routes from each chip to the next, the
// last to the first included, and back, are equally long and share no link: a cycle of the
// fabric both ways, as a line of neighbours along a wrapped axis, or every k-th chip of it (a mesh
// axis strided by another inside one physical axis), which then uses the wraparound as a ring of
// its own would. (Along one torus axis a transfer takes Route's route, or, half way round a
// wrapped axis, both ways round.)
bool ClosesIntoRing(const Fabric& fabric, const std::vector<VertexId>& line) {
  if (line.size() < 3) return false;
  std::set<topology::LinkIndex> used;
  size_t hops = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const VertexId a = line[i], b = line[(i + 1) % line.size()];
    for (const auto& [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
      const std::vector<topology::LinkIndex> route = fabric.Route(from, to);
      if (route.empty() || (hops != 0 && route.size() != hops)) return false;
      hops = route.size();
      for (topology::LinkIndex link : route) {
        if (!used.insert(link).second) return false;
      }
    }
  }
  return true;
}

// A line of three or more chips, each in a slice of its own, whose one-way routes from each chip
// to the next, the last to the first included, share no link: a ring through the DCN switch,
// where each chip's one PCIe link carries its sends (both ways, ClosesIntoRing, it would carry
// two neighbours' shards).
bool ClosesOneWayAcrossSlices(const Fabric& fabric, const std::vector<VertexId>& line) {
  if (line.size() < 3 || fabric.torus() == nullptr || fabric.torus()->slices < 2) return false;
  std::set<int> slices;
  for (VertexId chip : line) slices.insert(fabric.SliceOf(chip));
  if (slices.size() != line.size()) return false;
  std::set<topology::LinkIndex> used;
  for (size_t i = 0; i < line.size(); ++i) {
    for (topology::LinkIndex link : fabric.Route(line[i], line[(i + 1) % line.size()])) {
      if (!used.insert(link).second) return false;
    }
  }
  return true;
}

// The lines of `ranks` (mixed radix over `shape`, first dimension fastest) along each dimension
// longer than 1.
std::vector<GridDim> GridDims(const Fabric& fabric, const std::vector<VertexId>& ranks,
                              const std::vector<int>& shape) {
  std::vector<GridDim> dims;
  int64_t stride = 1;
  for (int length : shape) {
    if (length > 1) {
      GridDim dim;
      dim.length = length;
      for (size_t first = 0; first < ranks.size(); ++first) {
        if ((static_cast<int64_t>(first) / stride) % length != 0) continue;
        std::vector<VertexId> line;
        for (int i = 0; i < length; ++i) line.push_back(ranks[first + i * stride]);
        dim.lines.push_back(std::move(line));
      }
      // Two ranks send each other their shard: a line of two and a one-way ring of two are the
      // same transfers, and the ring, unlike the line, is unchanged when the ranks swap, which a
      // symmetry of the step may need (RotatableDims).
      // Every line of a mesh axis is a translate of the first: the first decides.
      dim.pattern = length == 2 ? ForwardingPattern::kUnidirectionalRing
                    : ClosesIntoRing(fabric, dim.lines.front())
                        ? ForwardingPattern::kBidirectionalRing
                    : ClosesOneWayAcrossSlices(fabric, dim.lines.front())
                        ? ForwardingPattern::kUnidirectionalRing
                        : ForwardingPattern::kLine;
      dims.push_back(std::move(dim));
    }
    stride *= length;
  }
  return dims;
}

sim::StatusOr<GroupPlan> MakeGroups(const Fabric& fabric, const std::vector<std::string>& names,
                                    const std::vector<VertexId>& ranks,
                                    const std::vector<int>& rank_shape) {
  GroupPlan plan;
  if (!rank_shape.empty()) {
    int64_t product = 1;
    for (int length : rank_shape) {
      if (length < 1) return sim::Status::InvalidArgument("rank_shape: lengths must be >= 1");
      product *= length;
    }
    if (product != static_cast<int64_t>(ranks.size())) {
      return sim::Status::InvalidArgument("rank_shape: its product " + std::to_string(product) +
                                          " is not the " + std::to_string(ranks.size()) +
                                          " ranks given");
    }
  }
  if (!ranks.empty()) {
    if (!names.empty()) {
      return sim::Status::InvalidArgument(
          "--ranks: give either explicit ranks or --axes, not both");
    }
    std::vector<bool> seen(fabric.chip_count(), false);
    for (VertexId chip : ranks) {
      if (chip >= fabric.chip_count()) {
        return sim::Status::InvalidArgument("--ranks: chip " + std::to_string(chip) +
                                            " out of range (the system has " +
                                            std::to_string(fabric.chip_count()) + " chips)");
      }
      if (seen[chip]) {
        return sim::Status::InvalidArgument("--ranks: chip " + std::to_string(chip) + " twice");
      }
      seen[chip] = true;
    }
    plan.groups.push_back(ranks);
    plan.group_size = static_cast<int>(ranks.size());
    if (fabric.torus() != nullptr && !rank_shape.empty()) {
      plan.grid = GridDims(fabric, ranks, rank_shape);
    }
    return plan;
  }
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

// The dimensions a multi-axis collective runs along: the grid of explicit ranks, or the spanned
// torus axes (a ring where the axis wraps, a line elsewhere).
std::vector<GridDim> MultiAxisDims(const Fabric& fabric, const GroupPlan& plan) {
  if (!plan.grid.empty()) return plan.grid;
  std::vector<GridDim> dims;
  for (int axis : plan.axes) {
    dims.push_back(
        GridDim{LinesAlong(fabric, axis), AxisPattern(fabric, axis), fabric.shape()[axis]});
  }
  return dims;
}

// One piece per dimension, each visiting the dimensions in a rotated order (formulas.md,
// multi-axis AllGather V / (W * axes)). With one dimension this is a single ring or line per
// group.
std::vector<ExchangePiece> MultiAxisPieces(const Fabric& fabric, const GroupPlan& plan,
                                           CollectiveOp op, double bytes) {
  const std::vector<GridDim> dims = MultiAxisDims(fabric, plan);
  const size_t k = std::max<size_t>(dims.size(), 1);
  std::vector<ExchangePiece> pieces;
  for (size_t j = 0; j < k; ++j) {
    std::vector<ForwardingPattern> patterns;
    std::vector<Lines> lines;
    std::vector<int> lengths;
    for (size_t p = 0; p < dims.size(); ++p) {
      const GridDim& dim = dims[(j + p) % dims.size()];
      patterns.push_back(dim.pattern);
      lines.push_back(dim.lines);
      lengths.push_back(dim.length);
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
  if (op == CollectiveOp::kAllGather || op == CollectiveOp::kAllReduce ||
      op == CollectiveOp::kShift) {
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

bool InOneNode(const Fabric& fabric, const std::vector<VertexId>& group) {
  for (VertexId chip : group) {
    if (fabric.NodeOf(chip) != fabric.NodeOf(group.front())) return false;
  }
  return true;
}

// Whether `algorithm` is NVLink SHARP inside one GPU node, where every member reaches every
// NVSwitch alike: any permutation of the members leaves the collective as it is.
bool InNodeSwitch(const Fabric& fabric, const std::string& algorithm,
                  const std::vector<VertexId>& ranks) {
  return algorithm == "in-switch" && fabric.gpu() != nullptr && InOneNode(fabric, ranks);
}

// The forwarding pattern of the ring-type algorithms: ring, bidi-ring, shift, else line.
ForwardingPattern RingPatternOf(const std::string& algorithm) {
  return algorithm == "ring"        ? ForwardingPattern::kUnidirectionalRing
         : algorithm == "bidi-ring" ? ForwardingPattern::kBidirectionalRing
         : algorithm == "shift"     ? ForwardingPattern::kShift
                                    : ForwardingPattern::kLine;
}

// How many nodes `group` touches.
int NodeCount(const Fabric& fabric, const std::vector<VertexId>& group) {
  std::set<int> nodes;
  for (VertexId chip : group) nodes.insert(fabric.NodeOf(chip));
  return static_cast<int>(nodes.size());
}

// NVLink SHARP needs NVSwitch gen 3 (Hopper) or later: GPUs with 18 NVLinks (hardware.md 1.3
// table: Ampere has 12 ports per GPU and NVSwitch gen 2 without NVLS).
bool HasNvls(const Fabric& fabric) {
  int links = 0;
  for (int n : fabric.gpu()->nvlinks_per_switch) links += n;
  return links >= 18;
}

std::string MiB(double bytes) {
  std::ostringstream os;
  os << bytes / (1 << 20) << " MiB";
  return os.str();
}

// Whether a recursive-doubling all-reduce (recursive_doubling.h) beats the torus algorithm for
// `bytes` over `plan`'s groups: its cost bounded from above -- each step as slow as its slowest
// pair, whose route latency h hops long is paid once and whose bytes share every link of the
// route with up to h other pairs' (h x bytes / route bandwidth) -- against the torus
// algorithm's latency alone, a bound from below: its reduce-scatter and all-gather each take
// floor(n/2) steps on a wrapped dimension of n chips and n - 1 on a line, one hop each. So it
// is picked only when it is faster whatever the bandwidth terms do: small, latency-bound arrays
// (on a v5e 4x4 without wraparound, 12 hop latencies against 6 and arrays up to ~45 kB, the
// book's latency-bound size, formulas.md 2.2).
bool RecursiveDoublingWins(const Fabric& fabric, const GroupPlan& plan, double bytes) {
  const size_t n = static_cast<size_t>(plan.group_size);
  if (n < 2 || (n & (n - 1)) != 0 || plan.groups.empty()) return false;
  const std::vector<VertexId>& group = plan.groups.front();
  double torus_latency_s = 0;
  for (const GridDim& dim : MultiAxisDims(fabric, plan)) {
    const std::vector<VertexId>& line = dim.lines.front();
    const int steps =
        dim.pattern == ForwardingPattern::kBidirectionalRing ? dim.length / 2 : dim.length - 1;
    const double hop_s = fabric.RouteLatency(fabric.Route(line[0], line[1])).ToSeconds();
    torus_latency_s += 2 * steps * hop_s;
  }
  // The doubling bound only grows pair by pair: stop as soon as it reaches the torus latency
  // (at once for any array that is not latency-bound, instead of n log n routes).
  double doubling_s = 0;
  for (size_t d : RecursiveDoublingDistances(n)) {
    double slowest = 0;
    for (size_t p = 0; p < n; ++p) {
      if ((p & d) != 0) continue;
      const std::vector<topology::LinkIndex> route = fabric.Route(group[p], group[p + d]);
      const double hops = static_cast<double>(route.size());
      slowest = std::max(slowest, fabric.RouteLatency(route).ToSeconds() +
                                      hops * bytes / fabric.RouteBandwidth(route));
      if (doubling_s + slowest >= torus_latency_s) return false;
    }
    doubling_s += slowest;
  }
  return doubling_s < torus_latency_s;
}

Choice Select(const Fabric& fabric, const GroupPlan& plan, CollectiveOp op, double bytes,
              bool explicit_ranks) {
  switch (op) {
    case CollectiveOp::kPointToPoint:
      return {"p2p", "one transfer, striped over the fabric's parallel routes"};
    case CollectiveOp::kBroadcast:
      return {"chain", "pipelined chain, as NCCL's ring broadcast"};
    case CollectiveOp::kAllToAll:
      return {"direct", "every rank sends to every other at once over shortest routes"};
    case CollectiveOp::kShift:
      return {"shift", "every rank sends its block to the next rank of the group's ring"};
    default:
      break;
  }
  // Latency-bound all-reduces on a torus: recursive doubling when it is surely faster. XLA's TPU
  // collective implementations are not public; this is the short-message choice of MPI libraries
  // (MPICH, Thakur et al. 2005) under the same rule, made by the cost bound above.
  if (fabric.torus() != nullptr && op == CollectiveOp::kAllReduce &&
      (!explicit_ranks || !plan.grid.empty()) && RecursiveDoublingWins(fabric, plan, bytes)) {
    return {"recursive-doubling",
            "latency-bound all-reduce of " + std::to_string(static_cast<int64_t>(bytes)) +
                " bytes on a torus: log2(n) pairwise exchanges of the whole array beat the torus "
                "algorithm's steps (MPICH's short-message all-reduce)"};
  }
  if (fabric.torus() != nullptr && !explicit_ranks) {
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
  if (fabric.torus() != nullptr && plan.grid.size() > 1) {
    return {"multi-axis", "explicit ranks on a torus over " + std::to_string(plan.grid.size()) +
                              " dimensions at once, rings where a line closes and lines elsewhere"};
  }
  if (fabric.torus() != nullptr && plan.grid.size() == 1 && plan.grid[0].length == 2) {
    return {"ring", "explicit ranks on a torus, two: each sends the other its shard"};
  }
  if (fabric.torus() != nullptr && plan.grid.size() == 1 &&
      plan.grid[0].pattern == ForwardingPattern::kUnidirectionalRing) {
    return {"ring", "explicit ranks in slices of their own: a one-way ring through the DCN switch"};
  }
  if (fabric.torus() != nullptr && plan.grid.size() == 1 &&
      plan.grid[0].pattern == ForwardingPattern::kLine) {
    return {"line", "explicit ranks on a torus whose line does not close into a ring"};
  }
  if (fabric.torus() != nullptr) {
    return {"bidi-ring", "explicit ranks on a torus: bidirectional ring in the order given"};
  }
  if (fabric.gpu() != nullptr && plan.groups.size() == 1) {
    const std::vector<VertexId>& group = plan.groups.front();
    if (InOneNode(fabric, group)) {
      if (op == CollectiveOp::kAllReduce && HasNvls(fabric) && group.size() > 1) {
        return {"in-switch",
                "all-reduce inside one NVSwitch node with NVLink SHARP: NVLS, NCCL's default on "
                "8xH100 (docs/reference/measured.md V9)"};
      }
      return {"ring", "inside one NVLink node: ring striped over the NVSwitches (NCCL)"};
    }
    if (op == CollectiveOp::kAllReduce && bytes <= kTreeMaxBytes &&
        NodeCount(fabric, group) >= kTreeMinNodes) {
      return {"tree", "all-reduce of " + MiB(bytes) + " across " +
                          std::to_string(NodeCount(fabric, group)) + " nodes (<= " +
                          MiB(kTreeMaxBytes) + ", >= " + std::to_string(kTreeMinNodes) +
                          " nodes): NCCL's tree, chains in the nodes and double binary trees "
                          "between them, log-depth latency"};
    }
    if (HierarchicalPieces(fabric, group, op, bytes, 1).ok()) {
      return {"hierarchical",
              "across nodes: NVLink inside each node, every rail's NIC across nodes in parallel"};
    }
    return {"ring", "across nodes with uneven ranks per node: one ring in rank order (NCCL)"};
  }
  return {"ring", "switched fabric: ring in rank order, striped over parallel links (NCCL)"};
}

bool IsReduction(CollectiveOp op) {
  return op == CollectiveOp::kAllGather || op == CollectiveOp::kReduceScatter ||
         op == CollectiveOp::kAllReduce;
}

sim::Status CheckAlgorithm(const std::string& algorithm, CollectiveOp op, const Fabric& fabric,
                           bool explicit_ranks) {
  const std::vector<std::string>& names = AlgorithmNames();
  if (std::find(names.begin(), names.end(), algorithm) == names.end()) {
    return sim::Status::NotFound("--algorithm: unknown algorithm '" + algorithm +
                                 "'; expected one of " + Join(names));
  }
  auto mismatch = [&](const char* what) {
    return sim::Status::InvalidArgument("--algorithm " + algorithm + " " + what + " (got " +
                                        std::string(CollectiveOpName(op)) + ")");
  };
  if ((algorithm == "ring" || algorithm == "bidi-ring" || algorithm == "line" ||
       algorithm == "multi-axis" || algorithm == "halving-doubling" || algorithm == "in-switch" ||
       algorithm == "hierarchical") &&
      !IsReduction(op)) {
    return mismatch("runs all-gather, reduce-scatter and all-reduce only");
  }
  if (algorithm == "multi-axis" && (fabric.torus() == nullptr || explicit_ranks)) {
    return sim::Status::InvalidArgument("--algorithm multi-axis needs a torus system and --axes");
  }
  if ((algorithm == "tree" || algorithm == "recursive-doubling") &&
      op != CollectiveOp::kAllReduce) {
    return mismatch("is all-reduce only");
  }
  if (algorithm == "direct" && op != CollectiveOp::kAllToAll) return mismatch("is all-to-all only");
  if (algorithm == "chain" && op != CollectiveOp::kBroadcast) return mismatch("is broadcast only");
  if (algorithm == "p2p" && op != CollectiveOp::kPointToPoint) return mismatch("is p2p only");
  if (op == CollectiveOp::kPointToPoint && algorithm != "p2p") return mismatch("cannot run p2p");
  if ((algorithm == "shift") != (op == CollectiveOp::kShift)) {
    return algorithm == "shift" ? mismatch("is shift only") : mismatch("cannot run shift");
  }
  return sim::Status::Ok();
}

std::string FormatBytes(double bytes) {
  std::ostringstream os;
  os << bytes;
  return os.str();
}

// The reducing switches of an in-switch collective over `group`: the NVSwitches of its node, or
// the hub of switch:N. Engine resources (the switch's reduction throughput) are added to `model`
// when the efficiency model limits it. In a symmetric quotient each simulated upload stands for
// `stands_for` members' alike: the engine, which only this collective's uploads cross, then has
// 1 / stands_for of its throughput, the same max-min allocation as that weight on each upload.
// An NVSwitch whose links are copies in the quotient (link_orbits.h) is left out: the switch that
// stands for it reduces its twin share alike.
sim::StatusOr<std::vector<ReductionSwitch>> ReductionSwitches(const Fabric& fabric,
                                                              const std::vector<VertexId>& group,
                                                              const FabricEfficiency& efficiency,
                                                              TransferExecutor* executor,
                                                              double stands_for = 1) {
  sim::FlowModel* model = executor->model();
  const LinkOrbits* orbits = executor->orbits();
  std::vector<ReductionSwitch> switches;
  auto route = [&](topology::LinkIndex link, std::vector<std::vector<sim::ResourceId>>* routes,
                   std::vector<sim::Time>* latencies) {
    routes->push_back({sim::ResourceId{link}});
    latencies->push_back(fabric.link(link).latency);
  };
  if (fabric.gpu() != nullptr) {
    const topology::GpuLayout& gpu = *fabric.gpu();
    // A group across nodes takes InfiniBand SHARP (MakeInfinibandSharp), never these switches.
    PODSIM_CHECK(InOneNode(fabric, group)) << "NVLink SHARP switches for a group across nodes";
    if (!HasNvls(fabric)) {
      return sim::Status::InvalidArgument(
          "--algorithm in-switch: this NVSwitch generation has no NVLink SHARP (needs Hopper or "
          "later, 18 NVLinks per GPU)");
    }
    const int total = [&] {
      int sum = 0;
      for (int n : gpu.nvlinks_per_switch) sum += n;
      return sum;
    }();
    for (int s = 0; s < gpu.switches_per_node; ++s) {
      const size_t first = static_cast<size_t>(group.front()) * gpu.switches_per_node + s;
      if (orbits != nullptr && orbits->IsCopy(gpu.gpu_to_switch[first])) {
        continue;
      }
      ReductionSwitch sw;
      sw.fraction = static_cast<double>(gpu.nvlinks_per_switch[s]) / total;
      for (VertexId chip : group) {
        const size_t at = static_cast<size_t>(chip) * gpu.switches_per_node + s;
        route(gpu.gpu_to_switch[at], &sw.up, &sw.up_latency);
        route(gpu.switch_to_gpu[at], &sw.down, &sw.down_latency);
      }
      switches.push_back(std::move(sw));
    }
  } else if (fabric.star() != nullptr) {
    ReductionSwitch sw;
    for (VertexId chip : group) {
      route(fabric.star()->up[chip], &sw.up, &sw.up_latency);
      route(fabric.star()->down[chip], &sw.down, &sw.down_latency);
    }
    switches.push_back(std::move(sw));
  } else {
    return sim::Status::InvalidArgument(
        "--algorithm in-switch: needs a switched fabric (an NVSwitch node like h100:8, or "
        "switch:N); this system has no switch to reduce in");
  }
  if (efficiency.in_switch_reduction_factor > 0) {
    for (ReductionSwitch& sw : switches) {
      double attached = 0;
      for (const auto& up : sw.up) attached += fabric.link(up.front().value).bandwidth_bytes_per_s;
      sim::StatusOr<sim::ResourceId> engine =
          model->AddResource(attached * efficiency.in_switch_reduction_factor / stands_for);
      PODSIM_CHECK(engine.ok()) << engine.status();
      sw.engine = *engine;
    }
  }
  return switches;
}

}  // namespace

struct CollectiveCache::Impl {
  struct Key {
    std::vector<std::string> axes;
    std::vector<VertexId> ranks;
    std::vector<int> rank_shape;
    bool operator<(const Key& other) const {
      return std::tie(axes, ranks, rank_shape) <
             std::tie(other.axes, other.ranks, other.rank_shape);
    }
  };
  std::map<Key, GroupPlan> plans;
  // A phased collective's layout and its estimated transfers, by everything its pieces are
  // built from.
  struct LayoutKey {
    std::string algorithm;
    // An algorithm chosen, not requested: Build's branch (and so the builder) can depend on it.
    bool chosen;
    CollectiveOp op;
    double bytes;
    Key groups;
    std::vector<VertexId> rank_reps;
    bool pipeline;
    bool operator<(const LayoutKey& other) const {
      return std::tie(algorithm, chosen, op, bytes, groups, rank_reps, pipeline) <
             std::tie(other.algorithm, other.chosen, other.op, other.bytes, other.groups,
                      other.rank_reps, other.pipeline);
    }
  };
  struct Layout {
    std::shared_ptr<const PhasedLayout> layout;
    double estimated_transfers;
  };
  std::map<LayoutKey, Layout> layouts;
};

CollectiveCache::CollectiveCache() : impl_(std::make_unique<Impl>()) {}
CollectiveCache::~CollectiveCache() = default;

namespace {

// A validated request: its groups and algorithm.
struct Plan {
  GroupPlan groups;
  Choice choice;
  // When set (a lone collective whose groups the translations map onto each other), phased
  // collectives simulate one member per orbit (SimulateConcurrentCollectives).
  const TranslationGroup* symmetry = nullptr;
  // The estimate the work bound was checked against (CheckTransfers), for BuildCollective's
  // caller; 0 where none was.
  mutable double estimated_transfers = 0;
};

sim::StatusOr<Plan> Prepare(const Fabric& fabric, const CollectiveRequest& request,
                            CollectiveCache* cache = nullptr) {
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
  Plan plan;
  if (cache == nullptr) {
    PODSIM_ASSIGN_OR_RETURN(plan.groups,
                            MakeGroups(fabric, request.axes, request.ranks, request.rank_shape));
  } else {
    CollectiveCache::Impl::Key key{request.axes, request.ranks, request.rank_shape};
    auto it = cache->impl().plans.find(key);
    if (it == cache->impl().plans.end()) {
      PODSIM_ASSIGN_OR_RETURN(GroupPlan groups,
                              MakeGroups(fabric, request.axes, request.ranks, request.rank_shape));
      it = cache->impl().plans.emplace(std::move(key), std::move(groups)).first;
    }
    plan.groups = it->second;
  }
  const CollectiveOp op = request.op;
  if (op == CollectiveOp::kPointToPoint || op == CollectiveOp::kBroadcast) {
    if (request.src >= fabric.chip_count() ||
        (op == CollectiveOp::kPointToPoint && request.dst >= fabric.chip_count())) {
      return sim::Status::InvalidArgument("--src/--dst: chip out of range (the system has " +
                                          std::to_string(fabric.chip_count()) + " chips)");
    }
  }
  const bool sharded = op != CollectiveOp::kPointToPoint && op != CollectiveOp::kBroadcast;
  const int group_size = plan.groups.group_size;
  if (sharded && std::fmod(request.bytes, group_size) != 0) {
    return sim::Status::InvalidArgument(
        "--bytes: " + FormatBytes(request.bytes) + " bytes do not divide evenly over the " +
        std::to_string(group_size) + " ranks of a group; use a multiple of " +
        std::to_string(group_size));
  }
  const bool explicit_ranks = !request.ranks.empty();
  plan.choice = Select(fabric, plan.groups, op, request.bytes, explicit_ranks);
  if (!request.algorithm.empty()) {
    PODSIM_RETURN_IF_ERROR(CheckAlgorithm(request.algorithm, op, fabric, explicit_ranks));
    plan.choice = Choice{request.algorithm, "requested"};
  }
  if (!request.rank_reps.empty()) {
    const std::string& algorithm = plan.choice.algorithm;
    if (request.rank_reps.size() != request.ranks.size()) {
      return sim::Status::InvalidArgument("rank_reps: one per rank");
    }
    std::vector<VertexId> ranks = request.ranks;  // Sorted: a pod's groups have thousands.
    std::sort(ranks.begin(), ranks.end());
    for (VertexId rep : request.rank_reps) {
      if (!std::binary_search(ranks.begin(), ranks.end(), rep)) {
        return sim::Status::InvalidArgument("rank_reps: " + std::to_string(rep) + " is not a rank");
      }
    }
    if (algorithm != "ring" && algorithm != "bidi-ring" && algorithm != "line" &&
        algorithm != "shift" && algorithm != "multi-axis" && algorithm != "hierarchical" &&
        !InNodeSwitch(fabric, algorithm, request.ranks)) {
      return sim::Status::InvalidArgument("rank_reps: the " + algorithm +
                                          " algorithm is not reduced by rotations of its ranks");
    }
  }
  return plan;
}

// Builds the collective of a prepared request on `executor`.
// A direct all-to-all starts every pair's flow at once, so its cost grows with the pairs times
// their route lengths (every hop of every flow is shared max-min with the others). Bounds checked
// before any work: 2M simultaneous transfers, and 4M flow-hops (hundreds of megabytes and tens of
// seconds of solving; a 16x16 torus needs 0.5M and a second or two).
constexpr uint64_t kMaxDirectTransfers = 2'000'000;
constexpr uint64_t kMaxDirectFlowHops = 4'000'000;

sim::Status CheckDirectAllToAllSize(const Fabric& fabric, const GroupPlan& groups) {
  uint64_t transfers = 0;
  for (const auto& group : groups.groups) transfers += group.size() * (group.size() - 1);
  auto too_large = [&](const std::string& what) {
    return sim::Status::OutOfRange(
        "all-to-all over " + std::to_string(groups.groups.size()) + " group(s) of " +
        std::to_string(groups.group_size) + " ranks starts " + what +
        " at once, beyond what podsim simulates; span fewer ranks (--axes on a torus)");
  };
  if (transfers > kMaxDirectTransfers) {
    return too_large(std::to_string(transfers) + " transfers (limit " +
                     std::to_string(kMaxDirectTransfers) + ")");
  }
  uint64_t hops = 0;
  std::vector<topology::WeightedRoute> routes;
  for (const auto& group : groups.groups) {
    for (topology::VertexId src : group) {
      for (topology::VertexId dst : group) {
        if (src == dst) continue;
        fabric.ParallelRoutes(src, dst, &routes, /*every_axis_first=*/false);
        for (const topology::WeightedRoute& route : routes) hops += route.route.size();
      }
      if (hops > kMaxDirectFlowHops) {
        return too_large("flows crossing more than " + std::to_string(kMaxDirectFlowHops) +
                         " links in total");
      }
    }
  }
  return sim::Status::Ok();
}

// Transfers of phased pieces: a ring line of L members forwards L-1 shards per member and chunk,
// a bidirectional ring or a line up to twice that, a shift one (shard_forwarding.h).
double EstimatedTransfers(const std::vector<ExchangePiece>& pieces) {
  double transfers = 0;
  for (const ExchangePiece& piece : pieces) {
    for (const ExchangePhase& phase : piece.phases) {
      const double per_member = phase.pattern == ForwardingPattern::kUnidirectionalRing ? 1.0 : 2.0;
      for (const auto& line : phase.lines) {
        const double members = static_cast<double>(line.size());
        const double steps = phase.pattern == ForwardingPattern::kShift
                                 ? (members > 1 ? 1.0 : 0.0)
                                 : per_member * (members - 1);
        transfers += members * steps * phase.chunks;
      }
    }
  }
  return transfers;
}

// Transfers of the algorithms that are not phased, from their groups and chunk counts.
double EstimatedTransfers(const GroupPlan& groups, double chunks, double per_rank_and_chunk) {
  double ranks = 0;
  for (const auto& group : groups.groups) ranks += static_cast<double>(group.size());
  return ranks * chunks * per_rank_and_chunk;
}

sim::Status CheckTransfers(const CollectiveRequest& request, const Plan& plan, double estimate) {
  plan.estimated_transfers = estimate;
  if (estimate <= static_cast<double>(request.max_transfers)) return sim::Status::Ok();
  return TooManyTransfers("the " + std::string(CollectiveOpName(request.op)) + " (" +
                              plan.choice.algorithm + " over " +
                              std::to_string(plan.groups.groups.size()) + " group(s) of " +
                              std::to_string(plan.groups.group_size) + " ranks)",
                          estimate, request.max_transfers);
}

// The share of the ranks simulated: the representatives of CollectiveRequest::rank_reps.
double SimulatedShare(const CollectiveRequest& request, const Plan& plan) {
  if (plan.symmetry != nullptr) return 1.0 / static_cast<double>(plan.symmetry->size());
  if (request.rank_reps.empty()) return 1;
  size_t reps = 0;
  for (size_t i = 0; i < request.ranks.size(); ++i) {
    reps += request.rank_reps[i] == request.ranks[i] ? 1 : 0;
  }
  return static_cast<double>(reps) / static_cast<double>(request.ranks.size());
}

// What builds a phased collective's pieces; called only where no cached layout has them.
using PiecesBuilder = std::function<sim::StatusOr<std::vector<ExchangePiece>>()>;

// A phased collective of the pieces `build` gives, once their transfers fit the request's work
// bound. With `cache` (and no lone collective's symmetry), its layout is built once per distinct
// request and shared by the later launches.
sim::StatusOr<std::unique_ptr<Collective>> MakePhased(TransferExecutor* executor,
                                                      const CollectiveRequest& request,
                                                      const Plan& plan, const PiecesBuilder& build,
                                                      bool pipeline, CollectiveCache* cache) {
  std::optional<CollectiveCache::Impl::LayoutKey> key;
  if (cache != nullptr && plan.symmetry == nullptr) {
    key = CollectiveCache::Impl::LayoutKey{
        plan.choice.algorithm,
        request.algorithm.empty(),
        request.op,
        request.bytes,
        CollectiveCache::Impl::Key{request.axes, request.ranks, request.rank_shape},
        request.rank_reps,
        pipeline};
    auto found = cache->impl().layouts.find(*key);
    if (found != cache->impl().layouts.end()) {
      PODSIM_RETURN_IF_ERROR(CheckTransfers(request, plan, found->second.estimated_transfers));
      return std::unique_ptr<Collective>(
          std::make_unique<PhasedCollective>(executor, found->second.layout));
    }
  }
  PODSIM_ASSIGN_OR_RETURN(std::vector<ExchangePiece> pieces, build());
  const double estimate = EstimatedTransfers(pieces) * SimulatedShare(request, plan);
  PODSIM_RETURN_IF_ERROR(CheckTransfers(request, plan, estimate));
  std::vector<VertexId> members = Members(plan.groups);
  std::vector<VertexId> reps = request.rank_reps;
  if (plan.symmetry != nullptr) {
    for (VertexId member : members) reps.push_back(plan.symmetry->Rep(member));
  }
  auto layout =
      std::make_shared<const PhasedLayout>(std::move(members), std::move(pieces), pipeline, reps);
  if (key)
    cache->impl().layouts.emplace(std::move(*key), CollectiveCache::Impl::Layout{layout, estimate});
  return std::unique_ptr<Collective>(
      std::make_unique<PhasedCollective>(executor, std::move(layout)));
}

sim::StatusOr<std::unique_ptr<Collective>> Build(const Fabric& fabric,
                                                 const CollectiveRequest& request, const Plan& plan,
                                                 const FabricEfficiency& efficiency,
                                                 TransferExecutor* executor,
                                                 CollectiveCache* cache = nullptr) {
  const GroupPlan& groups = plan.groups;
  const std::string& algorithm = plan.choice.algorithm;
  const CollectiveOp op = request.op;
  std::unique_ptr<Collective> collective;
  if (algorithm == "p2p") {
    PODSIM_RETURN_IF_ERROR(CheckTransfers(request, plan, 1));
    collective = std::make_unique<PointToPoint>(executor, request.src, request.dst, request.bytes);
  } else if (algorithm == "chain") {
    // The chain starts at the root: rotate each group so it comes first.
    Lines chains = groups.groups;
    for (auto& chain : chains) {
      auto root = std::find(chain.begin(), chain.end(), request.src);
      if (root != chain.end()) std::rotate(chain.begin(), root, chain.end());
    }
    uint32_t chunks =
        static_cast<uint32_t>(std::clamp(std::ceil(request.bytes / kBroadcastChunkBytes), 1.0,
                                         static_cast<double>(kMaxBroadcastChunks)));
    PODSIM_RETURN_IF_ERROR(CheckTransfers(request, plan, EstimatedTransfers(groups, chunks, 1)));
    collective = std::make_unique<ChainBroadcast>(executor, chains, request.bytes, chunks);
  } else if (algorithm == "direct") {
    PODSIM_RETURN_IF_ERROR(CheckDirectAllToAllSize(fabric, groups));
    PODSIM_RETURN_IF_ERROR(CheckTransfers(
        request, plan, EstimatedTransfers(groups, 1, std::max(0, groups.group_size - 1))));
    collective = std::make_unique<DirectAllToAll>(executor, groups.groups, request.bytes);
  } else if (algorithm == "tree") {
    // Across GPU nodes NCCL chains each node's ranks and runs the binary trees between the nodes
    // (double_binary_tree.h, NodeChainTreeParents); elsewhere the trees span the ranks.
    Lines trees = groups.groups;
    int ranks_per_node = 1;
    if (fabric.gpu() != nullptr && trees.size() == 1 && !InOneNode(fabric, trees[0])) {
      sim::StatusOr<NodesAndRails> split = SplitByNode(fabric, trees[0], "tree");
      if (split.ok()) {
        trees[0].clear();
        for (const auto& node : split->nodes)
          trees[0].insert(trees[0].end(), node.begin(), node.end());
        ranks_per_node = static_cast<int>(split->rails.size());
      }
    }
    const uint32_t chunks = ChunkCount(request.bytes / 2, kTreeChunkBytes, kMaxTreeChunks);
    // Two trees, each reducing up and broadcasting down: at most 4 sends per rank and chunk.
    PODSIM_RETURN_IF_ERROR(CheckTransfers(request, plan, EstimatedTransfers(groups, chunks, 4)));
    collective = std::make_unique<DoubleBinaryTree>(executor, std::move(trees), request.bytes,
                                                    chunks, ranks_per_node);
  } else if (algorithm == "halving-doubling") {
    return MakePhased(
        executor, request, plan,
        [&] { return HalvingDoublingPieces(groups.groups, op, request.bytes); }, false, cache);
  } else if (algorithm == "recursive-doubling") {
    return MakePhased(
        executor, request, plan,
        [&] { return RecursiveDoublingPieces(groups.groups, request.bytes); }, false, cache);
  } else if (algorithm == "hierarchical") {
    if (groups.groups.size() != 1) {
      return sim::Status::InvalidArgument(
          "--algorithm hierarchical: needs one group of GPUs (no --axes)");
    }
    return MakePhased(
        executor, request, plan,
        [&] {
          return HierarchicalPieces(
              fabric, groups.groups[0], op, request.bytes,
              ChunkCount(request.bytes, kHierarchicalChunkBytes, kMaxHierarchicalChunks));
        },
        /*pipeline=*/true, cache);
  } else if (algorithm == "in-switch") {
    if (groups.groups.size() != 1) {
      return sim::Status::InvalidArgument(
          "--algorithm in-switch: needs a switched fabric with one group (no --axes)");
    }
    if (fabric.gpu() != nullptr && !InOneNode(fabric, groups.groups[0])) {
      // The hierarchical all-reduce's pieces. Per rank, piece and chunk: up the leaf-spine tree
      // and back down, at most 4 transfers; in the node, two NVLS stages up to and down from
      // each NVSwitch, or per piece two rings of g - 1 steps. An upper bound: a piece's rail
      // array, and so its leaf chunks, is 1/g of the node's.
      const uint32_t pieces =
          ChunkCount(request.bytes, kHierarchicalChunkBytes, kMaxHierarchicalChunks);
      const uint32_t chunks =
          ChunkCount(request.bytes / pieces, kInSwitchChunkBytes, kMaxSharpChunksPerPiece);
      const topology::GpuLayout& gpu = *fabric.gpu();
      const double in_node = HasNvls(fabric) ? 2.0 * 2 * gpu.switches_per_node * chunks
                                             : 2.0 * (gpu.gpus_per_node - 1);
      PODSIM_RETURN_IF_ERROR(CheckTransfers(
          request, plan, EstimatedTransfers(groups, pieces, 4.0 * chunks + in_node)));
      NodeSwitchesFn node_switches;
      if (HasNvls(fabric)) {
        node_switches = [&](const std::vector<VertexId>& ranks) {
          return ReductionSwitches(fabric, ranks, efficiency, executor);
        };
      }
      return MakeInfinibandSharp(executor, fabric, groups.groups[0], op, request.bytes, pieces,
                                 kInSwitchChunkBytes, kMaxSharpChunksPerPiece, node_switches);
    }
    // With rank_reps (a symmetric quotient), only the representatives send and receive; each
    // stands for as many members, whose uploads the switch's reduction engine also carries.
    std::vector<uint32_t> simulated;
    for (size_t i = 0; i < groups.groups[0].size(); ++i) {
      if (request.rank_reps.empty() || request.rank_reps[i] == request.ranks[i]) {
        simulated.push_back(static_cast<uint32_t>(i));
      }
    }
    const double stands_for =
        static_cast<double>(groups.group_size) / static_cast<double>(simulated.size());
    PODSIM_ASSIGN_OR_RETURN(
        std::vector<ReductionSwitch> switches,
        ReductionSwitches(fabric, groups.groups[0], efficiency, executor, stands_for));
    const uint32_t chunks = ChunkCount(request.bytes, kInSwitchChunkBytes, kMaxInSwitchChunks);
    // Up to each switch simulated and back down: 2 transfers per rank, chunk and switch.
    PODSIM_RETURN_IF_ERROR(CheckTransfers(
        request, plan,
        EstimatedTransfers(groups, chunks, 2.0 * static_cast<double>(switches.size())) *
            SimulatedShare(request, plan)));
    collective = std::make_unique<InSwitchReduction>(
        executor, op, static_cast<uint32_t>(groups.group_size), std::move(switches), request.bytes,
        chunks, std::move(simulated));
  } else if (algorithm == "shift") {
    return MakePhased(
        executor, request, plan,
        [&]() -> sim::StatusOr<std::vector<ExchangePiece>> {
          return GroupRingPieces(groups, op, request.bytes, ForwardingPattern::kShift);
        },
        false, cache);
  } else if (algorithm == "multi-axis" ||
             (fabric.torus() != nullptr && request.algorithm.empty() && request.ranks.empty())) {
    // A lower bound first, before the pieces are built: each member forwards at least once per
    // step of every axis (on a pod of a million chips the pieces alone take gigabytes).
    double steps = 0;
    for (int axis : groups.axes) steps += fabric.shape()[axis] - 1;
    PODSIM_RETURN_IF_ERROR(CheckTransfers(
        request, plan, EstimatedTransfers(groups, 1, steps) * SimulatedShare(request, plan)));
    return MakePhased(
        executor, request, plan,
        [&]() -> sim::StatusOr<std::vector<ExchangePiece>> {
          return MultiAxisPieces(fabric, groups, op, request.bytes);
        },
        false, cache);
  } else {
    const ForwardingPattern pattern = RingPatternOf(algorithm);
    return MakePhased(
        executor, request, plan,
        [&]() -> sim::StatusOr<std::vector<ExchangePiece>> {
          return GroupRingPieces(groups, op, request.bytes, pattern);
        },
        false, cache);
  }
  return collective;
}

FabricEfficiency EfficiencyOf(const Fabric& fabric, const CollectiveRequest& request) {
  if (request.efficiency) return *request.efficiency;
  return request.calibrated ? CalibratedEfficiency(fabric) : PureFabric();
}

bool SameEfficiency(const FabricEfficiency& a, const FabricEfficiency& b) {
  return a.link_bandwidth_factor == b.link_bandwidth_factor &&
         a.in_switch_reduction_factor == b.in_switch_reduction_factor &&
         a.per_message_overhead == b.per_message_overhead && a.launch_latency == b.launch_latency;
}

}  // namespace

sim::Status TooManyTransfers(std::string_view what, double estimate, uint64_t limit) {
  char figures[96];
  std::snprintf(figures, sizeof figures, "about %.3g point-to-point transfers, over the %.3g left",
                estimate, static_cast<double>(limit));
  return sim::Status::OutOfRange(std::string(what) + " would simulate " + figures +
                                 " of the run's work bound (--max-transfers, default 5e6, "
                                 "raises it)");
}

void InstallEfficientLinks(const Fabric& fabric, const FabricEfficiency& efficiency,
                           sim::FlowModel* model) {
  PODSIM_CHECK(model->resource_count() == 0) << "links must be a flow model's first resources";
  for (const topology::Link& link : fabric.links()) {
    sim::StatusOr<sim::ResourceId> resource =
        model->AddResource(link.bandwidth_bytes_per_s * efficiency.LinkFactor(link.kind));
    PODSIM_CHECK(resource.ok()) << resource.status();
  }
}

sim::StatusOr<std::unique_ptr<Collective>> BuildCollective(
    const Fabric& fabric, const CollectiveRequest& request, const FabricEfficiency& efficiency,
    TransferExecutor* executor, AlgorithmChoice* choice, CollectiveCache* cache) {
  PODSIM_ASSIGN_OR_RETURN(Plan plan, Prepare(fabric, request, cache));
  if (choice != nullptr) *choice = AlgorithmChoice{plan.choice.algorithm, plan.choice.reason};
  sim::StatusOr<std::unique_ptr<Collective>> built =
      Build(fabric, request, plan, efficiency, executor, cache);
  if (choice != nullptr) choice->estimated_transfers = plan.estimated_transfers;
  return built;
}

std::string_view AlgorithmSummary(std::string_view name) {
  static const std::pair<std::string_view, std::string_view> kSummaries[] = {
      {"ring",
       "all-gather, reduce-scatter, all-reduce: a unidirectional ring in chip order, each "
       "transfer striped over parallel routes (NCCL's ring; docs/reference/formulas.md 2.7)"},
      {"bidi-ring",
       "all-gather, reduce-scatter, all-reduce on a torus axis that wraps: shards travel both "
       "ways round the ring (XLA on TPU; docs/reference/formulas.md 2.2)"},
      {"line",
       "all-gather, reduce-scatter, all-reduce on a torus axis without wraparound: shards travel "
       "both ways along the line"},
      {"multi-axis",
       "all-gather, reduce-scatter, all-reduce over several torus axes at once: pieces visit the "
       "axes in rotated orders, each axis a ring or a line (collectives/phased_collective.h)"},
      {"tree",
       "all-reduce: NCCL's double binary tree, log-depth latency across nodes "
       "(collectives/double_binary_tree.h)"},
      {"halving-doubling",
       "all-gather, reduce-scatter, all-reduce: recursive halving then doubling (Thakur et al. "
       "2005), power-of-two groups"},
      {"in-switch",
       "all-gather, reduce-scatter, all-reduce inside one NVSwitch node: the switch reduces "
       "(NVLink SHARP, NCCL's NVLS)"},
      {"hierarchical",
       "all-gather, reduce-scatter, all-reduce across GPU nodes: NVLink inside each node, every "
       "rail's NIC across nodes (NCCL)"},
      {"direct", "all-to-all: every rank sends its piece to every other rank at once"},
      {"chain", "broadcast: a pipelined chain from the root (--src)"},
      {"shift",
       "shift: every rank sends its block to the next rank of its group's ring at once (one ring "
       "step; ring attention's key/value passing, XLA's collective-permute)"},
      {"p2p",
       "p2p: one transfer from --src to --dst, striped over the fabric's parallel routes "
       "(a torus's disjoint shortest routes, a node's NVSwitches)"},
      {"recursive-doubling",
       "all-reduce of small arrays: log2(n) pairwise exchanges (MPICH's short-message "
       "all-reduce, Thakur et al. 2005)"},
  };
  for (const auto& [algorithm, summary] : kSummaries) {
    if (algorithm == name) return summary;
  }
  return "";
}

const std::vector<std::string>& AlgorithmNames() {
  static const std::vector<std::string> kNames = {
      "ring",      "bidi-ring",    "line",   "multi-axis", "tree", "halving-doubling",
      "in-switch", "hierarchical", "direct", "chain",      "p2p",  "recursive-doubling",
      "shift"};
  return kNames;
}

sim::StatusOr<CollectiveResult> SimulateCollective(const Fabric& fabric,
                                                   const CollectiveRequest& request) {
  PODSIM_ASSIGN_OR_RETURN(std::vector<CollectiveResult> results,
                          SimulateConcurrentCollectives(fabric, {request}));
  return std::move(results.front());
}

sim::StatusOr<AlgorithmChoice> ChooseAlgorithm(const Fabric& fabric,
                                               const CollectiveRequest& request) {
  PODSIM_ASSIGN_OR_RETURN(Plan plan, Prepare(fabric, request));
  return AlgorithmChoice{plan.choice.algorithm, plan.choice.reason};
}

namespace {
bool PiecesRotate(const std::vector<ExchangePiece>& pieces, const std::vector<VertexId>& ranks,
                  const std::vector<int>& shape, size_t dim);

// RotatableDims of the prepared collective over `ranks`, a grid of `shape`.
sim::StatusOr<std::vector<bool>> RotatableOf(const Fabric& fabric, const Plan& plan,
                                             CollectiveOp op, double bytes,
                                             const std::vector<VertexId>& ranks,
                                             const std::vector<int>& shape) {
  std::vector<bool> rotatable(shape.size(), false);
  const std::string& algorithm = plan.choice.algorithm;
  const auto longer = [](int length) { return length > 1; };
  if (algorithm == "ring" || algorithm == "bidi-ring" || algorithm == "shift") {
    if (std::count_if(shape.begin(), shape.end(), longer) == 1) {
      rotatable[std::find_if(shape.begin(), shape.end(), longer) - shape.begin()] = true;
    }
  } else if (algorithm == "multi-axis") {
    size_t dim = 0;  // GridDims lists the dimensions longer than 1, in order.
    for (size_t i = 0; i < shape.size() && dim < plan.groups.grid.size(); ++i) {
      if (shape[i] <= 1) continue;
      rotatable[i] = plan.groups.grid[dim++].pattern != ForwardingPattern::kLine;
    }
  } else if (algorithm == "in-switch") {
    const bool in_node = InNodeSwitch(fabric, algorithm, ranks);
    for (size_t i = 0; i < shape.size(); ++i) rotatable[i] = in_node && shape[i] > 1;
  } else if (algorithm == "hierarchical") {
    PODSIM_ASSIGN_OR_RETURN(std::vector<ExchangePiece> pieces,
                            HierarchicalPieces(fabric, ranks, op, bytes, 1));
    for (size_t i = 0; i < shape.size(); ++i) {
      rotatable[i] = shape[i] > 1 && PiecesRotate(pieces, ranks, shape, i);
    }
  }
  return rotatable;
}

// The symmetry group of a lone collective, when its fabric's symmetries map it onto itself:
//   * on a torus FabricSymmetry translates (every axis longer than 1 wraps and is at least 3
//     long, so every spanned axis is a ring), groups from axes (not explicit ranks) with the
//     multi-axis algorithm or a ring along one axis: every translation, ranks rotated along the
//     ring axes;
//   * on a GPU fat tree, the hierarchical algorithm over every GPU: slot rotations and the
//     smallest node translation FabricSymmetry allows, each kept where rotating the rank grid
//     {slot, node} by one maps every phase's rings and lines onto themselves (PiecesRotate).
// None when a reference run or an observer of every rank was asked for.
std::optional<TranslationGroup> SymmetryOf(const Fabric& fabric, const CollectiveRequest& request,
                                           const Plan& plan) {
  if (request.reference || !request.ranks.empty() || request.transfer_observer != nullptr ||
      request.flow_observer != nullptr) {
    return std::nullopt;
  }
  const FabricSymmetry fabric_symmetry(&fabric);
  const std::string& algorithm = plan.choice.algorithm;
  if (fabric.torus() != nullptr) {
    // A ring over several axes snakes through the group in chip order, which a translation
    // along one axis does not rotate.
    const bool rotates =
        algorithm == "multi-axis" ||
        ((algorithm == "ring" || algorithm == "bidi-ring" || algorithm == "shift") &&
         plan.groups.axes.size() <= 1);
    if (!fabric_symmetry.translates_torus() || !rotates) return std::nullopt;
    return TranslationGroup::OfSteps(&fabric, std::vector<int>(fabric.shape().size(), 1));
  }
  if (fabric.gpu() == nullptr || !fabric_symmetry.has_axes() || algorithm != "hierarchical" ||
      plan.groups.groups.size() != 1 || plan.groups.groups[0].size() != fabric.chip_count()) {
    return std::nullopt;
  }
  const std::vector<VertexId>& ranks = plan.groups.groups[0];
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] != i) return std::nullopt;  // The grid below is chip order.
  }
  const std::vector<int>& lengths = fabric_symmetry.axis_lengths();
  sim::StatusOr<std::vector<bool>> rotatable =
      RotatableOf(fabric, plan, request.op, request.bytes, ranks, lengths);
  if (!rotatable.ok()) return std::nullopt;
  std::vector<int> steps = lengths;
  for (size_t axis = 0; axis < lengths.size(); ++axis) {
    if (!(*rotatable)[axis]) continue;
    for (int step = 1; step < lengths[axis]; ++step) {
      if (fabric_symmetry.AllowsStep(axis, step)) {
        steps[axis] = step;
        break;
      }
    }
  }
  return TranslationGroup::OfSteps(&fabric, steps);
}
}  // namespace

namespace {

// Whether `image` (defined on every member) maps every phase's lines onto lines of the same
// phase with each line's order kept: rotated cyclically for rings, unchanged for lines (whose two
// ends differ). Then every member's part in the pieces is its image's, which is what
// PhasedCollective's symmetric reduction needs.
bool PiecesMapOnto(const std::vector<ExchangePiece>& pieces,
                   const std::map<VertexId, VertexId>& image) {
  for (const ExchangePiece& piece : pieces) {
    for (const ExchangePhase& phase : piece.phases) {
      std::map<VertexId, std::pair<size_t, size_t>> place;  // Member -> (line, position).
      for (size_t l = 0; l < phase.lines.size(); ++l) {
        for (size_t i = 0; i < phase.lines[l].size(); ++i) place[phase.lines[l][i]] = {l, i};
      }
      const bool ring = phase.pattern != ForwardingPattern::kLine;
      for (const auto& line : phase.lines) {
        const size_t k = line.size();
        const auto found = place.find(image.at(line.front()));
        if (found == place.end()) return false;
        const auto [to, first] = found->second;
        if (phase.lines[to].size() != k || (!ring && first != 0)) return false;
        for (size_t i = 0; i < k; ++i) {
          const auto at = place.find(image.at(line[i]));
          if (at == place.end() || at->second != std::make_pair(to, (first + i) % k)) return false;
        }
      }
    }
  }
  return true;
}

// Whether rotating the rank grid by one along `dim` maps every phase's lines onto lines of the
// same phase with each line's order kept (PiecesMapOnto).
bool PiecesRotate(const std::vector<ExchangePiece>& pieces, const std::vector<VertexId>& ranks,
                  const std::vector<int>& shape, size_t dim) {
  std::map<VertexId, VertexId> image;
  int64_t stride = 1;
  for (size_t d = 0; d < dim; ++d) stride *= shape[d];
  for (size_t r = 0; r < ranks.size(); ++r) {
    const int64_t coord = (static_cast<int64_t>(r) / stride) % shape[dim];
    const int64_t moved = static_cast<int64_t>(r) + ((coord + 1) % shape[dim] - coord) * stride;
    image[ranks[r]] = ranks[static_cast<size_t>(moved)];
  }
  return PiecesMapOnto(pieces, image);
}

}  // namespace

sim::StatusOr<std::vector<bool>> RotatableDims(const Fabric& fabric,
                                               const CollectiveRequest& request) {
  PODSIM_ASSIGN_OR_RETURN(Plan plan, Prepare(fabric, request));
  std::vector<int> shape = request.rank_shape;
  if (shape.empty()) shape.push_back(static_cast<int>(request.ranks.size()));
  return RotatableOf(fabric, plan, request.op, request.bytes, request.ranks, shape);
}

namespace {

// The digits {b, length / b} where every value of `used` lies in one aligned block of b
// consecutive values, b the smallest divisor of `length` that holds their span (tp=4 in slots
// 4-7 of 8: {4, 2}), so that shifts inside the block form an axis of their own; empty where the
// span needs the whole length.
std::vector<int> BlockRadix(const std::set<int>& used, int length) {
  if (used.empty()) return {};
  const int span = *used.rbegin() - *used.begin() + 1;
  for (int b = std::max(span, 2); b < length; ++b) {
    if (length % b == 0 && *used.begin() / b == *used.rbegin() / b) return {b, length / b};
  }
  return {};
}

}  // namespace

sim::StatusOr<std::optional<RankSymmetry>> SymmetryOfRanks(const Fabric& fabric,
                                                           const CollectiveRequest& request) {
  const std::vector<VertexId>& ranks = request.ranks;
  if (ranks.size() < 2 || request.reference || !request.rank_reps.empty() ||
      request.op == CollectiveOp::kPointToPoint || request.op == CollectiveOp::kBroadcast ||
      !FabricSymmetry(&fabric).has_axes()) {
    return std::optional<RankSymmetry>();
  }
  // Each candidate shift maps every rank (and then every line of every phase): bounded before
  // the pieces are even built (a snake ring over a pod of a million chips maps onto itself as a
  // set under every shift, and turns under none). Past the bound the rehearsal runs every rank,
  // as it did before, under the request's own work bound.
  {
    const FabricSymmetry whole(&fabric);
    double shifts = 0;
    for (size_t axis = 0; axis < whole.axis_lengths().size(); ++axis) {
      for (int step = 1; step < whole.axis_lengths()[axis]; ++step) {
        shifts += whole.AllowsStep(axis, step) ? 1 : 0;
      }
    }
    constexpr double kMaxCheckedRanks = 1e7;  // About a second of map lookups, at most.
    if (shifts * static_cast<double>(ranks.size()) > kMaxCheckedRanks) {
      return std::optional<RankSymmetry>();
    }
  }
  PODSIM_ASSIGN_OR_RETURN(Plan plan, Prepare(fabric, request));
  const std::string& algorithm = plan.choice.algorithm;
  const CollectiveOp op = request.op;
  // What a shift must map onto itself: the phases' lines, or (NVLink SHARP in a node, where every
  // member reaches every NVSwitch alike) only the members.
  std::vector<ExchangePiece> pieces;
  if (algorithm == "hierarchical" && plan.groups.groups.size() == 1) {
    PODSIM_ASSIGN_OR_RETURN(
        pieces, HierarchicalPieces(fabric, plan.groups.groups[0], op, request.bytes, 1));
  } else if (algorithm == "multi-axis") {
    pieces = MultiAxisPieces(fabric, plan.groups, op, request.bytes);
  } else if (algorithm == "ring" || algorithm == "bidi-ring" || algorithm == "line" ||
             algorithm == "shift") {
    pieces = GroupRingPieces(plan.groups, op, request.bytes, RingPatternOf(algorithm));
  } else if (!InNodeSwitch(fabric, algorithm, ranks)) {
    return std::optional<RankSymmetry>();
  }

  // Candidate digits: the whole axes, and (GPU systems) the blocks of slots and of nodes in
  // their SU that the ranks fill, so that a group inside one rotates alone.
  std::vector<std::pair<std::vector<int>, std::vector<int>>> radices = {{{}, {}}};
  if (const topology::GpuLayout* g = fabric.gpu(); g != nullptr) {
    std::set<int> slots, nodes;
    for (VertexId rank : ranks) {
      slots.insert(static_cast<int>(rank % g->gpus_per_node));
      nodes.insert(static_cast<int>(rank / g->gpus_per_node % g->nodes_per_su));
    }
    std::vector<int> slot_radix = BlockRadix(slots, g->gpus_per_node);
    std::vector<int> node_radix;
    if (FabricSymmetry(&fabric).unit_digits()) node_radix = BlockRadix(nodes, g->nodes_per_su);
    if (!slot_radix.empty()) radices.push_back({slot_radix, {}});
    if (!node_radix.empty()) radices.push_back({{}, node_radix});
    if (!slot_radix.empty() && !node_radix.empty()) radices.push_back({slot_radix, node_radix});
  }

  std::vector<int> position(fabric.chip_count(), -1);
  for (size_t i = 0; i < ranks.size(); ++i) position[ranks[i]] = static_cast<int>(i);
  std::optional<TranslationGroup> best;
  for (const auto& [slot_radix, node_radix] : radices) {
    const FabricSymmetry symmetry(&fabric, slot_radix, node_radix);
    std::vector<int> steps = symmetry.axis_lengths();
    for (size_t axis = 0; axis < steps.size(); ++axis) {
      const int length = steps[axis];
      for (int step = 1; step < length; ++step) {
        if (!symmetry.AllowsStep(axis, step)) continue;
        FabricSymmetry::Shift shift{std::vector<int>(steps.size(), 0)};
        shift.delta[axis] = step;
        std::map<VertexId, VertexId> image;
        bool onto = true;
        for (VertexId rank : ranks) {
          const VertexId to = symmetry.ApplyToVertex(rank, shift);
          onto = onto && to < position.size() && position[to] >= 0;
          if (!onto) break;
          image[rank] = to;
        }
        if (onto && PiecesMapOnto(pieces, image)) {
          steps[axis] = step;
          break;
        }
      }
    }
    std::optional<TranslationGroup> group =
        TranslationGroup::OfSteps(&fabric, steps, slot_radix, node_radix);
    if (group && group->size() > 1 && (!best || group->size() > best->size())) best = group;
  }
  if (!best) return std::optional<RankSymmetry>();
  RankSymmetry out{*best, {}};
  std::map<VertexId, VertexId> first;  // Representative -> the first rank of its orbit.
  for (VertexId rank : ranks)
    out.rank_reps.push_back(first.emplace(best->Rep(rank), rank).first->second);
  return std::optional<RankSymmetry>(std::move(out));
}

sim::StatusOr<std::vector<CollectiveResult>> SimulateConcurrentCollectives(
    const Fabric& fabric, const std::vector<CollectiveRequest>& requests) {
  if (requests.empty()) {
    return sim::Status::InvalidArgument("no collective to simulate");
  }
  const FabricEfficiency efficiency = EfficiencyOf(fabric, requests.front());
  std::vector<Plan> plans;
  for (const CollectiveRequest& request : requests) {
    if (!SameEfficiency(EfficiencyOf(fabric, request), efficiency)) {
      return sim::Status::InvalidArgument(
          "concurrent collectives must share one efficiency model (calibrated or not)");
    }
    PODSIM_ASSIGN_OR_RETURN(Plan plan, Prepare(fabric, request));
    plans.push_back(std::move(plan));
  }

  // A lone collective the fabric's symmetries map onto itself: one rank per orbit, exactly.
  std::optional<TranslationGroup> symmetry;
  LinkOrbits orbits;
  if (requests.size() == 1) symmetry = SymmetryOf(fabric, requests[0], plans[0]);
  if (symmetry && symmetry->size() > 1) {
    orbits = symmetry->Orbits();
    plans[0].symmetry = &*symmetry;
  } else {
    symmetry.reset();
  }

  for (size_t i = 0; i < requests.size(); ++i) {
    spdlog::debug(
        "collective: {} of {} B over {} group(s) of {}: {} ({}){}",
        CollectiveOpName(requests[i].op), requests[i].bytes, plans[i].groups.groups.size(),
        plans[i].groups.group_size, plans[i].choice.algorithm, plans[i].choice.reason,
        plans[i].symmetry != nullptr ? "; one rank per orbit of the fabric's symmetries (exact)"
                                     : "");
  }
  sim::Engine engine;
  sim::FlowModel model(&engine);
  InstallEfficientLinks(fabric, efficiency, &model);
  std::vector<std::unique_ptr<TransferExecutor>> executors;
  std::vector<sim::FlowObserver*> flow_observers;
  for (const CollectiveRequest& request : requests) {
    executors.push_back(std::make_unique<TransferExecutor>(
        &fabric, &engine, &model, request.per_message_overhead + efficiency.per_message_overhead,
        symmetry ? &orbits : nullptr));
    executors.back()->SetObserver(request.transfer_observer);
    if (request.flow_observer != nullptr &&
        std::find(flow_observers.begin(), flow_observers.end(), request.flow_observer) ==
            flow_observers.end()) {
      flow_observers.push_back(request.flow_observer);
      // Never a quotient's (SymmetryOf): observed collectives simulate every rank.
      model.AddObserver(request.flow_observer);
    }
  }
  std::unique_ptr<LinkLoadMeter> meter;
  if (std::any_of(requests.begin(), requests.end(),
                  [](const CollectiveRequest& r) { return r.measure_links; })) {
    meter = std::make_unique<LinkLoadMeter>(&fabric);
    model.AddObserver(meter.get());
  }
  std::vector<std::unique_ptr<Collective>> collectives;
  for (size_t i = 0; i < requests.size(); ++i) {
    PODSIM_ASSIGN_OR_RETURN(std::unique_ptr<Collective> collective,
                            Build(fabric, requests[i], plans[i], efficiency, executors[i].get()));
    collectives.push_back(std::move(collective));
  }

  std::vector<bool> finished(requests.size(), false);
  std::vector<sim::Time> end(requests.size());
  for (size_t i = 0; i < collectives.size(); ++i) {
    engine.Schedule(LaunchLatency(efficiency, requests[i].launched), [&, i] {
      collectives[i]->Start([&, i] {
        finished[i] = true;
        end[i] = engine.now();
      });
    });
  }
  engine.Run();
  if (engine.passed_horizon()) {
    return sim::PassedHorizonError(requests.size() == 1
                                       ? "the " + std::string(CollectiveOpName(requests[0].op))
                                       : std::string("the concurrent collectives"));
  }

  std::vector<CollectiveResult> results;
  for (size_t i = 0; i < requests.size(); ++i) {
    const CollectiveRequest& request = requests[i];
    const Plan& plan = plans[i];
    PODSIM_CHECK(finished[i]) << plan.choice.algorithm
                              << " did not complete: a dependency was never satisfied";
    const CollectiveOp op = request.op;
    CollectiveResult result;
    result.algorithm = plan.choice.algorithm;
    result.reason = plan.choice.reason;
    result.time = end[i];
    result.ranks_per_group = op == CollectiveOp::kPointToPoint ? 2 : plan.groups.group_size;
    result.groups =
        op == CollectiveOp::kPointToPoint ? 1 : static_cast<int>(plan.groups.groups.size());
    const double seconds = end[i].ToSeconds();
    // nccl-tests' size: for all-to-all one rank's send buffer (V / n), else V.
    const double size =
        op == CollectiveOp::kAllToAll ? request.bytes / result.ranks_per_group : request.bytes;
    result.algbw_bytes_per_s = seconds > 0 ? size / seconds : 0;
    result.busbw_bytes_per_s =
        result.algbw_bytes_per_s * BusBandwidthFactor(op, result.ranks_per_group);
    result.transfers = executors[i]->transfers();
    // Flows and events are the shared engine's: per collective only when it ran alone.
    result.flows = model.completed_flows();
    result.events = engine.executed_events();
    result.symmetric = plan.symmetry != nullptr;
    result.simulated_ranks = op == CollectiveOp::kPointToPoint
                                 ? 2
                                 : static_cast<uint64_t>(plan.groups.group_size) *
                                       plan.groups.groups.size() /
                                       (result.symmetric ? plan.symmetry->size() : 1);
    if (request.measure_links) {
      // The meter holds every collective's bytes: concurrent ones are measured together, over
      // the whole run (until the last one ended).
      const sim::Time metered =
          requests.size() == 1 ? end[i] : *std::max_element(end.begin(), end.end());
      result.bottleneck = meter->Busiest(metered, symmetry ? &orbits : nullptr);
      if (request.keep_link_utilisation) {
        result.link_utilisation = meter->Utilisation(metered, symmetry ? &orbits : nullptr);
      }
    }
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace podsim::collectives
