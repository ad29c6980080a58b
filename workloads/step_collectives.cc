#include "workloads/step_collectives.h"

#include <cmath>

namespace podsim::workloads {

collectives::CollectiveOp ToCollectiveOp(schedule::CollectiveKind kind) {
  switch (kind) {
    case schedule::ALL_GATHER:
      return collectives::CollectiveOp::kAllGather;
    case schedule::REDUCE_SCATTER:
      return collectives::CollectiveOp::kReduceScatter;
    case schedule::ALL_TO_ALL:
      return collectives::CollectiveOp::kAllToAll;
    case schedule::BROADCAST:
      return collectives::CollectiveOp::kBroadcast;
    case schedule::SHIFT:
      return collectives::CollectiveOp::kShift;
    default:
      return collectives::CollectiveOp::kAllReduce;
  }
}

collectives::CollectiveRequest GroupRequest(const topology::System& system, const schedule::Op& op,
                                            const std::vector<uint32_t>& ranks,
                                            const std::vector<int>& shape) {
  collectives::CollectiveRequest request;
  request.op = ToCollectiveOp(op.collective());
  if (request.op == collectives::CollectiveOp::kBroadcast) {
    request.bytes = std::ceil(op.bytes());  // Not sharded: the whole message from the root.
    request.src = ranks.front();
  } else {
    const double per_rank = std::ceil(op.bytes() / static_cast<double>(ranks.size()));
    request.bytes = per_rank * static_cast<double>(ranks.size());
  }
  request.ranks.assign(ranks.begin(), ranks.end());
  if (system.fabric.torus() != nullptr) request.rank_shape = shape;
  request.launched = op.launched();
  return request;
}

}  // namespace podsim::workloads
