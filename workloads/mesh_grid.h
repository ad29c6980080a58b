// MeshGrid: where each chip sits in the logical mesh of a layout, and the groups of chips that
// a collective over some mesh axes spans (topology/mesh_mapping.h places the axes).
//
// A chip's coordinate on a mesh axis is its position in its group's ring order (the mapping's
// reflected walk), so coordinates k and k+1 are physical neighbours whenever the axis's pieces
// are: pipeline stages hand activations to a neighbour.

#ifndef PODSIM_WORKLOADS_MESH_GRID_H_
#define PODSIM_WORKLOADS_MESH_GRID_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"
#include "topology/mesh_mapping.h"
#include "topology/system.h"

namespace podsim::workloads {

class MeshGrid {
 public:
  // Maps `axes` on `system` (MapMesh's errors pass through).
  static sim::StatusOr<MeshGrid> Make(
      const topology::System& system, const std::vector<topology::MeshAxis>& axes,
      const std::map<std::string, std::vector<std::string>>& placements = {},
      const std::vector<std::string>& order = {});

  // Index of the mesh axis named `name`, or -1.
  int AxisIndex(std::string_view name) const;
  const std::vector<topology::MeshAxis>& axes() const { return axes_; }
  const topology::MeshMapping& mapping() const { return mapping_; }
  uint32_t chip_count() const { return chip_count_; }

  // The chip's coordinate on mesh axis `axis` (an AxisIndex).
  int Coord(uint32_t chip, int axis) const { return position_[axis][chip]; }
  // The chip whose coordinates are `chip`'s except `coord` on `axis`. REQUIRES: 0 <= coord <
  // the axis's size.
  uint32_t ChipWith(uint32_t chip, int axis, int coord) const;

  // The chips agreeing with `chip` on every mesh axis outside `axes`, in mixed-radix order of
  // the physical pieces those axes take (first piece fastest), and the lengths of those pieces:
  // the rank grid of collectives::CollectiveRequest::rank_shape.
  void Group(uint32_t chip, const std::vector<int>& axes, std::vector<uint32_t>* ranks,
             std::vector<int>* shape) const;

 private:
  std::vector<topology::MeshAxis> axes_;
  topology::MeshMapping mapping_;
  uint32_t chip_count_ = 0;
  std::vector<int64_t> place_;                // Chip-number place value of each physical axis.
  std::vector<std::vector<uint32_t>> group_;  // [axis][chip]: index into mapping_.axes[axis].groups
  std::vector<std::vector<int>> position_;    // [axis][chip]: position in that group.
};

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_MESH_GRID_H_
