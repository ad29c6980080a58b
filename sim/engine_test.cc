#include "sim/engine.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "sim/flow_model.h"

namespace podsim::sim {
namespace {

// FNV-1a over everything it is fed: equal hashes mean equal sequences, byte for byte.
class SequenceHash {
 public:
  void Add(uint64_t value) {
    for (int i = 0; i < 8; ++i) {
      hash_ ^= (value >> (8 * i)) & 0xff;
      hash_ *= 1099511628211ull;
    }
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 14695981039346656037ull;
};

class HashingObserver : public Observer, public FlowObserver {
 public:
  void OnEvent(Time time, uint64_t sequence) override {
    hash.Add(static_cast<uint64_t>(time.picoseconds()));
    hash.Add(sequence);
    ++events;
  }
  void OnFlowCompleted(Time now, FlowId flow) override {
    hash.Add(static_cast<uint64_t>(now.picoseconds()));
    hash.Add(flow.slot);
    hash.Add(flow.generation);
  }
  SequenceHash hash;
  uint64_t events = 0;
};

TEST(EngineTest, RunsEventsInTimeThenSchedulingOrder) {
  Engine engine;
  std::string order;
  engine.Schedule(Time::Nanoseconds(2), [&] { order += 'c'; });
  engine.Schedule(Time::Nanoseconds(1), [&] { order += 'a'; });
  engine.Schedule(Time::Nanoseconds(1), [&] { order += 'b'; });
  engine.Run();
  EXPECT_EQ(order, "abc");
  EXPECT_EQ(engine.now(), Time::Nanoseconds(2));
  EXPECT_EQ(engine.executed_events(), 3u);
}

TEST(EngineTest, HandlersScheduleRelativeToNow) {
  Engine engine;
  std::vector<Time> seen;
  engine.Schedule(Time::Microseconds(1), [&] {
    seen.push_back(engine.now());
    engine.Schedule(Time::Microseconds(2), [&] { seen.push_back(engine.now()); });
  });
  engine.Run();
  EXPECT_EQ(seen, (std::vector<Time>{Time::Microseconds(1), Time::Microseconds(3)}));
}

TEST(EngineTest, RunUntilStopsAtLimitAndAdvancesClock) {
  Engine engine;
  int ran = 0;
  engine.Schedule(Time::Nanoseconds(10), [&] { ++ran; });
  engine.Schedule(Time::Nanoseconds(20), [&] { ++ran; });
  engine.RunUntil(Time::Nanoseconds(10));
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(engine.now(), Time::Nanoseconds(10));
  engine.RunUntil(Time::Nanoseconds(15));
  EXPECT_EQ(engine.now(), Time::Nanoseconds(15));
  EXPECT_EQ(engine.pending_events(), 1u);
  engine.Run();
  EXPECT_EQ(ran, 2);
}

// issue 16 D2: an event past the horizon is refused and ends the run, never wraps or aborts.
TEST(EngineTest, EventAtTheHorizonEndsTheRunAndIsReported) {
  Engine engine;
  int ran = 0;
  engine.Schedule(Time::Nanoseconds(1), [&] {
    ++ran;
    EventId never = engine.Schedule(Time::FromSecondsCeil(1e30), [&] { ran += 100; });
    EXPECT_FALSE(never.valid());
    engine.Schedule(Time::Nanoseconds(1), [&] { ran += 10; });
  });
  EXPECT_FALSE(engine.passed_horizon());
  engine.Run();
  EXPECT_TRUE(engine.passed_horizon());
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(engine.now(), Time::Nanoseconds(1));
  engine.Run();  // Stays stopped.
  EXPECT_EQ(ran, 1);
}

TEST(EngineTest, StopEndsRunAfterCurrentEvent) {
  Engine engine;
  int ran = 0;
  engine.Schedule(Time::Nanoseconds(1), [&] {
    ++ran;
    engine.Stop();
  });
  engine.Schedule(Time::Nanoseconds(1), [&] { ++ran; });
  engine.Run();
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(engine.pending_events(), 1u);
  engine.Run();
  EXPECT_EQ(ran, 2);
}

TEST(EngineTest, CancelledEventDoesNotRun) {
  Engine engine;
  bool ran = false;
  EventId id = engine.Schedule(Time::Nanoseconds(1), [&] { ran = true; });
  EXPECT_TRUE(engine.Cancel(id));
  engine.Run();
  EXPECT_FALSE(ran);
  EXPECT_EQ(engine.now(), Time::Zero());
}

// A moved event keeps its handler and runs at its new time in the order of an event scheduled
// then (a new sequence number), as cancelling and scheduling it again would; past the horizon
// it is cancelled and the run ends.
TEST(EngineTest, RescheduledEventRunsOnceAtItsNewTimeInSchedulingOrder) {
  Engine engine;
  std::vector<std::string> order;
  EventId a = engine.Schedule(Time::Nanoseconds(5), [&] { order.push_back("a"); });
  engine.Schedule(Time::Nanoseconds(3), [&] { order.push_back("b"); });
  const uint64_t scheduled = engine.scheduled_events();
  const EventId moved = engine.Reschedule(a, Time::Nanoseconds(3));
  EXPECT_NE(moved, a);
  EXPECT_FALSE(engine.IsPending(a));
  EXPECT_TRUE(engine.IsPending(moved));
  EXPECT_EQ(engine.scheduled_events(), scheduled + 1);
  EXPECT_EQ(engine.pending_events(), 2u);
  engine.Run();
  EXPECT_EQ(order, (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(engine.now(), Time::Nanoseconds(3));

  Engine far;
  bool ran = false;
  const EventId id = far.Schedule(Time::Nanoseconds(1), [&] { ran = true; });
  EXPECT_FALSE(far.Reschedule(id, Time::FromSecondsCeil(1e30)).valid());
  EXPECT_TRUE(far.passed_horizon());
  EXPECT_EQ(far.pending_events(), 0u);
  far.Run();
  EXPECT_FALSE(ran);
}

TEST(EngineTest, ObserverSeesEveryEventAndRunEnd) {
  Engine engine;
  struct Recorder : Observer {
    void OnEvent(Time time, uint64_t sequence) override {
      times.push_back(time);
      sequences.push_back(sequence);
    }
    void OnRunEnd(Time now) override { end = now; }
    std::vector<Time> times;
    std::vector<uint64_t> sequences;
    Time end;
  } recorder;
  engine.AddObserver(&recorder);
  engine.Schedule(Time::Nanoseconds(5), [] {});
  engine.Schedule(Time::Nanoseconds(3), [] {});
  engine.Run();
  EXPECT_EQ(recorder.times, (std::vector<Time>{Time::Nanoseconds(3), Time::Nanoseconds(5)}));
  EXPECT_EQ(recorder.sequences, (std::vector<uint64_t>{1, 0}));
  EXPECT_EQ(recorder.end, Time::Nanoseconds(5));
}

TEST(EngineDeathTest, SchedulingInThePastAborts) {
  Engine engine;
  engine.RunUntil(Time::Nanoseconds(10));
  EXPECT_DEATH(engine.ScheduleAt(Time::Nanoseconds(5), [] {}), "scheduled in the past");
  EXPECT_DEATH(engine.Schedule(Time::Nanoseconds(-1), [] {}), "negative delay");
}

// A seeded workload of timers and contending flows whose callbacks start more flows: enough to
// exercise ties, cancellation (rescheduled completions) and reallocation.
struct WorkloadResult {
  uint64_t hash;
  uint64_t events;
  Time end;
  uint64_t completed;
};

WorkloadResult RunSeededWorkload(uint32_t seed, bool observe) {
  Engine engine;
  FlowModel model(&engine);
  HashingObserver observer;
  if (observe) {
    engine.AddObserver(&observer);
    model.AddObserver(&observer);
  }
  std::mt19937 rng(seed);
  std::vector<ResourceId> resources;
  for (int i = 0; i < 16; ++i) resources.push_back(*model.AddResource(1e9 * (1 + i % 4)));
  std::function<void(int)> start = [&](int depth) {
    FlowSpec spec;
    spec.bytes = static_cast<double>(1 + rng() % 100'000);
    spec.latency = Time::Nanoseconds(rng() % 3 * 500);
    std::vector<int> picks(resources.size());
    for (size_t i = 0; i < picks.size(); ++i) picks[i] = static_cast<int>(i);
    std::shuffle(picks.begin(), picks.end(), rng);
    for (size_t i = 0; i < 1 + rng() % 4; ++i) spec.route.push_back(resources[picks[i]]);
    ASSERT_TRUE(model
                    .StartFlow(spec,
                               [&, depth] {
                                 if (depth < 4) {
                                   start(depth + 1);
                                   start(depth + 1);
                                 }
                               })
                    .ok());
  };
  for (int i = 0; i < 8; ++i) {
    engine.Schedule(Time::Nanoseconds(rng() % 1000), [&] { start(0); });
  }
  engine.Run();
  return WorkloadResult{observer.hash.value(), engine.executed_events(), engine.now(),
                        model.completed_flows()};
}

TEST(EngineDeterminismTest, SameInputGivesSameEventSequenceHash) {
  WorkloadResult first = RunSeededWorkload(42, true);
  WorkloadResult second = RunSeededWorkload(42, true);
  EXPECT_EQ(first.hash, second.hash);
  EXPECT_EQ(first.events, second.events);
  EXPECT_EQ(first.end, second.end);
  EXPECT_EQ(first.completed, 8u * 31u);
  // A different seed is a different run: the hash is not a constant.
  EXPECT_NE(RunSeededWorkload(43, true).hash, first.hash);
}

TEST(EngineDeterminismTest, ObserversDoNotChangeTheRun) {
  WorkloadResult observed = RunSeededWorkload(7, true);
  WorkloadResult unobserved = RunSeededWorkload(7, false);
  EXPECT_EQ(observed.events, unobserved.events);
  EXPECT_EQ(observed.end, unobserved.end);
  EXPECT_EQ(observed.completed, unobserved.completed);
}

}  // namespace
}  // namespace podsim::sim
