#include "workloads/step_symmetry.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "collectives/collective_runner.h"
#include "collectives/fabric_symmetry.h"
#include "workloads/step_collectives.h"

namespace podsim::workloads {

namespace {

using collectives::FabricSymmetry;

// Checks translations against one step's workload (step_symmetry.h).
class SymmetryCheck {
 public:
  SymmetryCheck(const topology::System& system, const schedule::Schedule& schedule,
                const CheckedSchedule& checked, std::vector<int> slot_radix,
                std::vector<int> node_radix)
      : system_(system),
        checked_(checked),
        symmetry_(&system.fabric, std::move(slot_radix), std::move(node_radix)) {
    const MeshGrid& grid = checked.grid;
    for (int p = 0; p < schedule.programs_size(); ++p) {
      const schedule::Program& program = schedule.programs(p);
      for (const schedule::Op& op : program.ops()) {
        if (op.kind() == schedule::SEND) {
          const auto send = std::make_tuple(p, grid.AxisIndex(op.peer_axis()),
                                            static_cast<int>(op.peer_offset()));
          if (std::find(sends_.begin(), sends_.end(), send) == sends_.end()) sends_.push_back(send);
        }
        if (op.kind() != schedule::COLLECTIVE) continue;
        Class cls{p, {}, &op};
        for (const std::string& name : op.axes()) cls.axes.push_back(grid.AxisIndex(name));
        std::sort(cls.axes.begin(), cls.axes.end());
        const bool known = std::any_of(classes_.begin(), classes_.end(), [&](const Class& c) {
          return c.program == p && c.axes == cls.axes && c.op->collective() == op.collective() &&
                 c.op->bytes() == op.bytes();
        });
        if (!known) classes_.push_back(std::move(cls));
      }
    }
    index_in_.assign(grid.chip_count(), -1);
  }

  // Distinct collectives checked per shift.
  size_t classes() const { return classes_.size(); }
  const FabricSymmetry& symmetry() const { return symmetry_; }

  // Whether `shift` maps the workload onto itself.
  sim::StatusOr<bool> Preserves(const FabricSymmetry::Shift& shift) {
    const MeshGrid& grid = checked_.grid;
    const uint32_t n = grid.chip_count();
    std::vector<uint32_t> image(n);
    for (uint32_t c = 0; c < n; ++c) {
      image[c] = symmetry_.ApplyToVertex(c, shift);
      if (checked_.program_of_chip[image[c]] != checked_.program_of_chip[c]) return false;
    }
    for (const auto& [program, axis, offset] : sends_) {
      for (uint32_t c = 0; c < n; ++c) {
        if (checked_.program_of_chip[c] != program) continue;
        const uint32_t peer = grid.ChipWith(c, axis, grid.Coord(c, axis) + offset);
        const uint32_t t = image[c];
        if (grid.ChipWith(t, axis, grid.Coord(t, axis) + offset) != image[peer]) return false;
      }
    }
    for (size_t k = 0; k < classes_.size(); ++k) {
      PODSIM_ASSIGN_OR_RETURN(bool maps, MapsGroups(k, image));
      if (!maps) return false;
    }
    return true;
  }

 private:
  struct Class {  // Distinct collectives of a program: axes, kind and bytes.
    int program;
    std::vector<int> axes;
    const schedule::Op* op;
  };

  // Whether every group of class k maps onto a group whose rank grid is its own, unchanged or
  // rotated along dimensions the collective is invariant under.
  sim::StatusOr<bool> MapsGroups(size_t k, const std::vector<uint32_t>& image) {
    const Class& cls = classes_[k];
    const MeshGrid& grid = checked_.grid;
    std::vector<bool> seen(grid.chip_count(), false);
    std::vector<uint32_t> ranks, to;
    std::vector<int> shape, to_shape;
    for (uint32_t c = 0; c < grid.chip_count(); ++c) {
      if (seen[c] || checked_.program_of_chip[c] != cls.program) continue;
      grid.Group(c, cls.axes, &ranks, &shape);
      for (uint32_t member : ranks) seen[member] = true;
      if (shape.empty()) shape.push_back(static_cast<int>(ranks.size()));
      grid.Group(image[ranks.front()], cls.axes, &to, &to_shape);
      if (to_shape.empty()) to_shape.push_back(static_cast<int>(to.size()));
      if (to_shape != shape) return false;
      for (size_t i = 0; i < to.size(); ++i) index_in_[to[i]] = static_cast<int64_t>(i);
      sim::StatusOr<bool> maps = MapsInOrder(k, ranks, shape, image);
      for (uint32_t member : to) index_in_[member] = -1;
      if (!maps.ok() || !*maps) return maps;
    }
    return true;
  }

