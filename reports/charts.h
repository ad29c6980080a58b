// The reports' charts as Vega 5 specs with their data inlined (report.h). Each builder takes
// plain rows, so any command can draw them; the captions say what was measured.

#ifndef PODSIM_REPORTS_CHARTS_H_
#define PODSIM_REPORTS_CHARTS_H_

#include <string>
#include <vector>

#include "reports/report.h"

namespace podsim::reports {

// One op on one stream of one chip, in seconds from the step's start.
struct Span {
  std::string lane;  // "chip 0 (stage 0) compute"
  std::string name;
  std::string kind;  // Colour: "compute", "all-gather", "send", ...
  double start_s = 0;
  double end_s = 0;
};
// Lanes in the order given (their first appearance in `spans` if `lanes` is empty).
Chart TimelineChart(const std::vector<Span>& spans, std::vector<std::string> lanes,
                    std::string caption);

// Where the time went: one bar per part, `total_s` the whole (percentages).
struct Part {
  std::string name;
  double seconds = 0;
};
Chart BreakdownChart(const std::vector<Part>& parts, double total_s, std::string caption);

// Memory per chip by category against the chip's HBM.
struct MemoryPart {
  std::string name;
  double bytes = 0;
};
Chart MemoryChart(const std::vector<MemoryPart>& parts, double hbm_bytes, std::string caption);

// Compute ops against the chip's roofs: arithmetic intensity (FLOPs per HBM byte) and achieved
// FLOP/s, each op a point sized by its time.
struct RooflinePoint {
  std::string name;
  double flops = 0;
  double hbm_bytes = 0;
  double seconds = 0;
  int count = 1;  // Ops merged into the point (same name).
};
Chart RooflineChart(const std::vector<RooflinePoint>& points, double peak_flops_per_s,
                    double hbm_bytes_per_s, std::string caption);

// Mean utilisation of a link's line rate over the run, on a grid: on a torus, `column` and
// `row` place the link's source chip and `panel` is its direction ("+x"); elsewhere a row per
// link tier and a column per link.
struct LinkCell {
  std::string panel;
  int column = 0;
  int row = 0;
  double utilisation = 0;
  std::string label;  // "chip 3 -> chip 4 (ici)"
};
Chart LinkHeatMap(const std::vector<LinkCell>& cells, std::string column_title,
                  std::string row_title, std::string caption);

// A collective's bandwidths against message size (log-log).
struct BandwidthPoint {
  double bytes = 0;
  double algbw_bytes_per_s = 0;
  double busbw_bytes_per_s = 0;
};
Chart BandwidthChart(const std::vector<BandwidthPoint>& points, std::string caption);

// A sweep's layouts: step time against memory per chip, the Pareto front (no layout both faster
// and smaller) drawn as a line.
struct LayoutPoint {
  std::string layout;
  double step_s = 0;
  double memory_bytes = 0;
  bool fits = true;
};
Chart ParetoChart(const std::vector<LayoutPoint>& points, double hbm_bytes, std::string caption);

}  // namespace podsim::reports

#endif  // PODSIM_REPORTS_CHARTS_H_
