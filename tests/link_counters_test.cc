// issue 7: link utilisation counters (cli/link_counters.h). Every rate change is written once
// without a window; with a window each value is the link's mean over it, so the bytes the
// counter shows equal the bytes the link carried; only links leaving traced chips get a track.

#include "cli/link_counters.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "topology/generic_builder.h"
#include "topology/names.h"

namespace podsim::cli {
namespace {

constexpr double kLineRate = 1e11;

// Records counter tracks and their values; everything else is unused here.
class CounterSink : public traces::TraceSink {
 public:
  using traces::TraceSink::AddProcess;
  traces::ProcessId AddProcess(std::string_view, int32_t) override { return {processes_++}; }
  traces::TrackId AddTrack(traces::ProcessId, std::string_view) override {
    return {static_cast<uint32_t>(names.size() + 1000)};
  }
  traces::TrackId AddCounterTrack(traces::ProcessId, std::string_view name,
                                  traces::CounterUnit unit) override {
    EXPECT_EQ(unit, traces::CounterUnit::kFraction);
    names.emplace_back(name);
    return {static_cast<uint32_t>(names.size() - 1)};
  }
  void BeginSlice(traces::TrackId, sim::Time, const traces::EventSpec&) override {}
  void EndSlice(traces::TrackId, sim::Time) override {}
  void Instant(traces::TrackId, sim::Time, const traces::EventSpec&) override {}
  void SetCounter(traces::TrackId track, sim::Time time, double value) override {
    values[track.index].emplace_back(time, value);
  }
  sim::Status Close() override { return sim::Status::Ok(); }

  std::vector<std::string> names;
  std::map<uint32_t, std::vector<std::pair<sim::Time, double>>> values;

 private:
  uint32_t processes_ = 0;
};

topology::Fabric Ring4() {
  return std::move(*topology::BuildGenericTorus(
      {4}, {true}, topology::GenericLinkOptions{kLineRate, sim::Time::Nanoseconds(100)}));
}

// Chip 0 is traced (process 0); the others are not.
LinkCounters::ProcessOf OnlyChip0() {
  return [](topology::VertexId chip) -> std::optional<traces::ProcessId> {
    if (chip != 0) return std::nullopt;
    return traces::ProcessId{0};
  };
}

// The first link leaving `chip`.
sim::ResourceId LinkFrom(const topology::Fabric& fabric, topology::VertexId chip) {
  for (uint32_t i = 0; i < fabric.link_count(); ++i) {
    if (fabric.link(i).src == chip) return sim::ResourceId{i};
  }
  ADD_FAILURE() << "no link from chip " << chip;
  return sim::ResourceId{0};
}

sim::Time Us(int64_t us) { return sim::Time::Microseconds(us); }
sim::Time Ns(int64_t ns) { return sim::Time::Nanoseconds(ns); }

TEST(LinkCountersTest, WithoutAWindowEveryChangeIsWrittenOnce) {
  topology::Fabric fabric = Ring4();
  CounterSink sink;
  LinkCounters counters(&fabric, &sink, OnlyChip0(), sim::Time::Zero());
  const sim::ResourceId link = LinkFrom(fabric, 0);
  counters.OnResourceUsageChanged(Ns(10), link, kLineRate / 2);
  counters.OnResourceUsageChanged(Ns(20), link, kLineRate / 2);  // No change: not written.
  counters.OnResourceUsageChanged(Ns(30), link, kLineRate);
  counters.OnResourceUsageChanged(Ns(40), link, 0);
  counters.OnResourceUsageChanged(Ns(40), LinkFrom(fabric, 1), kLineRate);  // Not traced.
  counters.Finish(Ns(50));
  ASSERT_EQ(sink.names.size(), 1u);
  EXPECT_EQ(sink.names[0], "link to " + fabric.vertex_name(fabric.link(link.value).dst) + " (" +
                               std::string(topology::LinkKindName(fabric.link(link.value).kind)) +
                               ")");
  EXPECT_EQ(sink.values[0], (std::vector<std::pair<sim::Time, double>>{
                                {Ns(10), 0.5}, {Ns(30), 1.0}, {Ns(40), 0.0}}));
  EXPECT_EQ(counters.tracks(), 1u);
  EXPECT_EQ(counters.values(), 3u);
}

TEST(LinkCountersTest, AWindowWritesMeansThatKeepTheBytes) {
  topology::Fabric fabric = Ring4();
  CounterSink sink;
  LinkCounters counters(&fabric, &sink, OnlyChip0(), Us(1));
  const sim::ResourceId link = LinkFrom(fabric, 0);
  // Window 0: idle to 200 ns, full to 700 ns, half after: mean 0.5 + 0.15 = 0.65. Windows 1-2:
  // half throughout. Window 3: half to 3.5 us, then idle: 0.25. Window 5: full for 100 ns of a
  // run that ends at 5.4 us: the last window is 400 ns long, mean 0.25.
  const std::vector<std::pair<sim::Time, double>> changes = {{Ns(200), kLineRate},
                                                             {Ns(700), kLineRate / 2},
                                                             {Ns(3500), 0},
                                                             {Ns(5100), kLineRate},
                                                             {Ns(5200), 0}};
  for (const auto& [time, rate] : changes) counters.OnResourceUsageChanged(time, link, rate);
  counters.Finish(Ns(5400));
  const std::vector<std::pair<sim::Time, double>>& values = sink.values[0];
  ASSERT_EQ(values.size(), 5u);
  EXPECT_EQ(values[0].first, Us(0));
  EXPECT_NEAR(values[0].second, 0.65, 1e-12);
  EXPECT_EQ(values[1].first, Us(1));
  EXPECT_NEAR(values[1].second, 0.5, 1e-12);
  EXPECT_EQ(values[2].first, Us(3));
  EXPECT_NEAR(values[2].second, 0.25, 1e-12);
  EXPECT_EQ(values[3].first, Us(4));
  EXPECT_NEAR(values[3].second, 0.0, 1e-12);
  EXPECT_EQ(values[4].first, Us(5));
  EXPECT_NEAR(values[4].second, 0.25, 1e-12);
  // Bytes: the counter's piecewise-constant curve against the changes themselves.
  double shown = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const sim::Time end = i + 1 < values.size() ? values[i + 1].first : Ns(5400);
    shown += values[i].second * kLineRate * (end - values[i].first).ToSeconds();
  }
  double carried = 0;
  for (size_t i = 0; i + 1 < changes.size(); ++i) {
    carried += changes[i].second * (changes[i + 1].first - changes[i].first).ToSeconds();
  }
  EXPECT_NEAR(shown / carried, 1.0, 1e-12);
}

}  // namespace
}  // namespace podsim::cli
