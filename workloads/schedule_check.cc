#include "workloads/schedule_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "workloads/compute_model.h"
#include "workloads/hbm_kernel.h"

namespace podsim::workloads {

namespace {

using schedule::OpKind;
using schedule::Program;

std::string Where(const Program& program, int p) {
  return "schedule: program " + std::to_string(p) + " '" + program.name() + "'";
}

std::string At(const Program& program, int p, int i) {
  return Where(program, p) + " op " + std::to_string(i) + " '" + program.ops(i).name() + "'";
}

bool FiniteNonNegative(double value) { return std::isfinite(value) && value >= 0; }

sim::Status CheckOp(const Program& program, int p, int i, const MeshGrid& grid,
                    const std::map<std::string, int>& groups, const topology::ChipSpec& chip,
                    const ComputeEfficiency& efficiency) {
  const schedule::Op& op = program.ops(i);
  auto bad = [&](const std::string& what) {
    return sim::Status::InvalidArgument(At(program, p, i) + ": " + what);
  };
  if (op.kind() == schedule::OP_KIND_UNSPECIFIED) return bad("kind: missing");
  if (!OpKind_IsValid(op.kind())) return bad("kind: unknown value " + std::to_string(op.kind()));
  if (op.stream().empty()) return bad("stream: missing");
  const bool compute = IsComputeKind(op.kind());
  if (compute != (op.stream() == "compute")) {
    return bad(compute
                   ? "stream: compute ops run on stream \"compute\" (got \"" + op.stream() + "\")"
                   : "stream: communication ops cannot run on stream \"compute\"");
  }
  for (uint32_t dep : op.deps()) {
    if (dep >= static_cast<uint32_t>(i)) {
      return bad("deps: " + std::to_string(dep) + " is not an earlier op");
    }
  }
  for (double value : {op.flops(), op.model_flops(), op.hfu_flops(), op.hbm_bytes(),
                       op.duration_s(), op.bytes()}) {
    if (!FiniteNonNegative(value)) {
      return bad(
          "flops, model_flops, hfu_flops, hbm_bytes, duration_s and bytes must be finite and >= 0");
    }
  }
  if (!FiniteNonNegative(op.hbm_alloc_bytes()) || !FiniteNonNegative(op.hbm_free_bytes())) {
    return bad("hbm_alloc_bytes and hbm_free_bytes must be finite and >= 0");
  }
  // schedule_check.h's bounds on one op.
  if (op.flops() > kMaxOpFlops || op.model_flops() > kMaxOpFlops || op.hfu_flops() > kMaxOpFlops) {
    return bad("flops, model_flops and hfu_flops: at most 1e30 per op");
  }

  if (op.hbm_bytes() > kMaxOpBytes || op.hbm_alloc_bytes() > kMaxOpBytes ||
      op.hbm_free_bytes() > kMaxOpBytes || op.bytes() > kMaxOpBytes) {
    return bad("hbm_bytes, hbm_alloc_bytes, hbm_free_bytes and bytes: at most 1e18 per op");
  }
  if (op.fp8()) {
    if (op.kind() != schedule::MATMUL) return bad("fp8: only a matmul runs in fp8");
    if (!(chip.fp8_flops_per_s > 0)) return bad("fp8: chip " + chip.name + " has no fp8 peak");
  }
  if (std::string kernel = KernelProblem(op, chip, efficiency); !kernel.empty()) return bad(kernel);
  if (op.launched() && op.kind() != schedule::COLLECTIVE) {
    return bad("launched: only a collective continues a launched operation");
  }
  if (op.kind() == schedule::COLLECTIVE) {
    if (op.collective() == schedule::COLLECTIVE_KIND_UNSPECIFIED) return bad("collective: missing");
    if (!schedule::CollectiveKind_IsValid(op.collective())) {
      return bad("collective: unknown value " + std::to_string(op.collective()));
    }
    if (!op.group().empty()) {
      if (!op.axes().empty()) return bad("axes and group: a collective spans one or the other");
      if (groups.count(op.group()) == 0)
        return bad("group: no schedule group '" + op.group() + "'");
    } else if (op.axes().empty()) {
      return bad("axes: a collective spans at least one mesh axis (or names a group)");
    }
    std::set<std::string> seen;
    for (const std::string& axis : op.axes()) {
      if (grid.AxisIndex(axis) < 0) return bad("axes: no mesh axis '" + axis + "'");
      if (!seen.insert(axis).second) return bad("axes: '" + axis + "' twice");
    }
    if (!(op.bytes() > 0)) return bad("bytes: must be > 0");
  }
  if (op.kind() == schedule::SEND || op.kind() == schedule::RECV) {
    const int axis = grid.AxisIndex(op.peer_axis());
    if (axis < 0) return bad("peer_axis: no mesh axis '" + op.peer_axis() + "'");
    if (op.peer_offset() == 0) return bad("peer_offset: must not be 0");
    auto it = program.where().find(op.peer_axis());
    if (it == program.where().end()) {
      return bad("peer_axis: the program's `where` must fix '" + op.peer_axis() +
                 "' so every chip has a peer");
    }
    const int64_t peer = int64_t{it->second} + op.peer_offset();  // Both are int32: no overflow.
    if (peer < 0 || peer >= grid.axes()[axis].size) {
      return bad("peer_offset: coordinate " + std::to_string(peer) + " is outside '" +
                 op.peer_axis() + "' (size " + std::to_string(grid.axes()[axis].size) + ")");
    }
    if (op.kind() == schedule::SEND && !(op.bytes() > 0)) return bad("bytes: must be > 0");
  }
  return sim::Status::Ok();
}

// One program's collectives over one set of mesh axes, in program order (op indices).
using CollectiveSequences = std::map<std::vector<int>, std::vector<int>>;

CollectiveSequences SequencesOf(const Program& program, const CheckedSchedule& checked) {
  CollectiveSequences sequences;
  for (int i = 0; i < program.ops_size(); ++i) {
    const schedule::Op& op = program.ops(i);
    if (op.kind() == schedule::COLLECTIVE) sequences[CollectiveSet(checked, op)].push_back(i);
  }
  return sequences;
}

// The schedule group of a CollectiveSet, or -1 for mesh axes.
int ScheduleGroup(const std::vector<int>& set) {
  return set.size() == 1 && set.front() < 0 ? -1 - set.front() : -1;
}

std::string Describe(const Program& program, int i) {
  const schedule::Op& op = program.ops(i);
  char bytes[32];
  std::snprintf(bytes, sizeof bytes, "%.17g", op.bytes());
  return schedule::CollectiveKind_Name(op.collective()) + " of " + bytes + " bytes (op " +
         std::to_string(i) + " '" + op.name() + "')";
}

// The members of a group meet at their n-th collective over the group's axes (the step
// simulator's barrier), so they must agree on what each one is: its kind and bytes.
sim::Status CheckGroupsAgree(const schedule::Schedule& schedule, const CheckedSchedule& checked) {
  const MeshGrid& g = checked.grid;
  std::vector<CollectiveSequences> sequences;
  std::set<std::vector<int>> axis_sets;
  for (const Program& program : schedule.programs()) {
    sequences.push_back(SequencesOf(program, checked));
    for (const auto& [axes, ops] : sequences.back()) axis_sets.insert(axes);
  }
  std::set<std::tuple<std::vector<int>, int, int>> agreed;  // (axes, program, program)
  std::vector<int> group_program(g.chip_count());
  std::vector<uint32_t> every_chip(g.chip_count());
  for (uint32_t chip = 0; chip < g.chip_count(); ++chip) every_chip[chip] = chip;
  for (const std::vector<int>& axes : axis_sets) {
    std::fill(group_program.begin(), group_program.end(), -1);
    const int group = ScheduleGroup(axes);
    // A schedule group is one group of its members; mesh axes make a group of every chip.
    const google::protobuf::RepeatedField<uint32_t>* members =
        group >= 0 ? &schedule.groups(group).chips() : nullptr;
    const size_t count = members != nullptr ? members->size() : every_chip.size();
    for (size_t m = 0; m < count; ++m) {
      const uint32_t chip = members != nullptr ? members->Get(m) : every_chip[m];
      uint32_t first = chip;  // The group's first member (at coordinate 0 on its axes).
      if (members != nullptr) {
        first = members->Get(0);
      } else {
        for (int axis : axes) first = g.ChipWith(first, axis, 0);
      }
      const int p = checked.program_of_chip[chip];
      int& q = group_program[first];
      if (q < 0) q = p;
      if (q == p || !agreed.insert({axes, std::min(p, q), std::max(p, q)}).second) continue;
      static const std::vector<int> kNone;
      auto ops_of = [&](int program) -> const std::vector<int>& {
        auto it = sequences[program].find(axes);
        return it == sequences[program].end() ? kNone : it->second;
      };
      const std::vector<int>& mine = ops_of(p);
      const std::vector<int>& theirs = ops_of(q);
      std::string names;
      if (group >= 0) {
        names = "group '" + schedule.groups(group).name() + "'";
      } else {
        for (int axis : axes) names += (names.empty() ? "" : ",") + g.axes()[axis].name;
      }
      const Program& a = schedule.programs(q);
      const Program& b = schedule.programs(p);
      const std::string pair = "schedule: programs '" + a.name() + "' and '" + b.name() +
                               "' meet in groups over " + names + " (chips " +
                               std::to_string(first) + " and " + std::to_string(chip) + ")";
      for (size_t n = 0; n < std::min(mine.size(), theirs.size()); ++n) {
        const schedule::Op& x = a.ops(theirs[n]);
        const schedule::Op& y = b.ops(mine[n]);
        if (x.collective() == y.collective() && x.bytes() == y.bytes()) continue;
        return sim::Status::InvalidArgument(
            pair + " but disagree on their collective " + std::to_string(n) +
            " over them: " + Describe(a, theirs[n]) + " against " + Describe(b, mine[n]));
      }
      if (mine.size() != theirs.size()) {
        return sim::Status::InvalidArgument(pair + " but run " + std::to_string(theirs.size()) +
                                            " and " + std::to_string(mine.size()) +
                                            " collectives over them");
      }
    }
  }
  return sim::Status::Ok();
}

}  // namespace

std::vector<int> CollectiveSet(const CheckedSchedule& checked, const schedule::Op& op) {
  if (!op.group().empty()) return {-1 - checked.group_index.at(op.group())};
  std::vector<int> axes;
  for (const std::string& name : op.axes()) axes.push_back(checked.grid.AxisIndex(name));
  std::sort(axes.begin(), axes.end());
  return axes;
}

void CollectiveGroup(const schedule::Schedule& schedule, const CheckedSchedule& checked,
                     const std::vector<int>& set, uint32_t chip, std::vector<uint32_t>* ranks,
                     std::vector<int>* shape) {
  const int group = ScheduleGroup(set);
  if (group < 0) {
    checked.grid.Group(chip, set, ranks, shape);
    return;
  }
  const schedule::Group& g = schedule.groups(group);
  ranks->assign(g.chips().begin(), g.chips().end());
  if (g.shape().empty()) {
    *shape = {static_cast<int>(g.chips_size())};
  } else {
    shape->assign(g.shape().begin(), g.shape().end());
  }
}

std::string KernelProblem(const schedule::Op& op, const topology::ChipSpec& chip,
                          const ComputeEfficiency& efficiency) {
  if (op.kernel().empty()) return "";
  if (op.kind() == schedule::ATTENTION) {
    if (efficiency.AttentionCurveOf(op.kernel()) != nullptr) return "";
    return "kernel: no attention kernel '" + op.kernel() + "' calibrated for chip " + chip.name +
           " (family " + efficiency.family + ")";
  }
  if (!IsComputeKind(op.kind()) || op.kind() == schedule::MATMUL) {
    return "kernel: only attention and HBM-bound ops name a kernel";
  }
  if (IsHbmKernelClass(op.kernel())) return "";
  std::string known;
  for (std::string_view name : HbmKernelClasses()) {
    known += (known.empty() ? "" : ", ") + std::string(name);
  }
  return "kernel: '" + op.kernel() + "' is not an HBM kernel class (" + known + ")";
}

bool IsComputeKind(schedule::OpKind kind) {
  return kind != schedule::COLLECTIVE && kind != schedule::SEND && kind != schedule::RECV &&
         kind != schedule::OP_KIND_UNSPECIFIED;
}

sim::StatusOr<CheckedSchedule> CheckSchedule(const topology::System& system,
                                             const schedule::Schedule& schedule) {
  std::vector<topology::MeshAxis> axes;
  for (const schedule::MeshAxis& axis : schedule.mesh()) axes.push_back({axis.name(), axis.size()});
  if (axes.empty()) return sim::Status::InvalidArgument("schedule: mesh: no axes");
  const ComputeEfficiency efficiency = DefaultComputeEfficiency(system.chip);
  std::set<std::string> names;
  for (const topology::MeshAxis& axis : axes) {
    if (axis.name.empty())
      return sim::Status::InvalidArgument("schedule: mesh: an axis has no name");
    if (!names.insert(axis.name).second) {
      return sim::Status::InvalidArgument("schedule: mesh: axis '" + axis.name + "' twice");
    }
  }
  std::map<std::string, std::vector<std::string>> placements;
  for (const schedule::Placement& placement : schedule.placements()) {
    placements[placement.axis()].assign(placement.pieces().begin(), placement.pieces().end());
  }
  const std::vector<std::string> order(schedule.order().begin(), schedule.order().end());
  sim::StatusOr<MeshGrid> grid = MeshGrid::Make(system, axes, placements, order);
  if (!grid.ok()) return sim::Status::InvalidArgument("schedule: mesh: " + grid.status().message());
  CheckedSchedule checked{std::move(*grid), {}, {}, {}};
  const MeshGrid& g = checked.grid;
  if (schedule.programs().empty()) return sim::Status::InvalidArgument("schedule: no programs");
  if (schedule.tokens_per_step() < 0) {
    return sim::Status::InvalidArgument("schedule: tokens_per_step: must be >= 0 (got " +
                                        std::to_string(schedule.tokens_per_step()) + ")");
  }
  std::vector<std::vector<bool>> members;  // Per schedule group, per chip.
  for (int k = 0; k < schedule.groups_size(); ++k) {
    const schedule::Group& group = schedule.groups(k);
    const std::string at = "schedule: group " + std::to_string(k) + " '" + group.name() + "'";
    if (group.name().empty()) return sim::Status::InvalidArgument(at + ": name: missing");
    if (!checked.group_index.emplace(group.name(), k).second) {
      return sim::Status::InvalidArgument(at + ": name: a second group of that name");
    }
    if (group.chips().empty()) return sim::Status::InvalidArgument(at + ": chips: none");
    int64_t grid_size = 1;
    for (int32_t length : group.shape()) {
      if (length < 1) return sim::Status::InvalidArgument(at + ": shape: sizes must be >= 1");
      // Saturates at 2^40 (the product of int32 lengths overflows int64 otherwise).
      constexpr int64_t kMaxGrid = int64_t{1} << 40;
      grid_size = grid_size > kMaxGrid / length ? kMaxGrid : std::min(grid_size * length, kMaxGrid);
    }
    if (!group.shape().empty() && grid_size != group.chips_size()) {
      return sim::Status::InvalidArgument(at + ": shape: sizes multiply to " +
                                          std::to_string(grid_size) + ", not its " +
                                          std::to_string(group.chips_size()) + " chips");
    }
    std::vector<bool>& in = members.emplace_back(g.chip_count(), false);
    for (uint32_t chip : group.chips()) {
      if (chip >= g.chip_count()) {
        return sim::Status::InvalidArgument(at + ": chips: " + std::to_string(chip) +
                                            " is not a chip of the system (it has " +
                                            std::to_string(g.chip_count()) + ")");
      }
      if (in[chip]) {
        return sim::Status::InvalidArgument(at + ": chips: " + std::to_string(chip) + " twice");
      }
      in[chip] = true;
    }
  }

  // Where clauses as (axis index, coordinate) lists.
  std::vector<std::vector<std::pair<int, int>>> wheres;
  for (int p = 0; p < schedule.programs_size(); ++p) {
    const Program& program = schedule.programs(p);
    std::vector<std::pair<int, int>> where;
    for (const auto& [name, coord] : program.where()) {
      const int axis = g.AxisIndex(name);
      if (axis < 0) {
        return sim::Status::InvalidArgument(Where(program, p) + ": where: no mesh axis '" + name +
                                            "'");
      }
      if (coord < 0 || coord >= g.axes()[axis].size) {
        return sim::Status::InvalidArgument(Where(program, p) + ": where: " + name + "=" +
                                            std::to_string(coord) + " is outside the axis (size " +
                                            std::to_string(g.axes()[axis].size) + ")");
      }
      where.emplace_back(axis, coord);
    }
    wheres.push_back(std::move(where));
    if (!FiniteNonNegative(program.static_hbm_bytes()) ||
        program.static_hbm_bytes() > kMaxOpBytes) {
      return sim::Status::InvalidArgument(Where(program, p) +
                                          ": static_hbm_bytes: must be finite, >= 0 and <= 1e18");
    }
    for (int i = 0; i < program.ops_size(); ++i) {
      PODSIM_RETURN_IF_ERROR(
          CheckOp(program, p, i, g, checked.group_index, system.chip, efficiency));
    }
  }

  checked.program_of_chip.assign(g.chip_count(), -1);
  checked.chips_of_program.assign(schedule.programs_size(), 0);
  for (uint32_t chip = 0; chip < g.chip_count(); ++chip) {
    for (int p = 0; p < schedule.programs_size(); ++p) {
      bool match = true;
      for (const auto& [axis, coord] : wheres[p]) match = match && g.Coord(chip, axis) == coord;
      if (!match) continue;
      if (checked.program_of_chip[chip] >= 0) {
        return sim::Status::InvalidArgument(
            "schedule: chip " + std::to_string(chip) + " matches two programs, '" +
            schedule.programs(checked.program_of_chip[chip]).name() + "' and '" +
            schedule.programs(p).name() + "'");
      }
      checked.program_of_chip[chip] = p;
      ++checked.chips_of_program[p];
    }
    if (checked.program_of_chip[chip] < 0) {
      return sim::Status::InvalidArgument("schedule: chip " + std::to_string(chip) +
                                          " matches no program");
    }
  }

  // Every chip of a program with a collective over a schedule group is one of its members.
  std::vector<std::vector<std::pair<int, int>>> groups_of_program(schedule.programs_size());
  for (int p = 0; p < schedule.programs_size(); ++p) {
    for (int i = 0; i < schedule.programs(p).ops_size(); ++i) {
      const schedule::Op& op = schedule.programs(p).ops(i);
      if (op.kind() != schedule::COLLECTIVE || op.group().empty()) continue;
      std::vector<std::pair<int, int>>& used = groups_of_program[p];  // (group, first op)
      const int k = checked.group_index.at(op.group());
      if (std::none_of(used.begin(), used.end(), [k](const auto& u) { return u.first == k; })) {
        used.emplace_back(k, i);
      }
    }
  }
  for (uint32_t chip = 0; chip < g.chip_count(); ++chip) {
    const int p = checked.program_of_chip[chip];
    for (const auto& [k, i] : groups_of_program[p]) {
      if (members[k][chip]) continue;
      return sim::Status::InvalidArgument(
          At(schedule.programs(p), p, i) + ": group: the program runs on chip " +
          std::to_string(chip) + ", which is not a member of group '" + schedule.groups(k).name() +
          "'");
    }
  }

  // Sends and receives pair up, on every chip: a program's chips may have peers of several
  // programs along one axis and offset, and each of those must hold the matching op.
  using Endpoint = std::tuple<int, uint64_t, std::string, int>;  // program, tag, axis, offset
  std::map<Endpoint, int> sends;
  std::map<Endpoint, int> receives;
  for (int p = 0; p < schedule.programs_size(); ++p) {
    for (const schedule::Op& op : schedule.programs(p).ops()) {
      if (op.kind() == schedule::SEND) ++sends[{p, op.tag(), op.peer_axis(), op.peer_offset()}];
      if (op.kind() == schedule::RECV) ++receives[{p, op.tag(), op.peer_axis(), op.peer_offset()}];
    }
  }
  // The programs of the peers of program p's chips `offset` along `axis`, computed once each.
  std::map<std::tuple<int, int, int>, std::set<int>> peer_programs;
  auto peers_of = [&](int p, int axis, int offset) -> const std::set<int>& {
    auto [it, fresh] = peer_programs.try_emplace({p, axis, offset});
    if (fresh) {
      for (uint32_t chip = 0; chip < g.chip_count(); ++chip) {
        if (checked.program_of_chip[chip] != p) continue;
        const uint32_t peer = g.ChipWith(chip, axis, g.Coord(chip, axis) + offset);
        it->second.insert(checked.program_of_chip[peer]);
      }
    }
    return it->second;
  };
  // Every op of `mine` (sends or receives) needs exactly one op of `theirs` in each peer program.
  auto pair_up = [&](const std::map<Endpoint, int>& mine, const std::map<Endpoint, int>& theirs,
                     const char* kind, const char* other) -> sim::Status {
    for (const auto& [endpoint, count] : mine) {
      const auto& [p, tag, axis_name, offset] = endpoint;
      for (int q : peers_of(p, g.AxisIndex(axis_name), offset)) {
        auto it = theirs.find({q, tag, axis_name, -offset});
        const int found = it == theirs.end() ? 0 : it->second;
        if (count == 1 && found == 1) continue;
        return sim::Status::InvalidArgument(
            Where(schedule.programs(p), p) + ": " + kind + " tag " + std::to_string(tag) +
            " along '" + axis_name + "' offset " + std::to_string(offset) + " (" +
            std::to_string(count) + " in the program) needs exactly one " + other +
            " with that tag and peer_offset " + std::to_string(-offset) + " in program '" +
            schedule.programs(q).name() + "' (found " + std::to_string(found) + ")");
      }
    }
    return sim::Status::Ok();
  };
  PODSIM_RETURN_IF_ERROR(pair_up(sends, receives, "send", "receive"));
  PODSIM_RETURN_IF_ERROR(pair_up(receives, sends, "receive", "send"));
  PODSIM_RETURN_IF_ERROR(CheckGroupsAgree(schedule, checked));
  return checked;
}

}  // namespace podsim::workloads
