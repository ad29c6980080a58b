// The cells of a link heat map (charts.h LinkHeatMap) from a fabric and each link's utilisation.

#ifndef PODSIM_REPORTS_LINK_CELLS_H_
#define PODSIM_REPORTS_LINK_CELLS_H_

#include <string>
#include <vector>

#include "reports/charts.h"
#include "topology/fabric.h"

namespace podsim::reports {

// Heat maps larger than this are not drawn (an SVG of that many cells is slow to open).
inline constexpr size_t kMaxLinkCells = 120000;

struct LinkCells {
  std::vector<LinkCell> cells;
  std::string column_title;
  std::string row_title;
  std::string layout;  // How the cells are placed, for the caption.
};

// On a torus: for every chip and torus axis, the links to its +1 and -1 neighbours, one panel
// per direction, the column the chip's first coordinate and the row the others' (slices
// stacked). Elsewhere: one panel per link kind, its links in link order, 64 to a row. Empty
// cells when there would be more than kMaxLinkCells. REQUIRES: utilisation.size() ==
// fabric.link_count().
LinkCells LinkCellsOf(const topology::Fabric& fabric, const std::vector<double>& utilisation);

}  // namespace podsim::reports

#endif  // PODSIM_REPORTS_LINK_CELLS_H_
