// Report: one self-contained HTML file of charts (`--report FILE.html` on train, replay, infer,
// collective and sweep). The page inlines Vega (vega_bundle.h) and every chart's Vega 5 spec with
// its data, so it opens with no network; each chart renders as SVG. When every chart has
// rendered the page sets data-rendered="N" on <body> and logs "podsim report: rendered N
// charts"; a chart that fails sets data-error and logs the error (tests/report_test.py reads
// both in a headless Chromium).
//
// Deterministic: the same report gives the same bytes.

#ifndef PODSIM_REPORTS_REPORT_H_
#define PODSIM_REPORTS_REPORT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sim/status.h"

namespace podsim::reports {

// One chart: a heading, a caption saying what it shows and how it was measured (approximations
// and truncations declared there), and a Vega 5 spec with its data inlined.
struct Chart {
  std::string title;
  std::string caption;
  nlohmann::ordered_json spec;
};

class Report {
 public:
  // `command`: the podsim command line that reproduces the report, shown under the title.
  Report(std::string title, std::string command);

  // A row of the summary table at the top ("step time", "1.25 s").
  void AddFact(std::string name, std::string value);
  // A line of text between the summary and the charts (warnings, the accuracy line).
  void AddNote(std::string text);
  void AddChart(Chart chart);

  size_t chart_count() const { return charts_.size(); }
  std::string Html() const;

 private:
  std::string title_;
  std::string command_;
  std::vector<std::pair<std::string, std::string>> facts_;
  std::vector<std::string> notes_;
  std::vector<Chart> charts_;
};

// The report's file name must end in .html or .htm: InvalidArgument naming it otherwise.
sim::Status CheckReportPath(const std::string& path);

// Writes the report whole or not at all (sim/atomic_file.h).
sim::Status WriteReport(const std::string& path, const Report& report);

}  // namespace podsim::reports

#endif  // PODSIM_REPORTS_REPORT_H_