  // With index_in_ holding the image group's rank order: whether the images of `ranks` (a group
  // of class k) sit at their own grid positions shifted by one offset, zero along dimensions the
  // collective is not invariant under. Which those are is asked only of a nonzero offset.
  sim::StatusOr<bool> MapsInOrder(size_t k, const std::vector<uint32_t>& ranks,
                                  const std::vector<int>& shape,
                                  const std::vector<uint32_t>& image) {
    const int64_t first = index_in_[image[ranks.front()]];
    if (first < 0) return false;
    std::vector<int64_t> offset(shape.size());
    int64_t rest = first;
    for (size_t d = 0; d < shape.size(); ++d) {
      offset[d] = rest % shape[d];
      rest /= shape[d];
    }
    if (first != 0) {
      PODSIM_ASSIGN_OR_RETURN(const std::vector<bool>* rotatable, Rotatable(k, ranks, shape));
      for (size_t d = 0; d < shape.size(); ++d) {
        if (offset[d] != 0 && !(*rotatable)[d]) return false;
      }
    }
    for (size_t i = 0; i < ranks.size(); ++i) {
      int64_t expected = 0, place = 1, index = static_cast<int64_t>(i);
      for (size_t d = 0; d < shape.size(); ++d) {
        expected += ((index % shape[d] + offset[d]) % shape[d]) * place;
        index /= shape[d];
        place *= shape[d];
      }
      if (index_in_[image[ranks[i]]] != expected) return false;
    }
    return true;
  }

  sim::StatusOr<const std::vector<bool>*> Rotatable(size_t k, const std::vector<uint32_t>& ranks,
                                                    const std::vector<int>& shape) {
    auto key = std::make_pair(k, ranks.front());
    auto it = rotatable_.find(key);
    if (it != rotatable_.end()) return &it->second;
    collectives::CollectiveRequest request = GroupRequest(system_, *classes_[k].op, ranks, shape);
    request.rank_shape = shape;
    PODSIM_ASSIGN_OR_RETURN(std::vector<bool> dims,
                            collectives::RotatableDims(system_.fabric, request));
    return &rotatable_.emplace(key, std::move(dims)).first->second;
  }

