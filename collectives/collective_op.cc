#include "collectives/collective_op.h"

#include <array>
#include <string>
#include <utility>

#include "sim/check.h"

namespace podsim::collectives {

namespace {

constexpr std::array<std::pair<CollectiveOp, std::string_view>, 7> kNames = {{
    {CollectiveOp::kAllGather, "all-gather"},
    {CollectiveOp::kReduceScatter, "reduce-scatter"},
    {CollectiveOp::kAllReduce, "all-reduce"},
    {CollectiveOp::kAllToAll, "all-to-all"},
    {CollectiveOp::kBroadcast, "broadcast"},
    {CollectiveOp::kPointToPoint, "p2p"},
    {CollectiveOp::kShift, "shift"},
}};

}  // namespace

std::string_view CollectiveOpName(CollectiveOp op) {
  for (const auto& [value, name] : kNames) {
    if (value == op) return name;
  }
  PODSIM_CHECK(false) << "unnamed collective op " << static_cast<int>(op);
  return {};
}

sim::StatusOr<CollectiveOp> ParseCollectiveOp(std::string_view name) {
  std::string known;
  for (const auto& [value, op_name] : kNames) {
    if (op_name == name) return value;
    known += known.empty() ? "" : ", ";
    known += op_name;
  }
  return sim::Status::NotFound("unknown collective '" + std::string(name) + "'; expected one of " +
                               known);
}

double BusBandwidthFactor(CollectiveOp op, int ranks) {
  PODSIM_CHECK(ranks >= 1) << "ranks " << ranks;
  const double n = ranks;
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2 * (n - 1) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll:
      return (n - 1) / n;
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kPointToPoint:
      return 1;
    case CollectiveOp::kShift:
      return 1 / n;
  }
  return 1;
}

}  // namespace podsim::collectives
