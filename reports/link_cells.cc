#include "reports/link_cells.h"

#include <map>

namespace podsim::reports {
namespace {

constexpr int kLinksPerRow = 64;

std::string LinkLabel(const topology::Fabric& fabric, topology::LinkIndex index) {
  const topology::Link& link = fabric.link(index);
  std::string label = fabric.vertex_name(link.src);
  label += " -> ";
  label += fabric.vertex_name(link.dst);
  label += " (";
  label += topology::LinkKindName(link.kind);
  label += ")";
  return label;
}

}  // namespace

LinkCells LinkCellsOf(const topology::Fabric& fabric, const std::vector<double>& utilisation) {
  LinkCells out;
  if (const topology::TorusLayout* torus = fabric.torus(); torus != nullptr) {
    const std::vector<int>& shape = fabric.shape();
    const std::vector<std::string> names = fabric.AxisNames();
    const size_t cells = static_cast<size_t>(fabric.chip_count()) * shape.size() * 2;
    if (cells > kMaxLinkCells) return out;
    int rows_per_slice = 1;
    for (size_t axis = 1; axis < shape.size(); ++axis) rows_per_slice *= shape[axis];
    for (int direction : {1, -1}) {
      for (size_t axis = 0; axis < shape.size(); ++axis) {
        const std::string panel = (direction > 0 ? "+" : "-") + names[axis];
        for (uint32_t chip = 0; chip < fabric.chip_count(); ++chip) {
          std::optional<topology::LinkIndex> link =
              fabric.NeighborLink(chip, static_cast<int>(axis), direction);
          if (!link) continue;
          const std::vector<int> coord = fabric.ChipCoord(chip);
          int row = 0;
          for (size_t a = shape.size(); a-- > 1;) row = row * shape[a] + coord[a];
          row += fabric.SliceOf(chip) * rows_per_slice;
          out.cells.push_back({panel, coord[0], row, utilisation[*link], LinkLabel(fabric, *link)});
        }
      }
    }
    out.column_title = names[0];
    std::string rest;
    for (size_t axis = shape.size(); axis-- > 1;) {
      if (!rest.empty()) rest += ", ";
      rest += names[axis];
    }
    out.row_title = rest.empty() ? "" : rest;
    out.layout =
        "each cell a chip's link to its neighbour in the panel's direction, the "
        "column its " +
        names[0] + " coordinate" +
        (rest.empty() ? std::string() : ", the row its other coordinates (" + rest + ")");
    return out;
  }
  if (fabric.link_count() > kMaxLinkCells) return out;
  std::map<topology::LinkKind, int> placed;
  for (topology::LinkIndex index = 0; index < fabric.link_count(); ++index) {
    const topology::Link& link = fabric.link(index);
    const int n = placed[link.kind]++;
    out.cells.push_back({std::string(topology::LinkKindName(link.kind)), n % kLinksPerRow,
                         n / kLinksPerRow, utilisation[index], LinkLabel(fabric, index)});
  }
  out.column_title = "link (64 per row, in link order)";
  out.row_title = "";
  out.layout = "one panel per link kind, its links in the fabric's order, 64 to a row";
  return out;
}

}  // namespace podsim::reports
