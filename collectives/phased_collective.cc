#include "collectives/phased_collective.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "sim/check.h"

namespace podsim::collectives {

namespace {
constexpr uint32_t kNotMember = std::numeric_limits<uint32_t>::max();
}

PhasedCollective::PhasedCollective(TransferExecutor* executor,
                                   std::vector<topology::VertexId> members,
                                   std::vector<ExchangePiece> pieces, bool pipeline,
                                   const std::vector<topology::VertexId>& reps)
    : executor_(executor), members_(std::move(members)), pipeline_(pipeline) {
  PODSIM_CHECK(!pieces.empty()) << "a collective needs at least one piece";
  topology::VertexId max_vertex = *std::max_element(members_.begin(), members_.end());
  member_of_vertex_.assign(max_vertex + 1, kNotMember);
  for (uint32_t m = 0; m < members_.size(); ++m) member_of_vertex_[members_[m]] = m;
  PODSIM_CHECK(reps.empty() || reps.size() == members_.size()) << "one representative per member";
  rep_of_member_.resize(members_.size());
  for (uint32_t m = 0; m < members_.size(); ++m) {
    rep_of_member_[m] = m;
    if (reps.empty()) continue;
    PODSIM_CHECK(reps[m] < member_of_vertex_.size() && member_of_vertex_[reps[m]] != kNotMember)
        << "representative " << reps[m] << " is not a member";
    rep_of_member_[m] = member_of_vertex_[reps[m]];
    PODSIM_CHECK(reps[rep_of_member_[m]] == reps[m]) << "a representative stands for another";
  }
  for (uint32_t m = 0; m < members_.size(); ++m) {
    if (rep_of_member_[m] == m) simulated_.push_back(m);
  }

  for (uint32_t p = 0; p < pieces.size(); ++p) {
    PODSIM_CHECK(!pieces[p].phases.empty()) << "piece " << p << " has no phase";
    PODSIM_CHECK(!pipeline || pieces[p].phases.size() == pieces[0].phases.size())
        << "pipelined pieces need equally many phases";
    first_run_of_piece_.push_back(static_cast<uint32_t>(runs_.size()));
    phases_of_piece_.push_back(static_cast<uint32_t>(pieces[p].phases.size()));
    for (uint32_t f = 0; f < pieces[p].phases.size(); ++f) {
      ExchangePhase& phase = pieces[p].phases[f];
      PhaseRun run{p,
                   f,
                   {},
                   std::vector<Slot>(members_.size(), Slot{kNotMember, 0}),
                   std::vector<uint8_t>(members_.size(), 0),
                   std::vector<uint8_t>(members_.size(), 0)};
      size_t covered = 0;
      for (uint32_t l = 0; l < phase.lines.size(); ++l) {
        for (uint32_t i = 0; i < phase.lines[l].size(); ++i) {
          topology::VertexId v = phase.lines[l][i];
          PODSIM_CHECK(v < member_of_vertex_.size() && member_of_vertex_[v] != kNotMember)
              << "vertex " << v << " in a line is not a member";
          Slot& slot = run.slot_of_member[member_of_vertex_[v]];
          PODSIM_CHECK(slot.line == kNotMember) << "vertex " << v << " in two lines of a phase";
          slot = Slot{l, i};
          ++covered;
        }
        const uint32_t tag = static_cast<uint32_t>(lines_.size());
        lines_.push_back(LineRef{static_cast<uint32_t>(runs_.size()), l});
        std::vector<uint8_t> simulated;
        if (!reps.empty()) {
          for (topology::VertexId v : phase.lines[l]) {
            const uint32_t m = member_of_vertex_[v];
            simulated.push_back(rep_of_member_[m] == m ? 1 : 0);
          }
          // A line without a representative never runs: its members enter no phase, and sends
          // into them are received by the representatives' lines.
          if (std::find(simulated.begin(), simulated.end(), 1) == simulated.end()) {
            run.lines.push_back(nullptr);
            continue;
          }
        }
        run.lines.push_back(std::make_unique<ShardForwarding>(executor_, std::move(phase.lines[l]),
                                                              phase.pattern, phase.shard_bytes,
                                                              this, tag, phase.chunks));
        if (!reps.empty()) run.lines.back()->Mirror(std::move(simulated), this);
      }
      PODSIM_CHECK(covered == members_.size())
          << "phase " << f << " of piece " << p << " covers " << covered << " of "
          << members_.size() << " members";
      runs_.push_back(std::move(run));
    }
  }
}

void PhasedCollective::Start(sim::EventHandler on_done) {
  on_done_ = std::move(on_done);
  remaining_ = first_run_of_piece_.size() * simulated_.size();
  for (uint32_t run : first_run_of_piece_) {
    for (uint32_t m : simulated_) TryEnter(run, m);
  }
}

void PhasedCollective::RouteReceive(uint32_t tag, uint32_t index, int direction) {
  const LineRef& ref = lines_[tag];
  PhaseRun& run = runs_[ref.run];
  const uint32_t member = member_of_vertex_[run.lines[ref.line]->rank(index)];
  const Slot& slot = run.slot_of_member[rep_of_member_[member]];
  run.lines[slot.line]->Receive(slot.index, direction);
}

void PhasedCollective::TryEnter(uint32_t run, uint32_t member) {
  PhaseRun& target = runs_[run];
  if (target.entered[member]) return;
  if (target.phase > 0 && !runs_[run - 1].done[member]) return;
  if (pipeline_ && target.piece > 0) {
    const uint32_t previous = first_run_of_piece_[target.piece - 1] + target.phase;
    if (!runs_[previous].done[member]) return;
  }
  target.entered[member] = 1;
  const Slot& slot = target.slot_of_member[member];
  target.lines[slot.line]->RankReady(slot.index);
}

void PhasedCollective::OnRankDone(uint32_t tag, uint32_t rank_index) {
  const LineRef& ref = lines_[tag];
  PhaseRun& run = runs_[ref.run];
  const uint32_t member = member_of_vertex_[run.lines[ref.line]->rank(rank_index)];
  run.done[member] = 1;
  const bool last_phase = run.phase + 1 == phases_of_piece_[run.piece];
  if (pipeline_ && run.piece + 1 < first_run_of_piece_.size()) {
    TryEnter(first_run_of_piece_[run.piece + 1] + run.phase, member);
  }
  if (!last_phase) {
    TryEnter(ref.run + 1, member);
    return;
  }
  PODSIM_CHECK(remaining_ > 0) << "more completions than (piece, member) pairs";
  if (--remaining_ == 0) on_done_();
}

}  // namespace podsim::collectives
