#include "collectives/halving_doubling.h"

#include <string>

#include "sim/check.h"

namespace podsim::collectives {

using Lines = std::vector<std::vector<topology::VertexId>>;

Lines PartnerPairs(const Lines& groups, size_t distance) {
  Lines pairs;
  for (const auto& group : groups) {
    for (size_t p = 0; p < group.size(); ++p) {
      if ((p & distance) == 0) pairs.push_back({group[p], group[p + distance]});
    }
  }
  return pairs;
}

sim::StatusOr<std::vector<ExchangePiece>> HalvingDoublingPieces(const Lines& groups,
                                                                CollectiveOp op, double bytes) {
  PODSIM_CHECK(!groups.empty()) << "halving-doubling needs a group";
  const size_t n = groups.front().size();
  if (n == 0 || (n & (n - 1)) != 0) {
    return sim::Status::InvalidArgument(
        "--algorithm halving-doubling: needs a power-of-two number of ranks per group (got " +
        std::to_string(n) + ")");
  }
  std::vector<size_t> halving;  // Partner distances n/2, n/4, ..., 1.
  for (size_t d = n / 2; d >= 1; d /= 2) halving.push_back(d);
  ExchangePiece piece;
  // A pair is a ring of two: each partner sends the other one shard.
  const ForwardingPattern pair = ForwardingPattern::kUnidirectionalRing;
  double size = op == CollectiveOp::kAllGather ? bytes / static_cast<double>(n) : bytes;
  if (op == CollectiveOp::kReduceScatter || op == CollectiveOp::kAllReduce) {
    for (size_t d : halving) {
      size /= 2;
      piece.phases.push_back(ExchangePhase{pair, PartnerPairs(groups, d), size});
    }
  }
  if (op == CollectiveOp::kAllGather || op == CollectiveOp::kAllReduce) {
    for (auto it = halving.rbegin(); it != halving.rend(); ++it) {
      piece.phases.push_back(ExchangePhase{pair, PartnerPairs(groups, *it), size});
      size *= 2;
    }
  }
  if (piece.phases.empty()) {  // One rank per group: nothing moves.
    piece.phases.push_back(ExchangePhase{pair, groups, 0});
  }
  std::vector<ExchangePiece> pieces;
  pieces.push_back(std::move(piece));
  return pieces;
}

}  // namespace podsim::collectives
