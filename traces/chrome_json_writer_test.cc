#include "traces/chrome_json_writer.h"

#include <gtest/gtest.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "traces/trace_lint.h"
#include "traces/trace_test_util.h"

namespace podsim::traces {
namespace {

std::string WriteScenario(testing::ScenarioCounts* counts = nullptr, int layers = 3) {
  std::ostringstream out;
  ChromeJsonWriter writer(&out);
  testing::ScenarioCounts c = testing::WriteSyntheticScenario(&writer, layers);
  EXPECT_TRUE(writer.Close().ok());
  if (counts != nullptr) *counts = c;
  return out.str();
}

TEST(ChromeJsonWriterTest, SyntheticScenarioPassesLint) {
  std::string text = WriteScenario();
  sim::Status lint = LintChromeJson(text);
  EXPECT_TRUE(lint.ok()) << lint;
}

// Pins the exact format: field order, 3-decimal microseconds offset by 1 us, metadata, complete
// (X) events written when they end, v1 flows right after the slices they bind to, a counter's
// value slice up to the end of the trace.
TEST(ChromeJsonWriterTest, WritesTheDocumentedFormat) {
  std::ostringstream out;
  ChromeJsonWriter writer(&out);
  ProcessId chip = writer.AddProcess("chip0", 7);
  TrackId comm = writer.AddTrack(chip, "comm");
  TrackId hbm = writer.AddCounterTrack(chip, "HBM", CounterUnit::kBytes);
  const Arg args[] = {Arg::Uint("bytes", 1024), Arg::String("axis", "x\"y")};
  const uint64_t flow[] = {9};
  writer.BeginSlice(comm, sim::Time::Picoseconds(1'499),
                    {.name = "send", .category = "comm", .args = args, .flows_out = flow});
  writer.EndSlice(comm, sim::Time::Picoseconds(2'000'500));
  writer.BeginSlice(comm, sim::Time::Nanoseconds(3'000),
                    {.name = "recv", .category = "comm", .flows_in = flow});
  writer.Instant(comm, sim::Time::Nanoseconds(3'000), {.name = "mark", .category = "comm"});
  writer.EndSlice(comm, sim::Time::Nanoseconds(3'000));
  writer.SetCounter(hbm, sim::Time::Zero(), 2.5e9);
  ASSERT_TRUE(writer.Close().ok());
  EXPECT_EQ(out.str(),
            R"({"traceEvents":[
{"name":"process_name","ph":"M","ts":0,"pid":1,"tid":0,"args":{"name":"chip0"}},
{"name":"process_sort_index","ph":"M","ts":0,"pid":1,"tid":0,"args":{"sort_index":7}},
{"name":"thread_name","ph":"M","ts":0,"pid":1,"tid":1,"args":{"name":"comm"}},
{"name":"thread_sort_index","ph":"M","ts":0,"pid":1,"tid":1,"args":{"sort_index":0}},
{"name":"thread_name","ph":"M","ts":0,"pid":1,"tid":2,"args":{"name":"HBM"}},
{"name":"thread_sort_index","ph":"M","ts":0,"pid":1,"tid":2,"args":{"sort_index":1}},
{"name":"send","cat":"comm","ph":"X","ts":1.001,"pid":1,"tid":1,"dur":2.000,"args":{"bytes":1024,"axis":"x\"y"}},
{"name":"flow","cat":"comm","ph":"s","ts":1.001,"pid":1,"tid":1,"id":9},
{"name":"recv","cat":"comm","ph":"X","ts":4.000,"pid":1,"tid":1,"dur":0.000,"args":{}},
{"name":"flow","cat":"comm","ph":"f","ts":4.000,"pid":1,"tid":1,"id":9,"bp":"e"},
{"name":"mark","cat":"comm","ph":"i","ts":4.000,"pid":1,"tid":1,"s":"t","args":{}},
{"name":"HBM","ph":"C","ts":1.000,"pid":1,"tid":2,"args":{"bytes":2500000000}},
{"name":"2.3 GiB","cat":"counter","ph":"X","ts":1.000,"pid":1,"tid":2,"dur":3.000,"args":{"bytes":2500000000}}
]}
)");
  EXPECT_TRUE(LintChromeJson(out.str()).ok());
}

TEST(ChromeJsonWriterTest, ScenarioHasTheExpectedEvents) {
  testing::ScenarioCounts counts;
  nlohmann::json trace = nlohmann::json::parse(WriteScenario(&counts));
  std::map<std::string, int> by_phase;
  for (const auto& event : trace["traceEvents"]) ++by_phase[event["ph"].get<std::string>()];
  // Value slices: per chip, the HBM value of each layer and the first; the link's per send.
  EXPECT_EQ(by_phase["X"], counts.slices + 2 * (3 + 1) + 3);
  EXPECT_EQ(by_phase["B"] + by_phase["E"], 0);
  EXPECT_EQ(by_phase["i"], counts.instants);
  EXPECT_EQ(by_phase["C"], counts.counter_values);
  EXPECT_EQ(by_phase["s"], counts.flows);
  EXPECT_EQ(by_phase["f"], counts.flows);
  // 3 processes x (name + sort index) + 8 tracks (5 slice, 3 counter) x (name + sort index).
  EXPECT_EQ(by_phase["M"], 22);
}

// Nested slices wait for the outermost one and come out outer first; a flow whose destination
// ends before its source still has its s before its f in the file (DevTools needs that order).
TEST(ChromeJsonWriterTest, NestedSlicesAndEarlyFlowEndsKeepFileOrder) {
  std::ostringstream out;
  ChromeJsonWriter writer(&out);
  ProcessId chip = writer.AddProcess("chip0");
  TrackId a = writer.AddTrack(chip, "a");
  TrackId b = writer.AddTrack(chip, "b");
  const uint64_t flow[] = {4};
  using sim::Time;
  writer.BeginSlice(a, Time::Nanoseconds(0), {.name = "outer", .category = "c"});
  writer.BeginSlice(a, Time::Nanoseconds(1), {.name = "inner", .category = "c", .flows_out = flow});
  writer.BeginSlice(b, Time::Nanoseconds(2), {.name = "dst", .category = "c", .flows_in = flow});
  writer.EndSlice(b, Time::Nanoseconds(3));  // Destination written; its f must wait.
  writer.EndSlice(a, Time::Nanoseconds(4));
  writer.EndSlice(a, Time::Nanoseconds(5));
  ASSERT_TRUE(writer.Close().ok());
  const std::string text = out.str();
  EXPECT_EQ(text.substr(text.find("\n{\"name\":\"dst\"")), R"(
{"name":"dst","cat":"c","ph":"X","ts":1.002,"pid":1,"tid":2,"dur":0.001,"args":{}},
{"name":"outer","cat":"c","ph":"X","ts":1.000,"pid":1,"tid":1,"dur":0.005,"args":{}},
{"name":"inner","cat":"c","ph":"X","ts":1.001,"pid":1,"tid":1,"dur":0.003,"args":{}},
{"name":"flow","cat":"c","ph":"s","ts":1.001,"pid":1,"tid":1,"id":4},
{"name":"flow","cat":"c","ph":"f","ts":1.002,"pid":1,"tid":2,"id":4,"bp":"e"}
]}
)");
  sim::Status lint = LintChromeJson(text);
  EXPECT_TRUE(lint.ok()) << lint;
}

// Each interval of constant non-zero counter value is a slice on the counter's own thread, named
// after the value (DevTools draws no `C` events); an unchanged value does not split it.
TEST(ChromeJsonWriterTest, CounterValuesAreAlsoSlices) {
  std::ostringstream out;
  ChromeJsonWriter writer(&out);
  ProcessId chip = writer.AddProcess("chip0");
  TrackId link = writer.AddCounterTrack(chip, "link", CounterUnit::kFraction);
  TrackId rate = writer.AddCounterTrack(chip, "rate", CounterUnit::kBytesPerSecond);
  TrackId ops = writer.AddTrack(chip, "ops");
  using sim::Time;
  writer.SetCounter(link, Time::Nanoseconds(0), 0);
  writer.SetCounter(link, Time::Nanoseconds(10), 0.5);
  writer.SetCounter(link, Time::Nanoseconds(20), 0.5);
  writer.SetCounter(link, Time::Nanoseconds(30), 0.25);
  writer.SetCounter(link, Time::Nanoseconds(40), 0);
  writer.SetCounter(link, Time::Nanoseconds(50), 1);
  writer.SetCounter(rate, Time::Nanoseconds(5), 4.5e11);
  writer.SetCounter(rate, Time::Nanoseconds(5), 0);  // Zero-length: no slice.
  writer.BeginSlice(ops, Time::Nanoseconds(0), {.name = "op", .category = "op"});
  writer.EndSlice(ops, Time::Nanoseconds(60));
  ASSERT_TRUE(writer.Close().ok());
  const nlohmann::json trace = nlohmann::json::parse(out.str());
  std::vector<std::string> slices;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["cat"] != "counter") continue;
    EXPECT_EQ(e["tid"], 1);
    slices.push_back(e["name"].get<std::string>() + " " + e["ts"].dump() + " " + e["dur"].dump());
  }
  EXPECT_EQ(slices,
            (std::vector<std::string>{"50.0% 1.01 0.02", "25.0% 1.03 0.01", "100.0% 1.05 0.01"}));
  sim::Status lint = LintChromeJson(out.str());
  EXPECT_TRUE(lint.ok()) << lint;
}

TEST(ChromeJsonWriterTest, SameCallsGiveSameBytes) { EXPECT_EQ(WriteScenario(), WriteScenario()); }

TEST(ChromeJsonWriterTest, SizePerSliceIsReported) {
  testing::ScenarioCounts counts;
  std::string text = WriteScenario(&counts, /*layers=*/200);
  double per_slice = static_cast<double>(text.size()) / counts.slices;
  std::cout << "chrome json: " << text.size() << " bytes, " << counts.slices << " slices, "
            << per_slice << " bytes/slice (incl. counters and flows)\n";
  EXPECT_LT(per_slice, 400);
}

}  // namespace
}  // namespace podsim::traces
