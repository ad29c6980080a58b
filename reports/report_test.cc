#include "reports/report.h"

#include <gtest/gtest.h>

#include <string>

#include "reports/charts.h"
#include "reports/link_cells.h"
#include "reports/step_report.h"
#include "reports/vega_bundle.h"
#include "topology/system.h"

namespace podsim::reports {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

Report SmallReport(const std::string& caption) {
  Report report("podsim: a test", "podsim train --system x");
  report.AddFact("step time", "1 s");
  report.AddChart(BreakdownChart({{"compute", 0.7}, {"exposed tp", 0.3}}, 1.0, caption));
  report.AddChart(MemoryChart({{"params", 1e9}, {"activations", 2e9}}, 16e9, "memory"));
  return report;
}

TEST(ReportTest, InlinesVegaOnceAndEverySpec) {
  const std::string html = SmallReport("caption").Html();
  EXPECT_EQ(Count(html, std::string(VegaBundle().substr(0, 200))), 1u);
  EXPECT_EQ(Count(html, "<div id=\"podsim-chart-"), 2u);
  EXPECT_EQ(Count(html, "\"$schema\""), 2u);
  // Nothing is fetched when the page is viewed: no script or stylesheet comes from elsewhere.
  EXPECT_EQ(Count(html, "<script src"), 0u);
  EXPECT_EQ(Count(html, "<img"), 0u);
  EXPECT_EQ(Count(html, "<link"), 0u);
}

TEST(ReportTest, TextAndDataCannotEndTheScriptOrInjectMarkup) {
  const std::string evil = "</script><script>alert(1)</script><b>";
  Report report = SmallReport(evil);
  report.AddChart(ParetoChart({{evil, 1, 1e9, true}}, 16e9, "x"));
  const std::string html = report.Html();
  EXPECT_EQ(Count(html, "alert(1)</script>"), 0u);
  EXPECT_EQ(Count(html, "<b>"), 0u);
  EXPECT_GE(Count(html, "&lt;/script&gt;"), 1u);
  EXPECT_GE(Count(html, "\\u003c/script>"), 1u);
}

TEST(ReportTest, SameReportSameBytes) {
  EXPECT_EQ(SmallReport("c").Html(), SmallReport("c").Html());
}

TEST(ReportTest, PathMustBeHtml) {
  EXPECT_TRUE(CheckReportPath("a/report.html").ok());
  EXPECT_TRUE(CheckReportPath("r.htm").ok());
  const sim::Status status = CheckReportPath("report.json");
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("report.json"), std::string::npos);
  EXPECT_FALSE(CheckReportPath(".html").ok());
}

TEST(ReportTest, ParetoFrontKeepsOnlyLayoutsNoOtherBeatsOnBoth) {
  const Chart chart = ParetoChart({{"a", 1.0, 10e9, true},    // front: smallest
                                   {"b", 0.5, 20e9, true},    // front: faster
                                   {"c", 0.8, 30e9, true},    // b is faster and smaller
                                   {"d", 0.2, 90e9, false}},  // front: fastest
                                  80e9, "");
  const auto& layouts = chart.spec["data"][0]["values"];
  ASSERT_EQ(layouts.size(), 4u);
  EXPECT_TRUE(layouts[0]["front"]);
  EXPECT_TRUE(layouts[1]["front"]);
  EXPECT_FALSE(layouts[2]["front"]);
  EXPECT_TRUE(layouts[3]["front"]);
  EXPECT_EQ(chart.spec["data"][1]["values"].size(), 3u);
}

// A 4x4 v5e slice does not wrap: 3 links per row or column in each direction.
TEST(LinkCellsTest, TorusHasACellPerChipAxisAndDirection) {
  sim::StatusOr<topology::System> system = topology::ParseSystem("tpu-v5e:4x4");
  ASSERT_TRUE(system.ok()) << system.status().message();
  std::vector<double> utilisation(system->fabric.link_count(), 0.25);
  const LinkCells cells = LinkCellsOf(system->fabric, utilisation);
  EXPECT_EQ(cells.cells.size(), 2u * 2u * 4u * 3u);
  for (const LinkCell& cell : cells.cells) {
    EXPECT_LT(cell.column, 4);
    EXPECT_LT(cell.row, 4);
    EXPECT_EQ(cell.utilisation, 0.25);
  }
}

TEST(LinkCellsTest, OtherFabricsGetAPanelPerLinkKind) {
  sim::StatusOr<topology::System> system = topology::ParseSystem("h100:16");
  ASSERT_TRUE(system.ok()) << system.status().message();
  std::vector<double> utilisation(system->fabric.link_count(), 0);
  const LinkCells cells = LinkCellsOf(system->fabric, utilisation);
  EXPECT_EQ(cells.cells.size(), system->fabric.link_count());
}

TEST(StepRecorderTest, RecordsEachOpOnceWithItsStart) {
  StepRecorder recorder;
  recorder.OnOpStart(sim::Time::Nanoseconds(10), 3, 0, 1);
  recorder.OnOpEnd(sim::Time::Nanoseconds(30), 3, 0, 1);
  ASSERT_EQ(recorder.runs().size(), 1u);
  EXPECT_EQ(recorder.runs()[0].chip, 3u);
  EXPECT_DOUBLE_EQ(recorder.runs()[0].start_s, 10e-9);
  EXPECT_DOUBLE_EQ(recorder.runs()[0].end_s, 30e-9);
  EXPECT_EQ(recorder.finished(), 1u);
}

}  // namespace
}  // namespace podsim::reports
