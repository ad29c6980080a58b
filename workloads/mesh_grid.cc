#include "workloads/mesh_grid.h"

#include <algorithm>

#include "sim/check.h"

namespace podsim::workloads {

sim::StatusOr<MeshGrid> MeshGrid::Make(
    const topology::System& system, const std::vector<topology::MeshAxis>& axes,
    const std::map<std::string, std::vector<std::string>>& placements,
    const std::vector<std::string>& order) {
  MeshGrid grid;
  PODSIM_ASSIGN_OR_RETURN(grid.mapping_, topology::MapMesh(system, axes, placements, order));
  grid.axes_ = axes;
  grid.chip_count_ = system.fabric.chip_count();
  const auto& physical = grid.mapping_.physical_axes;
  grid.place_.assign(physical.size(), 1);
  for (size_t p = 1; p < physical.size(); ++p) {
    grid.place_[p] = grid.place_[p - 1] * physical[p - 1].size;
  }
  for (const topology::MeshAxisPlacement& axis : grid.mapping_.axes) {
    std::vector<uint32_t> group(grid.chip_count_, 0);
    std::vector<int> position(grid.chip_count_, 0);
    for (size_t g = 0; g < axis.groups.size(); ++g) {
      for (size_t i = 0; i < axis.groups[g].size(); ++i) {
        group[axis.groups[g][i]] = static_cast<uint32_t>(g);
        position[axis.groups[g][i]] = static_cast<int>(i);
      }
    }
    grid.group_.push_back(std::move(group));
    grid.position_.push_back(std::move(position));
  }
  return grid;
}

int MeshGrid::AxisIndex(std::string_view name) const {
  for (size_t i = 0; i < axes_.size(); ++i) {
    if (axes_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

uint32_t MeshGrid::ChipWith(uint32_t chip, int axis, int coord) const {
  PODSIM_CHECK(coord >= 0 && coord < axes_[axis].size)
      << "coordinate " << coord << " outside mesh axis " << axes_[axis].name;
  return mapping_.axes[axis].groups[group_[axis][chip]][coord];
}

void MeshGrid::Group(uint32_t chip, const std::vector<int>& axes, std::vector<uint32_t>* ranks,
                     std::vector<int>* shape) const {
  const auto& physical = mapping_.physical_axes;
  struct Piece {
    int64_t place;  // Chip-number step of one index along the piece.
    int length;
    int own;  // `chip`'s index along the piece.
  };
  std::vector<Piece> pieces;
  for (int axis : axes) {
    for (const topology::AxisSpan& span : mapping_.axes[axis].spans) {
      size_t p = 0;
      while (physical[p].name != span.physical_axis) ++p;
      const int64_t coord = (chip / place_[p]) % physical[p].size;
      pieces.push_back(Piece{span.stride * place_[p], span.extent,
                             static_cast<int>((coord / span.stride) % span.extent)});
    }
  }
  int64_t base = chip;
  int64_t count = 1;
  shape->clear();
  for (const Piece& piece : pieces) {
    base -= piece.own * piece.place;
    count *= piece.length;
    shape->push_back(piece.length);
  }
  ranks->clear();
  ranks->reserve(count);
  for (int64_t l = 0; l < count; ++l) {
    int64_t rest = l;
    int64_t member = base;
    for (const Piece& piece : pieces) {
      member += (rest % piece.length) * piece.place;
      rest /= piece.length;
    }
    ranks->push_back(static_cast<uint32_t>(member));
  }
}

}  // namespace podsim::workloads
