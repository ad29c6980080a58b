#include "sim/flow_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

namespace podsim::sim {
namespace {

constexpr double kGBps = 1e9;

class FlowModelTest : public ::testing::Test {
 protected:
  ResourceId Link(double capacity) { return *model_.AddResource(capacity); }

  // Starts a flow and records its completion time in `done`.
  FlowId Start(double bytes, std::vector<ResourceId> route, Time* done, Time latency = Time::Zero(),
               double bound = std::numeric_limits<double>::infinity()) {
    FlowSpec spec{bytes, std::move(route), latency, bound};
    StatusOr<FlowId> id = model_.StartFlow(spec, [this, done] { *done = engine_.now(); });
    EXPECT_TRUE(id.ok()) << id.status();
    return *id;
  }

  Engine engine_;
  FlowModel model_{&engine_};
};

TEST_F(FlowModelTest, SingleFlowTakesLatencyPlusBytesOverCapacity) {
  ResourceId link = Link(1 * kGBps);
  Time done;
  Start(1e6, {link}, &done, Time::Microseconds(1));
  engine_.Run();
  EXPECT_EQ(done, Time::Microseconds(1) + Time::Milliseconds(1));
  EXPECT_EQ(model_.live_flows(), 0u);
  EXPECT_EQ(model_.usage(link), 0.0);
}

// Owners (flow_model.h): flows of one owner sharing a resource do not contend; flows of two
// owners, or any flow on a resource marked shared, make their groups contended; a flow's callback
// starts flows of its own owner.
TEST_F(FlowModelTest, OwnersContendOnlyWithOtherOwnersOrOnSharedResources) {
  ResourceId a = Link(1 * kGBps), b = Link(1 * kGBps), c = Link(1 * kGBps);
  model_.MarkShared(c);
  model_.SetOwner(1, 1, 7);
  model_.SetOwner(2, 2, 7);
  model_.SetOwner(3, 3, 8);
  model_.SetOwner(4, 4, 9);
  Time t;
  model_.set_owner(1);
  Start(1e6, {a}, &t);
  Start(1e6, {a}, &t);  // Owner 1 twice on a: not contended.
  model_.set_owner(2);
  Start(1e6, {b}, &t);
  model_.set_owner(1);  // Owner 1 on b meets owner 2: both contended; owner 3 has no flow.
  FlowSpec spec{1e6, {b}};
  ASSERT_TRUE(model_.StartFlow(spec, [] {}).ok());
  model_.set_owner(4);
  Start(1, {c}, &t);  // Alone on a shared resource: contended all the same.
  model_.set_owner(0);
  engine_.Run();
  EXPECT_TRUE(model_.GroupContended(1));
  EXPECT_TRUE(model_.GroupContended(2));
  EXPECT_FALSE(model_.GroupContended(3));
  EXPECT_TRUE(model_.GroupContended(4));
  EXPECT_TRUE(model_.UsedOnlyBy(std::vector<ResourceId>{a, b}, 7));
  EXPECT_FALSE(model_.UsedOnlyBy(std::vector<ResourceId>{a, c}, 7));
}

TEST_F(FlowModelTest, CallbacksStartFlowsOfTheirOwner) {
  ResourceId a = Link(1 * kGBps), b = Link(1 * kGBps);
  model_.SetOwner(1, 1, 1);
  model_.SetOwner(2, 2, 1);
  model_.set_owner(2);
  Time t;
  Start(4e6, {b}, &t);  // Owner 2 on b until 4 ms.
  model_.set_owner(1);
  FlowSpec first{1e6, {a}};
  ASSERT_TRUE(model_
                  .StartFlow(first,
                             [this, b] {
                               EXPECT_EQ(model_.owner(), 1u);
                               FlowSpec next{1e6, {b}};  // Owner 1's, on b with owner 2's flow.
                               ASSERT_TRUE(model_.StartFlow(next, [] {}).ok());
                             })
                  .ok());
  model_.set_owner(0);
  engine_.Run();
  EXPECT_EQ(model_.owner(), 0u);
  EXPECT_TRUE(model_.GroupContended(1));
  EXPECT_TRUE(model_.GroupContended(2));
}

// Holds (flow_model.h): held resources are not unused; a flow that becomes active on one before
// the hold ends calls the intrusion handler with the hold's owner; flows waiting their latency
// make a resource used; after the hold a flow is no intrusion.
TEST_F(FlowModelTest, HoldsReportIntrusionsUntilTheyEnd) {
  ResourceId a = Link(1 * kGBps), b = Link(1 * kGBps);
  std::vector<uint32_t> intruders;
  model_.SetIntrusionHandler([&](uint32_t owner) { intruders.push_back(owner); });
  EXPECT_TRUE(model_.Unused(std::vector<ResourceId>{a, b}));
  model_.Hold(std::vector<ResourceId>{a}, Time::Microseconds(10), 5);
  EXPECT_FALSE(model_.Unused(std::vector<ResourceId>{a}));
  Time t;
  Start(1e3, {b}, &t, Time::Microseconds(2));  // Waiting on b: b is not unused.
  EXPECT_FALSE(model_.Unused(std::vector<ResourceId>{b}));
  Start(1e3, {a, b}, &t, Time::Microseconds(3));  // Active on a at 3 us: an intrusion.
  engine_.Schedule(Time::Microseconds(10), [&] {
    FlowSpec late{1e3, {a}};  // At the hold's end: none.
    ASSERT_TRUE(model_.StartFlow(late, [] {}).ok());
  });
  engine_.Run();
  EXPECT_EQ(intruders, std::vector<uint32_t>{5});
  EXPECT_TRUE(model_.Unused(std::vector<ResourceId>{a, b}));
}

// An observer that counts flows' bytes is told of no usage change the flows make, only of usage
// echoed on a held resource; one that wants flows' usage is told of both.
TEST_F(FlowModelTest, UsageGoesOnlyToObserversThatWantItEchoesToAll) {
  struct Count : FlowObserver {
    explicit Count(bool wants) : wants(wants) {}
    bool WantsFlowUsage() const override { return wants; }
    void OnResourceUsageChanged(Time, ResourceId, double) override { ++usage; }
    bool wants;
    int usage = 0;
  } bytes_only(false), usage(true);
  model_.AddObserver(&bytes_only);
  model_.AddObserver(&usage);
  model_.SetIntrusionHandler([](uint32_t) {});
  ResourceId a = Link(1 * kGBps), b = Link(1 * kGBps);
  Time t;
  Start(1e3, {a}, &t);
  model_.Hold(std::vector<ResourceId>{b}, Time::Microseconds(10), 1);
  model_.EchoUsage(b, 5e8);
  engine_.Run();
  EXPECT_EQ(bytes_only.usage, 1);
  EXPECT_GE(usage.usage, 3);  // The echo, the flow's arrival and its departure.
}

TEST_F(FlowModelTest, RouteIsLimitedByItsSlowestResource) {
  ResourceId fast = Link(10 * kGBps);
  ResourceId slow = Link(2 * kGBps);
  Time done;
  Start(4e6, {fast, slow}, &done);
  engine_.Run();
  EXPECT_EQ(done, Time::Milliseconds(2));
}

TEST_F(FlowModelTest, EqualFlowsOnOneLinkShareItEqually) {
  ResourceId link = Link(8 * kGBps);
  constexpr int kFlows = 4;
  std::vector<Time> done(kFlows);
  std::vector<FlowId> ids;
  for (int i = 0; i < kFlows; ++i) ids.push_back(Start(2e6, {link}, &done[i]));
  engine_.RunUntil(Time::Zero());
  for (FlowId id : ids) EXPECT_DOUBLE_EQ(model_.rate(id), 2 * kGBps);
  EXPECT_DOUBLE_EQ(model_.usage(link), 8 * kGBps);
  engine_.Run();
  // Each gets capacity/n, so all finish together at n * bytes / capacity.
  for (Time t : done) EXPECT_EQ(t, Time::Milliseconds(1));
}

// The textbook max-min example: flow b crosses both links and is held to its fair share on the
// narrow one; flow a takes what b leaves on the wide one instead of an equal split.
TEST_F(FlowModelTest, FlowBottleneckedElsewhereLeavesItsShareToOthers) {
  ResourceId wide = Link(10 * kGBps);
  ResourceId narrow = Link(3 * kGBps);
  Time unused;
  FlowId a = Start(1e9, {wide}, &unused);
  FlowId b = Start(1e9, {wide, narrow}, &unused);
  FlowId c = Start(1e9, {narrow}, &unused);
  engine_.RunUntil(Time::Zero());
  EXPECT_DOUBLE_EQ(model_.rate(b), 1.5 * kGBps);
  EXPECT_DOUBLE_EQ(model_.rate(c), 1.5 * kGBps);
  EXPECT_DOUBLE_EQ(model_.rate(a), 8.5 * kGBps);
}

TEST_F(FlowModelTest, FlowThatEndsEarlySpeedsUpTheRest) {
  ResourceId link = Link(1 * kGBps);
  Time short_done, long_done;
  FlowId long_flow = Start(3e6, {link}, &long_done);
  Start(1e6, {link}, &short_done);
  engine_.RunUntil(Time::Zero());
  EXPECT_DOUBLE_EQ(model_.rate(long_flow), 0.5 * kGBps);
  engine_.Run();
  // Both move at 0.5 GB/s until the short one has its 1 MB (2 ms); the long one then has 2 MB
  // left at 1 GB/s: 2 ms more.
  EXPECT_EQ(short_done, Time::Milliseconds(2));
  EXPECT_EQ(long_done, Time::Milliseconds(4));
}

TEST_F(FlowModelTest, LateArrivalSlowsTheFlowAlreadyRunning) {
  ResourceId link = Link(1 * kGBps);
  Time first_done, second_done;
  Start(2e6, {link}, &first_done);
  engine_.Schedule(Time::Milliseconds(1), [&] { Start(1e6, {link}, &second_done); });
  engine_.Run();
  // 1 MB alone in 1 ms, then both at 0.5 GB/s: the first's last 1 MB and the second's 1 MB take
  // 2 ms together.
  EXPECT_EQ(first_done, Time::Milliseconds(3));
  EXPECT_EQ(second_done, Time::Milliseconds(3));
}

TEST_F(FlowModelTest, LatencyUsesNoBandwidth) {
  ResourceId link = Link(1 * kGBps);
  Time early_done, late_done;
  Start(1e6, {link}, &early_done);
  Start(1e6, {link}, &late_done, Time::Milliseconds(1));
  engine_.Run();
  // The first flow is alone until the second's latency has passed.
  EXPECT_EQ(early_done, Time::Milliseconds(1));
  EXPECT_EQ(late_done, Time::Milliseconds(2));
}

TEST_F(FlowModelTest, RateBoundCapsAFlowAndFreesTheRest) {
  ResourceId link = Link(10 * kGBps);
  Time unused;
  FlowId bounded = Start(1e9, {link}, &unused, Time::Zero(), 2 * kGBps);
  FlowId free_flow = Start(1e9, {link}, &unused);
  engine_.RunUntil(Time::Zero());
  EXPECT_DOUBLE_EQ(model_.rate(bounded), 2 * kGBps);
  EXPECT_DOUBLE_EQ(model_.rate(free_flow), 8 * kGBps);
}

TEST_F(FlowModelTest, BoundOnlyFlowWithEmptyRouteMovesAtItsBound) {
  Time done;
  Start(4e6, {}, &done, Time::Zero(), 2 * kGBps);
  engine_.Run();
  EXPECT_EQ(done, Time::Milliseconds(2));
}

TEST_F(FlowModelTest, ZeroByteFlowCompletesAfterItsLatency) {
  ResourceId link = Link(1 * kGBps);
  Time done = Time::Max();
  Start(0, {link}, &done, Time::Microseconds(3));
  engine_.Run();
  EXPECT_EQ(done, Time::Microseconds(3));
}

TEST_F(FlowModelTest, ZeroByteFlowCompletesAsAnEventNotInsideStartFlow) {
  ResourceId link = Link(1 * kGBps);
  Time done = Time::Max();
  Start(0, {link}, &done);
  EXPECT_EQ(done, Time::Max());
  engine_.Run();
  EXPECT_EQ(done, Time::Zero());
}

TEST_F(FlowModelTest, RejectsBadInputWithClearErrors) {
  EXPECT_EQ(model_.AddResource(0).status().message(),
            "resource capacity must be finite and > 0 bytes/s (got 0)");
  EXPECT_FALSE(model_.AddResource(-1).ok());
  EXPECT_FALSE(model_.AddResource(std::numeric_limits<double>::infinity()).ok());
  EXPECT_FALSE(model_.AddResource(std::nan("")).ok());

  ResourceId link = Link(1 * kGBps);
  auto start = [&](FlowSpec spec) { return model_.StartFlow(spec, [] {}).status(); };
  EXPECT_EQ(start(FlowSpec{-1, {link}}).message(),
            "flow size must be finite and >= 0 bytes (got -1)");
  EXPECT_FALSE(start(FlowSpec{std::nan(""), {link}}).ok());
  EXPECT_FALSE(start(FlowSpec{1, {link}, Time::Picoseconds(-1)}).ok());
  EXPECT_FALSE(start(FlowSpec{1, {link}, Time::Zero(), 0}).ok());
  EXPECT_FALSE(start(FlowSpec{1, {}}).ok());
  EXPECT_EQ(model_.live_flows(), 0u);
}

TEST_F(FlowModelTest, RepeatedResourceInRouteAborts) {
  ResourceId link = Link(1 * kGBps);
  EXPECT_DEATH((void)model_.StartFlow(FlowSpec{1, {link, link}}, [] {}), "twice");
}

TEST_F(FlowModelTest, RepeatedResourceInLongRouteAborts) {
  // Routes past eight resources are checked with per-resource stamps, shorter ones pairwise.
  std::vector<ResourceId> route;
  for (int i = 0; i < 10; ++i) route.push_back(Link(1 * kGBps));
  route.push_back(route[3]);
  EXPECT_DEATH((void)model_.StartFlow(FlowSpec{1, route}, [] {}), "twice");
}

// A ring step's flows start together with one latency: they become active in one event, and a
// flow started in between with another latency gets its own.
TEST_F(FlowModelTest, FlowsStartedTogetherActivateInOneEvent) {
  constexpr int kFlows = 100;
  std::vector<Time> done(kFlows + 1);
  for (int i = 0; i < kFlows; ++i) {
    Start(1e3, {Link(1 * kGBps)}, &done[i], Time::Microseconds(1));
    if (i == kFlows / 2) Start(1e3, {Link(1 * kGBps)}, &done[kFlows], Time::Microseconds(2));
  }
  engine_.Run();
  for (int i = 0; i < kFlows; ++i) EXPECT_EQ(done[i], Time::Microseconds(2)) << i;
  EXPECT_EQ(done[kFlows], Time::Microseconds(3));
  // Activations: the first 51 flows, the odd one, the other 49 (a group each); a reallocation
  // at 1 us and one at 2 us (where 100 flows end and one starts), one at 3 us; 101 completions.
  EXPECT_EQ(engine_.executed_events(), 3u + 3u + kFlows + 1u);
}

// An event scheduled between two starts would run between their activations: the second flow
// gets an event of its own, so that the order of everything is as with an event a flow.
TEST_F(FlowModelTest, AFlowStartedAfterAnotherEventActivatesInItsOwn) {
  ResourceId link = Link(1 * kGBps);
  Time first_done, second_done;
  size_t flows_seen = 0;
  Start(1e3, {link}, &first_done, Time::Microseconds(1));
  engine_.Schedule(Time::Microseconds(1), [&] { flows_seen = model_.flow_count(link); });
  Start(1e3, {link}, &second_done, Time::Microseconds(1));
  engine_.Run();
  EXPECT_EQ(flows_seen, 1u);  // The first flow is active, the second not yet.
  EXPECT_EQ(first_done, Time::Microseconds(3));
  EXPECT_EQ(second_done, Time::Microseconds(3));
  // Two activations, the event between them, a reallocation at 1 us, two completions and the
  // reallocation after them.
  EXPECT_EQ(engine_.executed_events(), 7u);
}

TEST_F(FlowModelTest, CallbacksMayStartNewFlows) {
  ResourceId link = Link(1 * kGBps);
  int remaining = 5;
  std::function<void()> next = [&] {
    if (--remaining > 0) {
      ASSERT_TRUE(model_.StartFlow(FlowSpec{1e6, {link}}, next).ok());
    }
  };
  ASSERT_TRUE(model_.StartFlow(FlowSpec{1e6, {link}}, next).ok());
  engine_.Run();
  EXPECT_EQ(remaining, 0);
  EXPECT_EQ(engine_.now(), Time::Milliseconds(5));
}

// One change among many independent links re-solves only the flows it touches.
TEST_F(FlowModelTest, RecomputationStaysLocal) {
  std::vector<ResourceId> links;
  Time unused;
  for (int i = 0; i < 1000; ++i) {
    links.push_back(Link(1 * kGBps));
    Start(1e9, {links.back()}, &unused);
  }
  engine_.RunUntil(Time::Zero());
  uint64_t before = model_.resolved_flows();
  Start(1e9, {links[0]}, &unused);
  engine_.RunUntil(engine_.now());
  EXPECT_LE(model_.resolved_flows() - before, 2u);
}

// A resource no flow is held by is watched, not followed, when a flow crossing it speeds up;
// where the sweep's rates would put it over capacity, the sweep runs again following it
// (flow_model.h, "Watched resources"). f2 shares A with f1 (1 GB/s each) and crosses W, whose
// other flow f3 is held by X at 0.4 GB/s: W carries 1.4 of 1.5 GB/s and holds no flow. When f1
// ends, A alone would let f2 reach 2 GB/s; W holds it at 1.1.
TEST_F(FlowModelTest, AWatchedResourceThatWouldOverflowIsFollowed) {
  const ResourceId a = Link(2 * kGBps), w = Link(1.5 * kGBps), x = Link(0.4 * kGBps);
  Time unused;
  const FlowId f1 = Start(1e6, {a}, &unused);
  const FlowId f2 = Start(1e9, {a, w}, &unused);
  const FlowId f3 = Start(1e9, {w, x}, &unused);
  engine_.RunUntil(Time::Zero());
  EXPECT_DOUBLE_EQ(model_.rate(f1), 1 * kGBps);
  EXPECT_DOUBLE_EQ(model_.rate(f2), 1 * kGBps);
  EXPECT_DOUBLE_EQ(model_.rate(f3), 0.4 * kGBps);
  EXPECT_EQ(model_.repeated_sweeps(), 0u);
  engine_.RunUntil(Time::Milliseconds(1));  // f1 is done after 1 ms.
  EXPECT_FALSE(model_.exists(f1));
  EXPECT_NEAR(model_.rate(f2), 1.1 * kGBps, 1e-6 * kGBps);
  EXPECT_NEAR(model_.rate(f3), 0.4 * kGBps, 1e-6 * kGBps);
  EXPECT_EQ(model_.repeated_sweeps(), 1u);
}

// Checks the max-min characterisation directly, independent of how it was computed: the
// allocation is feasible and every flow is at its bound or has a saturated resource on which no
// flow gets more.
struct ActiveFlow {
  FlowId id;
  std::vector<ResourceId> route;
  double bound;
  std::vector<double> weights;  // Empty: 1.
};

void ExpectMaxMinFair(const FlowModel& model, const std::vector<ActiveFlow>& flows) {
  constexpr double kTolerance = 1e-6;
  std::vector<double> usage(model.resource_count(), 0.0);
  std::vector<double> max_rate(model.resource_count(), 0.0);
  for (const ActiveFlow& f : flows) {
    double rate = model.rate(f.id);
    EXPECT_GT(rate, 0);
    for (size_t i = 0; i < f.route.size(); ++i) {
      const ResourceId r = f.route[i];
      usage[r.value] += rate * (f.weights.empty() ? 1.0 : f.weights[i]);
      max_rate[r.value] = std::max(max_rate[r.value], rate);
    }
  }
  for (size_t r = 0; r < usage.size(); ++r) {
    EXPECT_LE(usage[r], model.capacity(ResourceId{static_cast<uint32_t>(r)}) * (1 + kTolerance));
  }
  for (const ActiveFlow& f : flows) {
    double rate = model.rate(f.id);
    bool bottlenecked = rate >= f.bound * (1 - kTolerance);
    for (ResourceId r : f.route) {
      bool saturated = usage[r.value] >= model.capacity(r) * (1 - kTolerance);
      if (saturated && rate >= max_rate[r.value] * (1 - kTolerance)) bottlenecked = true;
    }
    EXPECT_TRUE(bottlenecked) << "flow slot " << f.id.slot << " at " << rate
                              << " B/s has no bottleneck";
  }
}

// The max-min rates of `flows` by progressive filling from scratch: every level, the resource
// with the smallest fair share (capacity left over the unfrozen flows' weights) or the smallest
// bound freezes its flows. The brute-force reference the sweep must agree with.
std::vector<double> ScratchMaxMin(const FlowModel& model, const std::vector<ActiveFlow>& flows) {
  std::vector<double> left(model.resource_count()), weight(model.resource_count(), 0);
  std::vector<int> unfrozen(model.resource_count(), 0);
  for (size_t r = 0; r < left.size(); ++r) left[r] = model.capacity(ResourceId{uint32_t(r)});
  for (const ActiveFlow& f : flows) {
    for (size_t i = 0; i < f.route.size(); ++i) {
      weight[f.route[i].value] += f.weights.empty() ? 1.0 : f.weights[i];
      ++unfrozen[f.route[i].value];
    }
  }
  std::vector<double> rate(flows.size(), -1);
  for (size_t frozen = 0; frozen < flows.size();) {
    double level = std::numeric_limits<double>::infinity();
    for (size_t r = 0; r < left.size(); ++r) {
      if (unfrozen[r] > 0) level = std::min(level, std::max(left[r], 0.0) / weight[r]);
    }
    for (size_t i = 0; i < flows.size(); ++i) {
      if (rate[i] < 0) level = std::min(level, flows[i].bound);
    }
    // Freeze every flow held at this level: at its bound or on a resource saturating here.
    std::vector<size_t> now;
    for (size_t i = 0; i < flows.size(); ++i) {
      if (rate[i] >= 0) continue;
      bool held = flows[i].bound <= level;
      for (ResourceId r : flows[i].route) {
        held = held || std::max(left[r.value], 0.0) / weight[r.value] <= level;
      }
      if (held) now.push_back(i);
    }
    for (size_t i : now) {
      rate[i] = level;
      ++frozen;
      for (size_t h = 0; h < flows[i].route.size(); ++h) {
        const double w = flows[i].weights.empty() ? 1.0 : flows[i].weights[h];
        left[flows[i].route[h].value] -= level * w;
        weight[flows[i].route[h].value] -= w;
        --unfrozen[flows[i].route[h].value];
      }
    }
  }
  return rate;
}

// A watched resource found over capacity by a sliver is still followed where that sliver would
// come out of its fastest flow (a review's counterexample of 2026-12-07): T crosses W with weight
// 0.25 and is held by Y at twice the rate of the 100 flows h, which cross W with weight
// `h_weight` and share X with 10 short flows u. W holds no flow while the u run (91% used); once
// they end, the h take all of X and W would carry `excess` of its capacity more than it has,
// which must come out of T. Let pass, it would be off by excess x 4 / (2 / 100) of T's rate.
void ExpectWatchedExcessFollowed(double h_weight, double excess) {
  Engine engine;
  FlowModel model(&engine);
  constexpr int kH = 100;
  const double c = 1e9;
  const double k = c * (1 + excess) / (h_weight + 0.25 * 2.0 / kH);
  const ResourceId w = *model.AddResource(c), x = *model.AddResource(k),
                   y = *model.AddResource(2 * k / kH);
  std::vector<ActiveFlow> flows;
  auto start = [&](double bytes, std::vector<ResourceId> route, std::vector<double> weights) {
    FlowSpec spec{bytes, route, Time::Zero(), std::numeric_limits<double>::infinity(), weights};
    const FlowId id = *model.StartFlow(spec, [] {});
    flows.push_back({id, route, std::numeric_limits<double>::infinity(), weights});
  };
  start(1e12, {w, y}, {0.25, 1});
  for (int i = 0; i < kH; ++i) start(1e12, {w, x}, {h_weight, 1});
  const size_t long_flows = flows.size();
  for (int i = 0; i < kH / 10; ++i) start(100, {x}, {});
  engine.RunUntil(Time::Milliseconds(1));
  flows.resize(long_flows);  // The u are done.
  const std::vector<double> reference = ScratchMaxMin(model, flows);
  ASSERT_LT(reference[0], 2 * k / kH * (1 - 1e-8));  // W takes from T's rate.
  for (size_t i = 0; i < flows.size(); ++i) {
    EXPECT_NEAR(model.rate(flows[i].id), reference[i], 1e-8 * reference[i]) << "flow " << i;
  }
}

// 0.9e-9 of W's capacity (T 1.3e-6 off with a margin of 1e-9 of the capacity).
TEST(FlowModelWatchTest, AWatchedResourceJustOverCapacityIsFollowed) {
  ExpectWatchedExcessFollowed(7, 0.9e-9);
}

// 5e-12 of W's capacity, under 1e-9 of the heavy h's rate times weight but not of T's (T 7e-8
// off with a margin of 1e-9 of the largest rate times weight).
TEST(FlowModelWatchTest, TheMarginIsTheFastestFlowsShare) {
  ExpectWatchedExcessFollowed(70, 5e-12);
}

// Random bursts of arrivals (with and without latency, weights and bounds, some pieces of an
// earlier flow's route), each followed by a check of every active flow: the max-min condition
// and the from-scratch rates. With `near_ties`, capacities and bounds are off their round values
// by a few 1e-9 of themselves, so that distinct levels fall within the sweep's tie margins
// (flow_model.h, "Ties"), where the rates agree to the stated 1e-7 (1e-8 elsewhere).
void CheckRandomBursts(uint32_t seed, bool near_ties, uint64_t* repeated_sweeps = nullptr) {
  Engine engine;
  FlowModel model(&engine);
  std::mt19937 rng(seed);
  auto jitter = [&] { return near_ties ? 1 + 1e-9 * static_cast<double>(rng() % 7) : 1.0; };
  constexpr int kResources = 24;
  for (int i = 0; i < kResources; ++i) {
    ASSERT_TRUE(model.AddResource(1e9 * (1 + static_cast<double>(rng() % 8)) * jitter()).ok());
  }
  std::vector<ActiveFlow> live;
  std::vector<Time> active_at;
  for (int step = 0; step < 60; ++step) {
    // A burst of arrivals, some with latency, then a look at the allocation.
    int arrivals = 1 + static_cast<int>(rng() % 6);
    for (int a = 0; a < arrivals; ++a) {
      std::vector<uint32_t> picks(kResources);
      for (int i = 0; i < kResources; ++i) picks[i] = i;
      std::shuffle(picks.begin(), picks.end(), rng);
      ActiveFlow flow;
      // 1 to 10 hops: past the six a flow keeps inline and the eight StartFlow checks pairwise.
      const uint32_t hops = 1 + rng() % 10;
      for (uint32_t i = 0; i < hops; ++i) flow.route.push_back(ResourceId{picks[i]});
      flow.bound = rng() % 5 == 0 ? 1e8 * (1 + rng() % 20) * jitter()
                                  : std::numeric_limits<double>::infinity();
      Time latency = Time::Nanoseconds(rng() % 2 * 100);
      if (rng() % 2 == 0) {
        static constexpr double kWeights[] = {0.25, 0.5, 1, 2, 3, 7};
        for (size_t i = 0; i < flow.route.size(); ++i) flow.weights.push_back(kWeights[rng() % 6]);
      }
      if (!live.empty() && rng() % 3 == 0) {
        // Another piece of an earlier flow's pipeline: its route, weights and bound, so flows
        // bundle (FlowModel::FreezeIsolated) alone or with others crossing their route.
        const ActiveFlow& earlier = live[rng() % live.size()];
        flow.route = earlier.route;
        flow.weights = earlier.weights;
        flow.bound = earlier.bound;
      }
      FlowSpec spec{1e5 * (1 + static_cast<double>(rng() % 50)), flow.route, latency, flow.bound,
                    flow.weights};
      StatusOr<FlowId> id = model.StartFlow(spec, [] {});
      ASSERT_TRUE(id.ok());
      flow.id = *id;
      live.push_back(flow);
      active_at.push_back(engine.now() + latency);
    }
    engine.RunUntil(engine.now() + Time::Nanoseconds(rng() % 40'000));
    std::vector<ActiveFlow> active;
    for (size_t i = 0; i < live.size(); ++i) {
      if (model.exists(live[i].id) && active_at[i] <= engine.now()) active.push_back(live[i]);
    }
    ExpectMaxMinFair(model, active);
    // The usage the model keeps (for watched resources a sum of changes) is the flows' sum.
    for (uint32_t r = 0; r < kResources; ++r) {
      const ResourceId resource{r};
      EXPECT_NEAR(model.kept_usage(resource), model.usage(resource),
                  1e-12 * model.capacity(resource))
          << "resource " << r << " at step " << step;
    }
    const std::vector<double> reference = ScratchMaxMin(model, active);
    for (size_t i = 0; i < active.size(); ++i) {
      EXPECT_NEAR(model.rate(active[i].id), reference[i], (near_ties ? 1e-7 : 1e-8) * reference[i])
          << "flow slot " << active[i].id.slot << " at step " << step;
    }
    if (::testing::Test::HasFailure()) return;
  }
  engine.Run();
  EXPECT_EQ(model.live_flows(), 0u);
  if (repeated_sweeps != nullptr) *repeated_sweeps = model.repeated_sweeps();
}

class FlowModelPropertyTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(FlowModelPropertyTest, IncrementalAllocationIsMaxMinFairAtAllTimes) {
  CheckRandomBursts(GetParam(), /*near_ties=*/false);
}

INSTANTIATE_TEST_SUITE_P(Seeds, FlowModelPropertyTest, ::testing::Range(1u, 21u));

// The property seeds reach the repeated sweeps (and so check their rates too).
TEST(FlowModelPropertySeedsTest, RepeatSweepsWhereWatchedResourcesOverflow) {
  uint64_t repeated = 0;
  for (uint32_t seed = 1; seed < 21; ++seed) {
    uint64_t of_seed = 0;
    CheckRandomBursts(seed, /*near_ties=*/false, &of_seed);
    repeated += of_seed;
  }
  EXPECT_GT(repeated, 20u);
}

// Levels a few 1e-9 apart (the review of 2026-12-07 found two ways the sweep's tie order went
// wrong there: a flow counted at its rate by one resource joining through another, and a flow
// frozen past its untouched bottleneck).
class FlowModelNearTieTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(FlowModelNearTieTest, SweepIsExactWhereLevelsNearlyTie) {
  CheckRandomBursts(GetParam(), /*near_ties=*/true);
}

INSTANTIATE_TEST_SUITE_P(Seeds, FlowModelNearTieTest, ::testing::Range(1u, 401u));

TEST_F(FlowModelTest, WeightedFlowCountsItsWeightOnTheResource) {
  ResourceId link = Link(4 * kGBps);
  Time a, b;
  // Weight 3 stands for three flows: four equal flows share 4 GB/s, 1 GB/s each.
  FlowSpec spec{1e9, {link}, Time::Zero(), std::numeric_limits<double>::infinity(), {3}};
  ASSERT_TRUE(model_.StartFlow(spec, [&] { a = engine_.now(); }).ok());
  FlowId other = Start(1e9, {link}, &b);
  engine_.RunUntil(Time::Zero());
  EXPECT_DOUBLE_EQ(model_.rate(other), 1 * kGBps);
  EXPECT_DOUBLE_EQ(model_.usage(link), 4 * kGBps);
  engine_.Run();
  EXPECT_EQ(a, Time::Seconds(1));
  EXPECT_EQ(b, Time::Seconds(1));
}

TEST_F(FlowModelTest, RejectsBadWeights) {
  ResourceId link = Link(kGBps);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(model_.StartFlow(FlowSpec{1, {link}, Time::Zero(), inf, {1, 2}}, [] {}).ok());
  EXPECT_FALSE(model_.StartFlow(FlowSpec{1, {link}, Time::Zero(), inf, {0}}, [] {}).ok());
  EXPECT_FALSE(model_.StartFlow(FlowSpec{1, {link}, Time::Zero(), inf, {inf}}, [] {}).ok());
}

// The quotient of a symmetric network is exact: k rotated copies of every resource and flow
// (the cyclic group Z_k acting on both) give every copy of a flow the rate and completion time
// of one flow per class that crosses each resource class with the number of its hops there as
// its weight.
class FlowModelQuotientTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(FlowModelQuotientTest, QuotientGivesTheFullModelsTimes) {
  std::mt19937 rng(GetParam());
  const uint32_t k = 2 + rng() % 5;        // Copies.
  const uint32_t classes = 3 + rng() % 6;  // Resource classes.
  std::vector<double> capacity(classes);
  for (double& c : capacity) c = 1e9 * (1 + static_cast<double>(rng() % 6));
  Engine full_engine, quotient_engine;
  FlowModel full(&full_engine), quotient(&quotient_engine);
  for (uint32_t c = 0; c < classes; ++c) {
    ASSERT_TRUE(quotient.AddResource(capacity[c]).ok());
    for (uint32_t i = 0; i < k; ++i) ASSERT_TRUE(full.AddResource(capacity[c]).ok());
  }
  auto full_id = [k](uint32_t cls, uint32_t copy) { return ResourceId{cls * k + copy % k}; };
  const int flows = 4 + static_cast<int>(rng() % 12);
  std::vector<Time> full_done(static_cast<size_t>(flows) * k), quotient_done(flows);
  for (int f = 0; f < flows; ++f) {
    // A route of distinct (class, offset) hops; several may fall in one class.
    std::vector<std::pair<uint32_t, uint32_t>> hops;
    const uint32_t length = 1 + rng() % 4;
    while (hops.size() < length) {
      std::pair<uint32_t, uint32_t> hop{static_cast<uint32_t>(rng() % classes),
                                        static_cast<uint32_t>(rng() % k)};
      if (std::find(hops.begin(), hops.end(), hop) == hops.end()) hops.push_back(hop);
    }
    const double bytes = 1e6 * (1 + static_cast<double>(rng() % 40));
    const Time start = Time::Nanoseconds(static_cast<int64_t>(rng() % 3000));
    const Time latency = Time::Nanoseconds(static_cast<int64_t>(rng() % 3) * 50);
    for (uint32_t copy = 0; copy < k; ++copy) {
      FlowSpec spec{bytes, {}, latency};
      for (const auto& [cls, offset] : hops) spec.route.push_back(full_id(cls, offset + copy));
      Time* done = &full_done[static_cast<size_t>(f) * k + copy];
      full_engine.ScheduleAt(start, [&full, &full_engine, spec, done] {
        ASSERT_TRUE(full.StartFlow(spec, [&full_engine, done] { *done = full_engine.now(); }).ok());
      });
    }
    FlowSpec spec{bytes, {}, latency};
    for (const auto& [cls, offset] : hops) {
      auto at = std::find(spec.route.begin(), spec.route.end(), ResourceId{cls});
      if (at == spec.route.end()) {
        spec.route.push_back(ResourceId{cls});
        spec.weights.push_back(1);
      } else {
        spec.weights[at - spec.route.begin()] += 1;
      }
    }
    Time* done = &quotient_done[f];
    quotient_engine.ScheduleAt(start, [&quotient, &quotient_engine, spec, done] {
      ASSERT_TRUE(
          quotient.StartFlow(spec, [&quotient_engine, done] { *done = quotient_engine.now(); })
              .ok());
    });
  }
  full_engine.Run();
  quotient_engine.Run();
  for (int f = 0; f < flows; ++f) {
    for (uint32_t copy = 0; copy < k; ++copy) {
      // Equal up to the rounding of completions to whole picoseconds.
      EXPECT_NEAR(full_done[static_cast<size_t>(f) * k + copy].picoseconds(),
                  quotient_done[f].picoseconds(), 2)
          << "flow " << f << " copy " << copy << " of " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, FlowModelQuotientTest, ::testing::Range(1u, 41u));

}  // namespace
}  // namespace podsim::sim
