// Mesh mapping: named logical mesh axes (dp, fsdp, tp, pp, sp, ...) placed on the physical axes
// of a system, giving each mesh axis its device groups and their physical extent.
//
// Physical axes, fastest links first: TPU x, y, z (ICI), then "slice" (DCN) with several slices;
// GPU "gpu" (inside the NVLink node) then "node" (InfiniBand); generic tori x, y, z; switch:N "x".
// Chip numbers are the mixed-radix number of the physical coordinates, first axis fastest.
//
// Automatic placement (as JAX's mesh_utils.create_device_mesh): mesh axes are taken from the one
// that needs the fastest links to the one that needs the least (tp, sp, cp, ep, fsdp, dp, pp; an
// unknown name ranks with dp; ties keep the caller's order), and each takes the next contiguous
// factor of the physical axes, fastest first: a size that divides what is left of the current
// physical axis takes that part of it; a size that is a multiple of it takes all of it and goes on
// to the next axis. Anything else cannot be placed contiguously and is an error (give the
// placement explicitly instead).
//
// Explicit placement names, per mesh axis, the physical pieces it takes in order, innermost first:
// "x" (the rest of x) or "x:4" (the next factor 4 of x).
//
// Groups list chips in ring order: a reflected (boustrophedon) walk over the physical pieces, so
// consecutive chips are physical neighbours whenever the pieces are.

#ifndef PODSIM_TOPOLOGY_MESH_MAPPING_H_
#define PODSIM_TOPOLOGY_MESH_MAPPING_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"
#include "topology/system.h"

namespace podsim::topology {

struct MeshAxis {
  std::string name;
  int size = 1;
};

struct PhysicalAxis {
  std::string name;  // "x", "y", "z", "slice", "gpu", "node".
  int size = 1;
  bool wraps = false;      // Has wraparound links (tori).
  bool scale_out = false;  // Crosses the scale-up domain (DCN, InfiniBand).
};

// A mesh axis's share of one physical axis.
struct AxisSpan {
  std::string physical_axis;
  int extent = 1;           // Chips of the group along this physical axis.
  int stride = 1;           // Spacing of those chips along the axis.
  bool whole_axis = false;  // extent == the axis length (so a torus wrap closes the group's ring).
  bool wraps = false;       // whole_axis and the physical axis wraps.
};

struct MeshAxisPlacement {
  std::string name;
  int size = 1;
  std::vector<AxisSpan> spans;  // Innermost first; empty for size 1.
  // A group leaves its scale-up domain: a GPU node (NVLink) or a TPU slice (ICI), using
  // InfiniBand or DCN.
  bool leaves_node = false;
  // size() == chips / size groups of `size` chips each, in ring order; groups ordered by their
  // smallest chip.
  std::vector<std::vector<uint32_t>> groups;
};

struct MeshMapping {
  std::vector<PhysicalAxis> physical_axes;
  std::vector<MeshAxisPlacement> axes;  // In the caller's order.
};

// The physical axes of a system, fastest first.
std::vector<PhysicalAxis> PhysicalAxes(const System& system);

// Parses "dp=2,fsdp=4,tp=8" (names unique, sizes >= 1).
sim::StatusOr<std::vector<MeshAxis>> ParseMeshAxes(std::string_view text);

// Places `axes` on `system`. `explicit_pieces` maps some or all mesh axes to physical pieces
// ("x", "y:4"); the others are placed automatically after them, those named in `order` first and
// in that order (so they take the fastest links left), then the rest by their need of fast links.
// Fails with InvalidArgument when the sizes do not multiply to the chip count, a name (in
// `explicit_pieces` or `order`) is not a mesh axis or repeats in `order`, or an axis cannot be
// placed.
sim::StatusOr<MeshMapping> MapMesh(
    const System& system, const std::vector<MeshAxis>& axes,
    const std::map<std::string, std::vector<std::string>>& explicit_pieces = {},
    const std::vector<std::string>& order = {});

}  // namespace podsim::topology

#endif  // PODSIM_TOPOLOGY_MESH_MAPPING_H_
