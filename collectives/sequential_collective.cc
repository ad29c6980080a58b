#include "collectives/sequential_collective.h"

#include <utility>

#include "sim/check.h"

namespace podsim::collectives {

SequentialCollective::SequentialCollective(std::vector<Piece> pieces) : pieces_(std::move(pieces)) {
  PODSIM_CHECK(!pieces_.empty()) << "a sequence needs a piece";
  stages_ = pieces_.front().size();
  PODSIM_CHECK(stages_ > 0) << "a sequence needs a stage";
  for (const Piece& piece : pieces_) {
    PODSIM_CHECK(piece.size() == stages_)
        << "pieces of " << piece.size() << " and " << stages_ << " stages";
    for (const Stage& stage : piece) PODSIM_CHECK(!stage.empty()) << "empty stage";
  }
  done_.assign(pieces_.size(), 0);
  started_.assign(pieces_.size(), 0);
  pending_.assign(pieces_.size(), 0);
}

void SequentialCollective::Start(sim::EventHandler on_done) {
  on_done_ = std::move(on_done);
  TryStart(0, 0);
}

void SequentialCollective::TryStart(size_t piece, size_t stage) {
  if (piece >= pieces_.size() || stage >= stages_) return;
  if (started_[piece] != stage || done_[piece] != stage) return;  // Started, or s - 1 not done.
  if (piece > 0 && done_[piece - 1] <= stage) return;             // p - 1 still before s.
  started_[piece] = stage + 1;
  pending_[piece] = pieces_[piece][stage].size();
  for (std::unique_ptr<Collective>& collective : pieces_[piece][stage]) {
    collective->Start([this, piece, stage] {
      if (--pending_[piece] > 0) return;
      done_[piece] = stage + 1;
      if (stage + 1 == stages_ && ++finished_ == pieces_.size()) {
        on_done_();
        return;
      }
      TryStart(piece, stage + 1);
      TryStart(piece + 1, stage);
    });
  }
}

}  // namespace podsim::collectives
