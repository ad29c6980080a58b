#include "traces/track_registry.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace podsim::traces {
namespace {

using sim::Time;

TEST(TraceNanosecondsTest, RoundsPicosecondsHalfUp) {
  EXPECT_EQ(TraceNanoseconds(Time::Zero()), 0);
  EXPECT_EQ(TraceNanoseconds(Time::Picoseconds(499)), 0);
  EXPECT_EQ(TraceNanoseconds(Time::Picoseconds(500)), 1);
  EXPECT_EQ(TraceNanoseconds(Time::Picoseconds(1'499)), 1);
  EXPECT_EQ(TraceNanoseconds(Time::Picoseconds(1'500)), 2);
  EXPECT_EQ(TraceNanoseconds(Time::Seconds(3)), 3'000'000'000);
}

TEST(TrackRegistryTest, RanksTracksPerProcessAndReturnsClosedSlice) {
  TrackRegistry registry;
  ProcessId a = registry.AddProcess("a");
  ProcessId b = registry.AddProcess("b");
  TrackId a0 = registry.AddTrack(a, "x", std::nullopt);
  TrackId b0 = registry.AddTrack(b, "y", std::nullopt);
  TrackId a1 = registry.AddTrack(a, "HBM", CounterUnit::kBytes);
  EXPECT_EQ(registry.track(a0).rank, 0u);
  EXPECT_EQ(registry.track(b0).rank, 0u);
  EXPECT_EQ(registry.track(a1).rank, 1u);
  registry.Begin(a0, Time::Nanoseconds(1), {.name = "outer", .category = "c"});
  registry.Begin(a0, Time::Nanoseconds(2), {.name = "inner", .category = "c"});
  EXPECT_EQ(registry.End(a0, Time::Nanoseconds(3)).name, "inner");
  EXPECT_EQ(registry.End(a0, Time::Nanoseconds(3)).name, "outer");
  registry.Close();
}

// The contract is enforced: each misuse aborts with a message naming it.
using TrackRegistryDeathTest = ::testing::Test;

TEST_F(TrackRegistryDeathTest, RejectsUndeclaredTrack) {
  TrackRegistry registry;
  EXPECT_DEATH(registry.Begin(TrackId{3}, Time::Zero(), {.name = "n", .category = "c"}),
               "BeginSlice on undeclared track 3");
}

TEST_F(TrackRegistryDeathTest, RejectsEndWithoutBegin) {
  TrackRegistry registry;
  TrackId t = registry.AddTrack(registry.AddProcess("p"), "t", std::nullopt);
  EXPECT_DEATH(registry.End(t, Time::Zero()), "EndSlice on track 't' with no open slice");
}

TEST_F(TrackRegistryDeathTest, RejectsTimeGoingBackwardsOnATrack) {
  TrackRegistry registry;
  TrackId t = registry.AddTrack(registry.AddProcess("p"), "t", std::nullopt);
  registry.Begin(t, Time::Nanoseconds(5), {.name = "n", .category = "c"});
  EXPECT_DEATH(registry.End(t, Time::Nanoseconds(4)), "before its previous event");
}

TEST_F(TrackRegistryDeathTest, RejectsCounterOnSliceTrackAndSliceOnCounterTrack) {
  TrackRegistry registry;
  ProcessId p = registry.AddProcess("p");
  TrackId slices = registry.AddTrack(p, "t", std::nullopt);
  TrackId counter = registry.AddTrack(p, "HBM", CounterUnit::kBytes);
  EXPECT_DEATH(registry.Counter(slices, Time::Zero(), 1), "SetCounter on slice track 't'");
  EXPECT_DEATH(registry.Begin(counter, Time::Zero(), {.name = "n", .category = "c"}),
               "BeginSlice on counter track 'HBM'");
}

TEST_F(TrackRegistryDeathTest, RejectsFlowsAcrossCategoriesAndUnendedFlows) {
  TrackRegistry registry;
  TrackId t = registry.AddTrack(registry.AddProcess("p"), "t", std::nullopt);
  const uint64_t flow[] = {7};
  registry.Begin(t, Time::Zero(), {.name = "send", .category = "comm", .flows_out = flow});
  EXPECT_DEATH(
      registry.Begin(t, Time::Zero(), {.name = "mm", .category = "compute", .flows_in = flow}),
      "flow 7 starts on a 'comm' slice but ends on a 'compute' slice");
  registry.End(t, Time::Zero());
  EXPECT_DEATH(registry.Close(), "flow 7 never terminated");
}

TEST_F(TrackRegistryDeathTest, RejectsMissingNameCategoryAndOpenSlicesAtClose) {
  TrackRegistry registry;
  TrackId t = registry.AddTrack(registry.AddProcess("p"), "t", std::nullopt);
  EXPECT_DEATH(registry.Begin(t, Time::Zero(), {.name = "n"}), "without a category");
  EXPECT_DEATH(registry.Begin(t, Time::Zero(), {.category = "c"}), "without a name");
  registry.Begin(t, Time::Zero(), {.name = "n", .category = "c"});
  EXPECT_DEATH(registry.Close(), "slice 'n' still open on track 't'");
}

}  // namespace
}  // namespace podsim::traces
