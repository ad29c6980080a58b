// The records podsim prints with its predictions are docs/validation.md's summary, figure for
// figure and both ways, and the line states them.

#include "workloads/measured_accuracy.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
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

using Key = std::tuple<std::string, std::string, std::string>;  // Family name, workload, framework.

// The summary's rows per family name and workload ("memory" for the memory table's training
// rows), framework "", and the table per chip family and framework's (workload "training"): the
// cells rows, mean absolute error, bias and worst, as printed.
std::map<Key, std::vector<std::string>> SummaryOfTheDoc() {
  std::ifstream doc(PODSIM_VALIDATION_DOC);
  EXPECT_TRUE(doc.good()) << PODSIM_VALIDATION_DOC;
  std::map<Key, std::vector<std::string>> summary;
  std::string line;
  bool in_summary = false, memory = false, per_framework = false;
  while (std::getline(doc, line)) {
    if (line.starts_with("## ")) {
      in_summary = line.starts_with("## Summary");
      per_framework = false;
    }
    if (line.starts_with("Per chip family and framework")) per_framework = true;
    if (line.starts_with("Memory per chip")) memory = true;
    if (!(in_summary || per_framework) || !line.starts_with("| ") ||
        line.starts_with("| chip family")) {
      continue;
    }
    const std::vector<std::string> cells = Cells(line);
    if (cells.size() < 6 || cells[0] == "all" || cells[1] == "all") continue;
    if (per_framework) {
      summary[{cells[0], "training", cells[1]}] = {cells[2], cells[3], cells[4], cells[5]};
      continue;
    }
    if (memory && cells[1] != "training") continue;
    summary[{cells[0], memory ? "memory" : cells[1], ""}] = {cells[2], cells[3], cells[4],
                                                             cells[5]};
  }
  return summary;
}

// As the summary prints a fraction: "16.9%", "-10.2%" with `sign`.
std::string AsPrinted(double fraction, bool sign) {
  char text[32];
  std::snprintf(text, sizeof text, sign ? "%+.1f%%" : "%.1f%%", 100 * fraction);
  return text;
}

TEST(MeasuredAccuracyTest, RecordsAreTheSummaryOfDocsValidation) {
  auto summary = SummaryOfTheDoc();
  ASSERT_FALSE(summary.empty());
  for (const MeasuredAccuracy& record : MeasuredAccuracyRecords()) {
    const std::string name(MeasuredFamilyName(record.family));
    const auto row =
        summary.find({name, std::string(record.workload), std::string(record.framework)});
    ASSERT_NE(row, summary.end()) << name << " " << record.workload << " " << record.framework;
    const std::vector<std::string>& cells = row->second;
    EXPECT_EQ(std::to_string(record.rows), cells[0]) << name << " " << record.workload;
    EXPECT_EQ(AsPrinted(record.mean_abs_error, false), cells[1]) << name << " " << record.workload;
    EXPECT_EQ(AsPrinted(record.bias, true), cells[2]) << name << " " << record.workload;
    EXPECT_EQ(AsPrinted(record.worst, false), cells[3]) << name << " " << record.workload;
    summary.erase(row);
  }
  // What is left belongs to no chip family podsim runs (the book's unstated chip).
  for (const auto& [key, cells] : summary) {
    EXPECT_EQ(std::get<0>(key), "generic fabrics") << std::get<1>(key) << " " << std::get<2>(key);
  }
}

TEST(MeasuredAccuracyTest, TheLineStatesTheRecordOrItsAbsence) {
  const MeasuredAccuracy* a100 = FindMeasuredAccuracy("a100", "training");
  ASSERT_NE(a100, nullptr);
  ASSERT_LT(a100->bias, 0);
  const std::string line = DescribeMeasuredAccuracy("a100", "training");
  EXPECT_EQ(line, "on " + std::to_string(a100->rows) +
                      " published A100 training measurements podsim was not fitted to: mean "
                      "|error| " +
                      AsPrinted(a100->mean_abs_error, false) + ", bias " +
                      AsPrinted(a100->bias, true) + " (optimistic), worst " +
                      AsPrinted(a100->worst, false) + " (docs/validation.md)");
  // With a framework, the record of the family's rows run as it, or that none was.
  const MeasuredAccuracy* megatron = FindMeasuredAccuracy("a100", "training", "megatron");
  ASSERT_NE(megatron, nullptr);
  EXPECT_EQ(DescribeMeasuredAccuracy("a100", "training", "megatron"),
            line.substr(0, line.size() - std::string(" (docs/validation.md)").size()) + "; the " +
                std::to_string(megatron->rows) +
                " of them run as --framework megatron: mean |error| " +
                AsPrinted(megatron->mean_abs_error, false) + ", bias " +
                AsPrinted(megatron->bias, true) + (megatron->bias < 0 ? " (optimistic)" : "") +
                ", worst " + AsPrinted(megatron->worst, false) + " (docs/validation.md)");
  EXPECT_EQ(FindMeasuredAccuracy("tpu-v5e", "training", "torchtitan"), nullptr);
  EXPECT_NE(DescribeMeasuredAccuracy("tpu-v5e", "training", "torchtitan")
                .find("; none of them run as --framework torchtitan"),
            std::string::npos);
  // Training lines carry the family's memory record where it has one, other workloads never.
  const MeasuredAccuracy* memory = FindMeasuredAccuracy("hopper", "memory");
  ASSERT_NE(memory, nullptr);
  EXPECT_NE(DescribeMeasuredAccuracy("hopper", "training")
                .find("; memory per chip, on " + std::to_string(memory->rows) +
                      " published measurements: mean |error| " +
                      AsPrinted(memory->mean_abs_error, false)),
            std::string::npos);
  EXPECT_EQ(DescribeMeasuredAccuracy("hopper", "collectives").find("memory"), std::string::npos);
  // Families and workloads no validation row measures say so, by the summary's names.
  EXPECT_EQ(FindMeasuredAccuracy("tpu", "training"), nullptr);
  EXPECT_EQ(DescribeMeasuredAccuracy("tpu", "training"),
            "none: no validation row measures other TPUs (uncalibrated) training "
            "(docs/validation.md)");
  EXPECT_EQ(DescribeMeasuredAccuracy("tpu-v5e", "inference"),
            "none: no validation row measures TPU v5e inference (docs/validation.md)");
}

}  // namespace
}  // namespace podsim::workloads