  const topology::System& system_;
  const CheckedSchedule& checked_;
  FabricSymmetry symmetry_;
  std::vector<std::tuple<int, int, int>> sends_;  // (program, axis, offset)
  std::vector<Class> classes_;
  std::map<std::pair<size_t, uint32_t>, std::vector<bool>> rotatable_;  // (class, first rank)
  std::vector<int64_t> index_in_;  // Per chip: its rank in the image group, or -1.
};

// The digits of `length` consecutive units of `unit` chips (a node's slots, an SU's nodes) that
// the mesh's placement suggests: the boundaries where a mesh axis starts or ends inside them
// (tp=4 of 8 GPUs: slot = i + 4 q; pipeline stages of 16 nodes in an SU of 32: node = a + 16 b),
// so that an axis shorter than them rotates alone. Any digits give fabric symmetries
// (fabric_symmetry.h); these only make the step's more likely. Empty when the placement suggests
// none beyond the whole.
std::vector<int> SuggestedRadix(const MeshGrid& grid, int64_t unit, int length) {
  std::vector<int64_t> bounds = {1, length};
  for (size_t a = 0; a < grid.axes().size(); ++a) {
    const int size = grid.axes()[a].size;
    if (size <= 1) continue;
    const int64_t stride = static_cast<int64_t>(grid.ChipWith(0, static_cast<int>(a), 1)) -
                           static_cast<int64_t>(grid.ChipWith(0, static_cast<int>(a), 0));
    if (stride % unit != 0) continue;
    for (int64_t bound : {stride / unit, stride / unit * size}) {
      if (bound > 1 && bound < length && length % bound == 0) bounds.push_back(bound);
    }
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  std::vector<int> radix;
  int64_t below = 1;
  for (size_t b = 1; b < bounds.size(); ++b) {
    if (bounds[b] % below != 0) continue;  // Not a chain of divisors: that boundary is dropped.
    radix.push_back(static_cast<int>(bounds[b] / below));
    below = bounds[b];
  }
  if (radix.size() <= 1) return {};
  return radix;
}

}  // namespace

sim::StatusOr<collectives::TranslationGroup> FindStepSymmetry(const topology::System& system,
                                                              const schedule::Schedule& schedule,
                                                              const CheckedSchedule& checked) {
  const topology::Fabric& fabric = system.fabric;
  collectives::TranslationGroup trivial(&fabric);
  // Schedule groups name chips (traces recorded elsewhere): not searched for symmetry.
  if (schedule.groups_size() > 0 || !FabricSymmetry(&fabric).has_axes()) return trivial;
  // The slot axis whole, then (GPU systems) in the digits the placement suggests; likewise the
  // node-in-SU axis where nodes are digits (fabric_symmetry.h). The largest group wins, the
  // whole axes on a tie.
  std::vector<std::vector<int>> slot_radices = {{}}, node_radices = {{}};
  if (const topology::GpuLayout* g = fabric.gpu(); g != nullptr) {
    std::vector<int> slots = SuggestedRadix(checked.grid, 1, g->gpus_per_node);
    if (!slots.empty()) slot_radices.push_back(std::move(slots));
    if (FabricSymmetry(&fabric).unit_digits()) {
      std::vector<int> nodes = SuggestedRadix(checked.grid, g->gpus_per_node, g->nodes_per_su);
      if (!nodes.empty()) node_radices.push_back(std::move(nodes));
    }
  }
  // Each candidate shift walks every chip once per distinct collective: bounded before it is
  // spent (a schedule of many distinct collectives on a large fabric), per candidate. A candidate
  // past the bound is not tried; with none left the group is trivial, which simulates every
  // chip: still exact, and the step's own bounds then apply.
  constexpr double kMaxCheckWork = 2e8;
  collectives::TranslationGroup best = trivial;
  for (const std::vector<int>& node_radix : node_radices) {
    // A node shift (slots unmoved) is the same permutation whatever the slot digits: checked for
    // the first slot digits tried, reused by the next (only GPU systems have a second).
    std::optional<std::vector<int>> node_steps;
    for (const std::vector<int>& slot_radix : slot_radices) {
      SymmetryCheck check(system, schedule, checked, slot_radix, node_radix);
      const FabricSymmetry& symmetry = check.symmetry();
      std::vector<int> steps = symmetry.axis_lengths();
      // The node axes (one, or a fat tree's digits) follow the slot digits on GPU systems.
      const size_t first_node =
          fabric.gpu() != nullptr ? symmetry.slot_radix().size() : steps.size();
      const auto reused = [&](size_t a) { return a >= first_node && node_steps.has_value(); };
      double shifts = 0;
      for (size_t a = 0; a < steps.size(); ++a) {
        if (reused(a)) continue;
        for (int d = 1; d < steps[a]; ++d) shifts += symmetry.AllowsStep(a, d);
      }
      if (shifts * static_cast<double>(check.classes() + 1) * checked.grid.chip_count() >
          kMaxCheckWork) {
        continue;
      }
      for (size_t a = 0; a < steps.size(); ++a) {
        if (reused(a)) {
          steps[a] = (*node_steps)[a - first_node];
          continue;
        }
        const int length = steps[a];
        for (int d = 1; d < length; ++d) {
          if (!symmetry.AllowsStep(a, d)) continue;
          FabricSymmetry::Shift shift{std::vector<int>(steps.size(), 0)};
          shift.delta[a] = d;
          PODSIM_ASSIGN_OR_RETURN(bool preserves, check.Preserves(shift));
          if (preserves) {
            steps[a] = d;
            break;
          }
        }
      }
      node_steps.emplace(steps.begin() + static_cast<std::ptrdiff_t>(first_node), steps.end());
      std::optional<collectives::TranslationGroup> group = collectives::TranslationGroup::OfSteps(
          &fabric, steps, symmetry.slot_radix(), symmetry.node_radix());
      if (group && group->size() > best.size()) best = *group;
    }
  }
  return best;
}

}  // namespace podsim::workloads
