#include "collectives/recursive_doubling.h"

#include <string>

#include "collectives/halving_doubling.h"
#include "sim/check.h"

namespace podsim::collectives {

using Lines = std::vector<std::vector<topology::VertexId>>;

std::vector<size_t> RecursiveDoublingDistances(size_t n) {
  PODSIM_CHECK(n > 0 && (n & (n - 1)) == 0) << "recursive doubling over " << n << " ranks";
  std::vector<size_t> distances;
  for (size_t d = 1; d < n; d *= 2) distances.push_back(d);
  return distances;
}

sim::StatusOr<std::vector<ExchangePiece>> RecursiveDoublingPieces(const Lines& groups,
                                                                  double bytes) {
  PODSIM_CHECK(!groups.empty()) << "recursive doubling needs a group";
  const size_t n = groups.front().size();
  if (n == 0 || (n & (n - 1)) != 0) {
    return sim::Status::InvalidArgument(
        "--algorithm recursive-doubling: needs a power-of-two number of ranks per group (got " +
        std::to_string(n) + ")");
  }
  // A pair is a ring of two: each partner sends the other its whole partial sum.
  const ForwardingPattern pair = ForwardingPattern::kUnidirectionalRing;
  ExchangePiece piece;
  for (size_t d : RecursiveDoublingDistances(n)) {
    piece.phases.push_back(ExchangePhase{pair, PartnerPairs(groups, d), bytes});
  }
  if (piece.phases.empty()) {  // One rank per group: nothing moves.
    piece.phases.push_back(ExchangePhase{pair, groups, 0});
  }
  std::vector<ExchangePiece> pieces;
  pieces.push_back(std::move(piece));
  return pieces;
}

}  // namespace podsim::collectives
