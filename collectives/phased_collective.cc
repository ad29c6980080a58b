#include "collectives/phased_collective.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "sim/check.h"

namespace podsim::collectives {

namespace {
constexpr uint32_t kNotMember = std::numeric_limits<uint32_t>::max();
}

PhasedLayout::PhasedLayout(std::vector<topology::VertexId> members_in,
                           std::vector<ExchangePiece> pieces, bool pipeline_in,
                           const std::vector<topology::VertexId>& reps)
    : members(std::move(members_in)), pipeline(pipeline_in), mirrored(!reps.empty()) {
  PODSIM_CHECK(!pieces.empty()) << "a collective needs at least one piece";
  topology::VertexId max_vertex = *std::max_element(members.begin(), members.end());
  member_of_vertex.assign(max_vertex + 1, kNotMember);
  for (uint32_t m = 0; m < members.size(); ++m) member_of_vertex[members[m]] = m;
  PODSIM_CHECK(reps.empty() || reps.size() == members.size()) << "one representative per member";
  rep_of_member.resize(members.size());
  for (uint32_t m = 0; m < members.size(); ++m) {
    rep_of_member[m] = m;
    if (reps.empty()) continue;
    PODSIM_CHECK(reps[m] < member_of_vertex.size() && member_of_vertex[reps[m]] != kNotMember)
        << "representative " << reps[m] << " is not a member";
    rep_of_member[m] = member_of_vertex[reps[m]];
    PODSIM_CHECK(reps[rep_of_member[m]] == reps[m]) << "a representative stands for another";
  }
  simulated_of_member.assign(members.size(), kNotMember);
  for (uint32_t m = 0; m < members.size(); ++m) {
    if (rep_of_member[m] != m) continue;
    simulated_of_member[m] = static_cast<uint32_t>(simulated.size());
    simulated.push_back(m);
  }

  for (uint32_t p = 0; p < pieces.size(); ++p) {
    PODSIM_CHECK(!pieces[p].phases.empty()) << "piece " << p << " has no phase";
    PODSIM_CHECK(!pipeline || pieces[p].phases.size() == pieces[0].phases.size())
        << "pipelined pieces need equally many phases";
    first_run_of_piece.push_back(static_cast<uint32_t>(runs.size()));
    phases_of_piece.push_back(static_cast<uint32_t>(pieces[p].phases.size()));
    for (uint32_t f = 0; f < pieces[p].phases.size(); ++f) {
      ExchangePhase& phase = pieces[p].phases[f];
      Run run{p, f, {}, std::vector<Slot>(members.size(), Slot{kNotMember, 0})};
      size_t covered = 0;
      for (uint32_t l = 0; l < phase.lines.size(); ++l) {
        for (uint32_t i = 0; i < phase.lines[l].size(); ++i) {
          topology::VertexId v = phase.lines[l][i];
          PODSIM_CHECK(v < member_of_vertex.size() && member_of_vertex[v] != kNotMember)
              << "vertex " << v << " in a line is not a member";
          Slot& slot = run.slot_of_member[member_of_vertex[v]];
          PODSIM_CHECK(slot.line == kNotMember) << "vertex " << v << " in two lines of a phase";
          slot = Slot{l, i};
          ++covered;
        }
        const uint32_t tag = static_cast<uint32_t>(tags.size());
        tags.push_back(LineRef{static_cast<uint32_t>(runs.size()), l});
        Line line{{}, {}, phase.pattern, phase.shard_bytes, phase.chunks, tag};
        if (mirrored) {
          for (topology::VertexId v : phase.lines[l]) {
            const uint32_t m = member_of_vertex[v];
            line.simulated.push_back(rep_of_member[m] == m ? 1 : 0);
          }
          // A line without a representative never runs: its members enter no phase, and sends
          // into them are received by the representatives' lines.
          if (std::find(line.simulated.begin(), line.simulated.end(), 1) == line.simulated.end()) {
            line.simulated.clear();
            run.lines.push_back(std::move(line));
            continue;
          }
        }
        PODSIM_CHECK(!phase.lines[l].empty()) << "a ring needs at least one rank";
        line.ranks = std::move(phase.lines[l]);
        run.lines.push_back(std::move(line));
      }
      PODSIM_CHECK(covered == members.size()) << "phase " << f << " of piece " << p << " covers "
                                              << covered << " of " << members.size() << " members";
      runs.push_back(std::move(run));
    }
  }
}

PhasedCollective::PhasedCollective(TransferExecutor* executor,
                                   std::vector<topology::VertexId> members,
                                   std::vector<ExchangePiece> pieces, bool pipeline,
                                   const std::vector<topology::VertexId>& reps)
    : PhasedCollective(executor, std::make_shared<const PhasedLayout>(
                                     std::move(members), std::move(pieces), pipeline, reps)) {}

PhasedCollective::PhasedCollective(TransferExecutor* executor,
                                   std::shared_ptr<const PhasedLayout> layout)
    : executor_(executor), layout_(std::move(layout)) {
  const PhasedLayout& layout_ref = *layout_;
  lines_.resize(layout_ref.runs.size());
  for (size_t r = 0; r < layout_ref.runs.size(); ++r) {
    for (const PhasedLayout::Line& line : layout_ref.runs[r].lines) {
      if (line.ranks.empty()) {
        lines_[r].push_back(nullptr);
        continue;
      }
      lines_[r].push_back(std::make_unique<ShardForwarding>(
          executor_, line.ranks, line.pattern, line.shard_bytes, this, line.tag, line.chunks));
      if (layout_ref.mirrored) lines_[r].back()->Mirror(line.simulated, this);
    }
  }
  entered_.assign(layout_ref.runs.size() * layout_ref.simulated.size(), 0);
  done_.assign(entered_.size(), 0);
}

size_t PhasedCollective::StateIndex(uint32_t run, uint32_t member) const {
  const uint32_t simulated = layout_->simulated_of_member[member];
  PODSIM_CHECK(simulated != kNotMember) << "member " << member << " is not simulated";
  return static_cast<size_t>(run) * layout_->simulated.size() + simulated;
}

void PhasedCollective::Start(sim::EventHandler on_done) {
  on_done_ = std::move(on_done);
  remaining_ = layout_->first_run_of_piece.size() * layout_->simulated.size();
  for (uint32_t run : layout_->first_run_of_piece) {
    for (uint32_t m : layout_->simulated) TryEnter(run, m);
  }
}

void PhasedCollective::RouteReceive(uint32_t tag, uint32_t index, int direction) {
  const PhasedLayout::LineRef& ref = layout_->tags[tag];
  const uint32_t member = layout_->member_of_vertex[lines_[ref.run][ref.line]->rank(index)];
  const PhasedLayout::Slot& slot =
      layout_->runs[ref.run].slot_of_member[layout_->rep_of_member[member]];
  lines_[ref.run][slot.line]->Receive(slot.index, direction);
}

void PhasedCollective::TryEnter(uint32_t run, uint32_t member) {
  const PhasedLayout::Run& target = layout_->runs[run];
  const size_t state = StateIndex(run, member);
  if (entered_[state]) return;
  if (target.phase > 0 && !done_[StateIndex(run - 1, member)]) return;
  if (layout_->pipeline && target.piece > 0) {
    const uint32_t previous = layout_->first_run_of_piece[target.piece - 1] + target.phase;
    if (!done_[StateIndex(previous, member)]) return;
  }
  entered_[state] = 1;
  const PhasedLayout::Slot& slot = target.slot_of_member[member];
  lines_[run][slot.line]->RankReady(slot.index);
}

void PhasedCollective::OnRankDone(uint32_t tag, uint32_t rank_index) {
  const PhasedLayout::LineRef& ref = layout_->tags[tag];
  const PhasedLayout::Run& run = layout_->runs[ref.run];
  const uint32_t member = layout_->member_of_vertex[lines_[ref.run][ref.line]->rank(rank_index)];
  done_[StateIndex(ref.run, member)] = 1;
  const bool last_phase = run.phase + 1 == layout_->phases_of_piece[run.piece];
  if (layout_->pipeline && run.piece + 1 < layout_->first_run_of_piece.size()) {
    TryEnter(layout_->first_run_of_piece[run.piece + 1] + run.phase, member);
  }
  if (!last_phase) {
    TryEnter(ref.run + 1, member);
    return;
  }
  PODSIM_CHECK(remaining_ > 0) << "more completions than (piece, member) pairs";
  if (--remaining_ == 0) on_done_();
}

}  // namespace podsim::collectives
