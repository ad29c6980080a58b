// The records podsim prints with its predictions are docs/validation.md's summary, figure for
// figure, and the line states them.

#include "workloads/measured_accuracy.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace podsim::workloads {
namespace {

// The cells of a markdown table row: "| a | b |" -> {"a", "b"}.
std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line.substr(1));
  std::string cell;
  while (std::getline(in, cell, '|')) {
    const size_t first = cell.find_first_not_of(' ');
    const size_t last = cell.find_last_not_of(' ');
    cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
  }
  return cells;
}

// The summary's tables: per family name and workload ("memory" for the memory table), the cells
// rows, mean absolute error, bias and worst.
std::map<std::pair<std::string, std::string>, std::vector<std::string>> SummaryOfTheDoc() {
  std::ifstream doc(PODSIM_VALIDATION_DOC);
  EXPECT_TRUE(doc.good()) << PODSIM_VALIDATION_DOC;
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> summary;
  std::string line;
  bool in_summary = false, memory = false;
  while (std::getline(doc, line)) {
    if (line.starts_with("## ")) in_summary = line.starts_with("## Summary");
    if (!in_summary) continue;
    if (line.starts_with("Memory per chip")) memory = true;
    if (!line.starts_with("| ") || line.starts_with("| chip family")) continue;
    const std::vector<std::string> cells = Cells(line);
    if (cells.size() < 6 || cells[0] == "all" || cells[1] == "all") continue;
    summary[{cells[0], memory ? "memory" : cells[1]}] = {cells[2], cells[3], cells[4], cells[5]};
  }
  return summary;
}

std::string Pct(double value, bool sign) {
  char text[32];
  std::snprintf(text, sizeof text, sign ? "%+.1f%%" : "%.1f%%", value);
  return text;
}

TEST(MeasuredAccuracyTest, RecordsAreTheSummaryOfDocsValidation) {
  const auto summary = SummaryOfTheDoc();
  ASSERT_FALSE(summary.empty());
  const std::map<std::string, std::string> families = {{"A100", "a100"},
                                                       {"H100 / H200", "hopper"},
                                                       {"B200 / GB200", "blackwell"},
                                                       {"TPU v5e", "tpu-v5e"}};
  int compared = 0;
  for (const auto& [key, cells] : summary) {
    const auto family = families.find(key.first);
    if (family == families.end()) continue;  // Rows of no chip family (the book's unstated one).
    const MeasuredAccuracy* record = FindMeasuredAccuracy(family->second, key.second);
    ASSERT_NE(record, nullptr) << key.first << " " << key.second;
    EXPECT_EQ(record->name, key.first);
    EXPECT_EQ(std::to_string(record->rows), cells[0]) << key.first << " " << key.second;
    EXPECT_EQ(Pct(record->mean_abs_error_pct, false), cells[1]) << key.first << " " << key.second;
    EXPECT_EQ(Pct(record->bias_pct, true), cells[2]) << key.first << " " << key.second;
    EXPECT_EQ(Pct(record->worst_pct, false), cells[3]) << key.first << " " << key.second;
    ++compared;
  }
  EXPECT_GE(compared, 5);
}

TEST(MeasuredAccuracyTest, TheLineStatesTheRecordOrItsAbsence) {
  const MeasuredAccuracy* hopper = FindMeasuredAccuracy("hopper", "training");
  ASSERT_NE(hopper, nullptr);
  const std::string line = DescribeMeasuredAccuracy("hopper", "training");
  EXPECT_NE(line.find("on " + std::to_string(hopper->rows) + " published H100 / H200 training"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("mean error " + Pct(hopper->mean_abs_error_pct, false)), std::string::npos)
      << line;
  EXPECT_NE(line.find("bias " + Pct(hopper->bias_pct, true)), std::string::npos) << line;
  EXPECT_NE(line.find(hopper->bias_pct < 0 ? "(too fast)" : "(too slow)"), std::string::npos)
      << line;
  // Training lines carry the family's memory record where it has one.
  if (FindMeasuredAccuracy("hopper", "memory") != nullptr) {
    EXPECT_NE(line.find("memory per chip"), std::string::npos) << line;
  }
  EXPECT_EQ(DescribeMeasuredAccuracy("hopper", "collectives").find("memory"), std::string::npos);
  // Families and workloads no validation row measures say so.
  EXPECT_EQ(FindMeasuredAccuracy("tpu", "training"), nullptr);
  EXPECT_TRUE(DescribeMeasuredAccuracy("tpu", "training").starts_with("none: "));
  EXPECT_TRUE(DescribeMeasuredAccuracy("ideal", "inference").starts_with("none: "));
}

}  // namespace
}  // namespace podsim::workloads
