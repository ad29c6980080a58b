// Collectives launched on a shared network at simulated times (collective_network.h), and
// explicit rank grids on tori (CollectiveRequest::rank_shape).

#include "collectives/collective_network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine.h"
#include "sim/flow_model.h"
#include "topology/generic_builder.h"
#include "topology/system.h"

namespace podsim::collectives {
namespace {

constexpr double kOneWay = 4.5e10;

topology::Fabric Torus(std::vector<int> shape, double latency_s = 1e-6) {
  std::vector<bool> wraps(shape.size(), true);
  return std::move(*topology::BuildGenericTorus(
      shape, wraps,
      topology::GenericLinkOptions{kOneWay, sim::Time::FromSecondsRounded(latency_s)}));
}

CollectiveRequest AllGather(std::vector<topology::VertexId> ranks, std::vector<int> shape,
                            double bytes) {
  CollectiveRequest request;
  request.op = CollectiveOp::kAllGather;
  request.bytes = bytes;
  request.ranks = std::move(ranks);
  request.rank_shape = std::move(shape);
  return request;
}

std::vector<topology::VertexId> AllChips(const topology::Fabric& fabric) {
  std::vector<topology::VertexId> chips;
  for (topology::VertexId c = 0; c < fabric.chip_count(); ++c) chips.push_back(c);
  return chips;
}

// formulas.md multi-axis all-gather: an explicit 2D grid of ranks runs like --axes x,y.
TEST(RankGridTest, GridOfWholeAxesMatchesMultiAxis) {
  topology::Fabric fabric = Torus({4, 4});
  CollectiveRequest by_axes;
  by_axes.op = CollectiveOp::kAllGather;
  by_axes.bytes = 64 << 20;
  sim::StatusOr<CollectiveResult> axes = SimulateCollective(fabric, by_axes);
  ASSERT_TRUE(axes.ok()) << axes.status();
  sim::StatusOr<CollectiveResult> grid =
      SimulateCollective(fabric, AllGather(AllChips(fabric), {4, 4}, 64 << 20));
  ASSERT_TRUE(grid.ok()) << grid.status();
  EXPECT_EQ(grid->algorithm, "multi-axis");
  EXPECT_EQ(grid->time, axes->time);
}

// One chip in each of 4 slices over DCN: a one-way ring through the DCN switch (each chip's one
// PCIe link carries its sends); the line in slice order it was ran the same bytes over N - 1 links
// one way and back, slower.
TEST(RankGridTest, ChipsInSlicesOfTheirOwnRingThroughTheDcnSwitch) {
  sim::StatusOr<topology::System> system = topology::ParseSystem("tpu-v5p:4x4x1,wrap=all,slices=4");
  ASSERT_TRUE(system.ok()) << system.status();
  const topology::Fabric& fabric = system->fabric;
  std::vector<topology::VertexId> ranks;
  for (int slice = 0; slice < 4; ++slice) ranks.push_back(fabric.ChipAt({1, 2, 0}, slice));
  sim::StatusOr<CollectiveResult> ring = SimulateCollective(fabric, AllGather(ranks, {4}, 1 << 26));
  ASSERT_TRUE(ring.ok()) << ring.status();
  EXPECT_EQ(ring->algorithm, "ring");
  CollectiveRequest as_line = AllGather(ranks, {4}, 1 << 26);
  as_line.algorithm = "line";
  sim::StatusOr<CollectiveResult> line = SimulateCollective(fabric, as_line);
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_LT(ring->time, line->time);
}

// A line of 4 chips on a ring of 8 does not close: the line algorithm, about twice the ring time.
TEST(RankGridTest, PartialAxisRunsAsLine) {
  topology::Fabric fabric = Torus({8});
  sim::StatusOr<CollectiveResult> line =
      SimulateCollective(fabric, AllGather({0, 1, 2, 3}, {4}, 1 << 24));
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->algorithm, "line");
  sim::StatusOr<CollectiveResult> bad =
      SimulateCollective(fabric, AllGather({0, 1, 2}, {4}, 1 << 24));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "rank_shape: its product 4 is not the 3 ranks given");
}

struct Launched {
  sim::Time start, end;
};

// Launches `requests[i]` at `starts[i]` on one network and returns when each finished.
std::vector<sim::Time> RunOnNetwork(const topology::Fabric& fabric,
                                    const std::vector<CollectiveRequest>& requests,
                                    const std::vector<sim::Time>& starts, NetworkMode mode,
                                    uint64_t* overlapped = nullptr) {
  sim::Engine engine;
  sim::FlowModel model(&engine);
  CollectiveNetwork network(&fabric, &engine, &model, CalibratedEfficiency(fabric), mode);
  std::vector<sim::Time> ends(requests.size(), sim::Time::Max());
  for (size_t i = 0; i < requests.size(); ++i) {
    engine.ScheduleAt(starts[i], [&, i] {
      sim::Status status = network.Launch(requests[i], [&, i] { ends[i] = engine.now(); });
      EXPECT_TRUE(status.ok()) << status;
    });
  }
  engine.Run();
  if (overlapped != nullptr) *overlapped = network.overlapped();
  return ends;
}

// Alone on their links, whole collectives take exactly what their transfers take.
TEST(CollectiveNetworkTest, WholeCollectiveAloneEqualsFlows) {
  topology::Fabric fabric = Torus({4, 4});
  // Rows 0 and 1 (x rings) concurrently, then row 0 again; and a 2D all-gather later.
  std::vector<CollectiveRequest> requests = {
      AllGather({0, 1, 2, 3}, {4}, 1 << 22), AllGather({4, 5, 6, 7}, {4}, 1 << 22),
      AllGather({0, 1, 2, 3}, {4}, 1 << 22), AllGather(AllChips(fabric), {4, 4}, 1 << 24)};
  std::vector<sim::Time> starts = {sim::Time::Zero(), sim::Time::Microseconds(3),
                                   sim::Time::Milliseconds(5), sim::Time::Milliseconds(10)};
  uint64_t overlapped = 0;
  std::vector<sim::Time> whole =
      RunOnNetwork(fabric, requests, starts, NetworkMode::kWholeCollective, &overlapped);
  std::vector<sim::Time> flows = RunOnNetwork(fabric, requests, starts, NetworkMode::kFlows);
  EXPECT_EQ(overlapped, 0u);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_NEAR((whole[i] - flows[i]).ToSeconds(), 0, 1e-12) << i;
  }
}

// A network builds each distinct collective once (CollectiveCache) and its launches share that
// layout: a launch after another finished, and two launched together, take what they take on a
// network that builds them afresh; a request naming the algorithm it would be chosen anyway is
// built on its own.
TEST(CollectiveNetworkTest, LaunchesOfOneCollectiveShareItsLayoutAndChangeNoResult) {
  topology::Fabric fabric = Torus({4, 4});
  const CollectiveRequest grid = AllGather(AllChips(fabric), {4, 4}, 1 << 24);
  CollectiveRequest named = AllGather({0, 1, 2, 3}, {4}, 1 << 22);
  named.algorithm = "bidi-ring";
  const std::vector<CollectiveRequest> requests = {
      grid, AllGather({0, 1, 2, 3}, {4}, 1 << 22), grid, named, grid, grid};
  const std::vector<sim::Time> starts = {sim::Time::Zero(),           sim::Time::Milliseconds(5),
                                         sim::Time::Milliseconds(10), sim::Time::Milliseconds(15),
                                         sim::Time::Milliseconds(20), sim::Time::Milliseconds(20)};
  const std::vector<sim::Time> shared = RunOnNetwork(fabric, requests, starts, NetworkMode::kFlows);
  for (size_t i = 0; i < requests.size(); ++i) {
    // The same launches, each on a network of its own that has built nothing before: alone for
    // the first four (their starts are past the previous ones' ends), the last two together.
    const bool pair = i >= 4;
    const std::vector<sim::Time> fresh =
        pair ? RunOnNetwork(fabric, {requests[4], requests[5]}, {starts[4], starts[5]},
                            NetworkMode::kFlows)
             : RunOnNetwork(fabric, {requests[i]}, {starts[i]}, NetworkMode::kFlows);
    EXPECT_EQ(shared[i], fresh[pair ? i - 4 : 0]) << i;
  }
  EXPECT_GT(shared[0] - starts[0], sim::Time::Zero());
  EXPECT_EQ(shared[2] - starts[2], shared[0] - starts[0]);
  EXPECT_EQ(shared[3] - starts[3], shared[1] - starts[1]);
  EXPECT_LT(shared[0], starts[1]);
  EXPECT_EQ(shared[4], shared[5]);
  EXPECT_GT(shared[4] - starts[4], shared[0] - starts[0]);
}

// Two identical collectives on the same links: max-min gives each half, as whole collectives
// and as transfers alike.
TEST(CollectiveNetworkTest, OverlappingCollectivesShareTheirBottleneck) {
  topology::Fabric fabric = Torus({4, 4});
  std::vector<CollectiveRequest> requests = {AllGather({0, 1, 2, 3}, {4}, 1 << 24),
                                             AllGather({0, 1, 2, 3}, {4}, 1 << 24)};
  std::vector<sim::Time> together = {sim::Time::Zero(), sim::Time::Zero()};
  std::vector<sim::Time> alone =
      RunOnNetwork(fabric, {requests[0]}, {sim::Time::Zero()}, NetworkMode::kFlows);
  std::vector<sim::Time> flows = RunOnNetwork(fabric, requests, together, NetworkMode::kFlows);
  uint64_t overlapped = 0;
  std::vector<sim::Time> whole =
      RunOnNetwork(fabric, requests, together, NetworkMode::kWholeCollective, &overlapped);
  EXPECT_NEAR(flows[0].ToSeconds() / alone[0].ToSeconds(), 2.0, 0.1);
  EXPECT_EQ(overlapped, 1u);
  EXPECT_NEAR(whole[1].ToSeconds() / flows[1].ToSeconds(), 1.0, 0.02);
}

// On a wrapped torus every row's ring is a translate of row 0's: one rehearsal serves them all,
// and each runs over its own links (so rows do not contend).
TEST(CollectiveNetworkTest, TranslatesShareOneRehearsal) {
  topology::Fabric fabric = Torus({4, 4});
  sim::Engine engine;
  sim::FlowModel model(&engine);
  CollectiveNetwork network(&fabric, &engine, &model, PureFabric());
  std::vector<sim::Time> ends(4);
  for (uint32_t row = 0; row < 4; ++row) {
    std::vector<topology::VertexId> ranks;
    for (uint32_t x = 0; x < 4; ++x) ranks.push_back(row * 4 + (x + row) % 4);
    sim::Status status =
        network.Launch(AllGather(ranks, {4}, 1 << 24), [&, row] { ends[row] = engine.now(); });
    ASSERT_TRUE(status.ok()) << status;
  }
  engine.Run();
  EXPECT_EQ(network.rehearsals(), 1u);
  EXPECT_EQ(network.overlapped(), 0u);
  for (uint32_t row = 1; row < 4; ++row) EXPECT_EQ(ends[row], ends[0]);
  sim::StatusOr<sim::Time> alone = network.IdleDuration(AllGather({0, 1, 2, 3}, {4}, 1 << 24));
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(ends[0], *alone);
}

// A rehearsal's record does not depend on what was rehearsed before it (the rehearsal clock has
// moved on): what lets rehearsal_cache.h share records between networks.
TEST(CollectiveNetworkTest, RehearsalDoesNotDependOnTheRehearsalClock) {
  topology::Fabric fabric = Torus({4, 4}, 1.3e-6);
  const CollectiveRequest first = AllGather(AllChips(fabric), {4, 4}, 48e6);
  const CollectiveRequest second = AllGather({0, 1, 2, 3}, {4}, 1000004);
  sim::Engine engine;
  sim::FlowModel model(&engine);
  CollectiveNetwork after(&fabric, &engine, &model, CalibratedEfficiency(fabric));
  sim::StatusOr<sim::Time> before = after.IdleDuration(first);
  ASSERT_TRUE(before.ok()) << before.status();
  sim::StatusOr<sim::Time> late = after.IdleDuration(second);
  sim::Engine engine2;
  sim::FlowModel model2(&engine2);
  CollectiveNetwork fresh(&fabric, &engine2, &model2, CalibratedEfficiency(fabric));
  sim::StatusOr<sim::Time> early = fresh.IdleDuration(second);
  ASSERT_TRUE(late.ok() && early.ok());
  EXPECT_EQ(*late, *early);
}

// A network that finds its rehearsals in a shared cache runs the same collectives to the same
// picosecond, without rehearsing.
TEST(CollectiveNetworkTest, SharedRehearsalsChangeNoResult) {
  topology::Fabric fabric = Torus({4, 4});
  const std::vector<CollectiveRequest> requests = {AllGather({0, 1, 2, 3}, {4}, 1 << 22),
                                                   AllGather({0, 4, 8, 12}, {4}, 1 << 22),
                                                   AllGather(AllChips(fabric), {4, 4}, 1 << 24)};
  const std::vector<sim::Time> starts = {sim::Time::Zero(), sim::Time::Microseconds(2),
                                         sim::Time::Microseconds(5)};
  RehearsalCache cache(&fabric, CalibratedEfficiency(fabric));
  auto run = [&](RehearsalCache* shared, uint64_t* events) {
    sim::Engine engine;
    sim::FlowModel model(&engine);
    CollectiveNetwork network(&fabric, &engine, &model, CalibratedEfficiency(fabric),
                              NetworkMode::kWholeCollective, shared);
    std::vector<sim::Time> ends(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      engine.ScheduleAt(starts[i], [&, i] {
        sim::Status status = network.Launch(requests[i], [&, i] { ends[i] = engine.now(); });
        EXPECT_TRUE(status.ok()) << status;
      });
    }
    engine.Run();
    *events = network.rehearsal_events();
    return ends;
  };
  uint64_t events = 0;
  const std::vector<sim::Time> alone = run(nullptr, &events);
  EXPECT_GT(events, 0u);
  const std::vector<sim::Time> filling = run(&cache, &events);
  EXPECT_GT(events, 0u);
  EXPECT_EQ(cache.size(), 3u);
  const std::vector<sim::Time> reusing = run(&cache, &events);
  EXPECT_EQ(events, 0u);
  EXPECT_EQ(filling, alone);
  EXPECT_EQ(reusing, alone);
}

TEST(CollectiveNetworkTest, BadRequestFailsAtLaunch) {
  topology::Fabric fabric = Torus({4, 4});
  sim::Engine engine;
  sim::FlowModel model(&engine);
  CollectiveNetwork network(&fabric, &engine, &model, PureFabric());
  CollectiveRequest request = AllGather({0, 1, 2, 3}, {4}, 0);
  sim::Status status = network.Launch(request, [] {});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "--bytes: must be > 0 (got 0)");
}

// Launch reports the algorithm it runs, as ChooseAlgorithm names it, in both modes and for a
// translated rehearsal; asking does not change when the collective ends.
TEST(CollectiveNetworkTest, LaunchReportsTheAlgorithmItRuns) {
  topology::Fabric fabric = Torus({4, 4});
  const std::vector<CollectiveRequest> requests = {
      AllGather({0, 1, 2, 3}, {4}, 1 << 22), AllGather({4, 5, 6, 7}, {4}, 1 << 22),
      AllGather({0, 1}, {2}, 1 << 22), AllGather(AllChips(fabric), {4, 4}, 1 << 24)};
  for (NetworkMode mode : {NetworkMode::kWholeCollective, NetworkMode::kFlows}) {
    const std::vector<sim::Time> unasked = RunOnNetwork(
        fabric, requests, std::vector<sim::Time>(requests.size(), sim::Time::Zero()), mode);
    sim::Engine engine;
    sim::FlowModel model(&engine);
    CollectiveNetwork network(&fabric, &engine, &model, CalibratedEfficiency(fabric), mode);
    std::vector<sim::Time> ends(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      std::string algorithm;
      ASSERT_TRUE(network
                      .Launch(
                          requests[i], [&, i] { ends[i] = engine.now(); }, &algorithm)
                      .ok());
      sim::StatusOr<AlgorithmChoice> chosen = ChooseAlgorithm(fabric, requests[i]);
      ASSERT_TRUE(chosen.ok()) << chosen.status();
      EXPECT_EQ(algorithm, chosen->algorithm) << i;
    }
    engine.Run();
    EXPECT_EQ(ends, unasked);
  }
  std::string algorithm;
  sim::Engine engine;
  sim::FlowModel model(&engine);
  CollectiveNetwork network(&fabric, &engine, &model, PureFabric());
  ASSERT_TRUE(network
                  .Launch(
                      requests[2], [] {}, &algorithm)
                  .ok());
  EXPECT_EQ(algorithm, "ring");  // Two ranks: each sends the other its shard.
  ASSERT_TRUE(network
                  .Launch(
                      requests[3], [] {}, &algorithm)
                  .ok());
  EXPECT_EQ(algorithm, "multi-axis");
}

CollectiveRequest OverRanks(CollectiveOp op, std::vector<topology::VertexId> ranks, double bytes) {
  CollectiveRequest request;
  request.op = op;
  request.bytes = bytes;
  request.ranks = std::move(ranks);
  return request;
}

// The ranks of `nodes` nodes of 8 GPUs from `first_node` on, at the given slots of each, node by
// node; `interleave`: even slots first, then odd (a mesh axis of 2 innermost, as seq_shards=2
// leaves an FSDP group).
std::vector<topology::VertexId> GpuRanks(int first_node, int nodes, std::vector<int> slots,
                                         bool interleave = false) {
  std::vector<topology::VertexId> ranks;
  for (int pass = 0; pass < (interleave ? 2 : 1); ++pass) {
    for (int node = first_node; node < first_node + nodes; ++node) {
      for (int slot : slots) {
        if (!interleave || slot % 2 == pass) {
          ranks.push_back(static_cast<topology::VertexId>(node * 8 + slot));
        }
      }
    }
  }
  return ranks;
}

// Checks that rehearsing `requests` one rank per orbit of their symmetry (the default) gives
// what rehearsing every rank gives (CollectiveRequest::reference): each one's duration alone to
// the picosecond, whatever was rehearsed before it, at fewer events; and, launched 40 us apart on
// one network, the same ends, which depend on the bottleneck links and bytes of their records.
void ExpectSymmetricRehearsalsEqualEveryRank(const topology::Fabric& fabric,
                                             const std::vector<CollectiveRequest>& requests) {
  std::vector<CollectiveRequest> reference = requests;
  for (CollectiveRequest& request : reference) request.reference = true;
  const FabricEfficiency efficiency = CalibratedEfficiency(fabric);
  sim::Engine engine;
  sim::FlowModel model(&engine);
  CollectiveNetwork after_others(&fabric, &engine, &model, efficiency);
  for (size_t i = 0; i < requests.size(); ++i) {
    SCOPED_TRACE(i);
    sim::Engine e1, e2;
    sim::FlowModel m1(&e1), m2(&e2);
    CollectiveNetwork quotient(&fabric, &e1, &m1, efficiency);
    CollectiveNetwork every_rank(&fabric, &e2, &m2, efficiency);
    sim::StatusOr<sim::Time> fast = quotient.IdleDuration(requests[i]);
    sim::StatusOr<sim::Time> full = every_rank.IdleDuration(reference[i]);
    sim::StatusOr<sim::Time> later = after_others.IdleDuration(requests[i]);
    ASSERT_TRUE(fast.ok() && full.ok() && later.ok()) << fast.status() << full.status();
    EXPECT_EQ(*fast, *full);
    EXPECT_EQ(*later, *full);
    EXPECT_LT(quotient.rehearsal_events() * 3, every_rank.rehearsal_events() * 2)
        << quotient.rehearsal_events() << " vs " << every_rank.rehearsal_events();
  }
  const std::vector<sim::Time> starts = {sim::Time::Zero(), sim::Time::Microseconds(40)};
  uint64_t overlapped = 0, reference_overlapped = 0;
  const std::vector<sim::Time> quotient =
      RunOnNetwork(fabric, requests, starts, NetworkMode::kWholeCollective, &overlapped);
  const std::vector<sim::Time> every_rank =
      RunOnNetwork(fabric, reference, starts, NetworkMode::kWholeCollective, &reference_overlapped);
  EXPECT_EQ(overlapped, 1u);
  EXPECT_EQ(reference_overlapped, 1u);
  for (size_t i = 0; i < quotient.size(); ++i) {
    EXPECT_NEAR(quotient[i].ToSeconds(), every_rank[i].ToSeconds(),
                1e-9 * every_rank[i].ToSeconds())
        << i;
  }
}

// A rehearsal of ranks that shifts of the fabric map onto themselves simulates one rank per
// orbit (SymmetryOfRanks) and gives what every rank gives. GPU FSDP-like groups: every GPU in
// the interleaved order seq_shards=2 leaves, alternate slots of every node, a rail, a node's
// all-reduce (NVLS on H100, a ring on A100, whose NVSwitches are copies of one another) and
// all-gather, a block of slots in a quarter of the nodes (half an SU of h100:512: node digits).
void ExpectGpuRehearsalsEqualEveryRank(const std::string& name) {
  SCOPED_TRACE(name);
  sim::StatusOr<topology::System> system = topology::ParseSystem(name);
  ASSERT_TRUE(system.ok()) << system.status();
  const topology::Fabric& fabric = system->fabric;
  const int nodes = static_cast<int>(fabric.chip_count() / 8);
  const std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  const std::vector<std::vector<CollectiveRequest>> cases = {
      {OverRanks(CollectiveOp::kReduceScatter, GpuRanks(0, nodes, all, true), 1 << 28),
       OverRanks(CollectiveOp::kAllGather, GpuRanks(0, nodes, {0, 2, 4, 6}), 1 << 27)},
      {OverRanks(CollectiveOp::kAllGather, GpuRanks(0, nodes, {3}), 1 << 26),
       OverRanks(CollectiveOp::kReduceScatter, GpuRanks(0, nodes, {3, 7}), 1 << 26)},
      {OverRanks(CollectiveOp::kAllReduce, GpuRanks(0, 1, all), 1 << 26),
       OverRanks(CollectiveOp::kAllGather, GpuRanks(0, 1, all), 1 << 26)},
      {OverRanks(CollectiveOp::kAllGather, GpuRanks(0, nodes / 4, {4, 5, 6, 7}), 1 << 27),
       OverRanks(CollectiveOp::kReduceScatter, GpuRanks(0, nodes, all), 1 << 28)},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    SCOPED_TRACE(c);
    ExpectSymmetricRehearsalsEqualEveryRank(fabric, cases[c]);
  }
}

TEST(CollectiveNetworkTest, SymmetricRehearsalsEqualEveryRank) {
  ExpectGpuRehearsalsEqualEveryRank("h100:64");
  ExpectGpuRehearsalsEqualEveryRank("a100:64");
  // A wrapped torus: a row's ring and the 2D grid of every chip (the multi-axis algorithm).
  topology::Fabric torus = Torus({8, 8});
  ExpectSymmetricRehearsalsEqualEveryRank(torus, {AllGather({0, 1, 2, 3, 4, 5, 6, 7}, {8}, 1 << 24),
                                                  AllGather(AllChips(torus), {8, 8}, 1 << 26)});
}

// Two scalable units: a quarter of the nodes is half an SU (node digits).
TEST(CollectiveNetworkTest, SymmetricRehearsalsOfScalableUnitsEqualEveryRank) {
  ExpectGpuRehearsalsEqualEveryRank("h100:512");
}

// Expected users (collective_network.h): a ring through eight nodes' first GPUs crosses leaf and
// spine links, where replays need the caller to say what else may still come.
class ExpectedUsersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sim::StatusOr<topology::System> system = topology::ParseSystem("h100:512");
    ASSERT_TRUE(system.ok()) << system.status();
    system_ = std::move(*system);
    network_ = std::make_unique<CollectiveNetwork>(&system_.fabric, &engine_, &model_,
                                                   CalibratedEfficiency(system_.fabric),
                                                   NetworkMode::kFlows);
    network_->EnableReplays({}, [this] { ++intrusions_; });
  }

  // The ring through the first GPU of nodes [first_node, first_node + 8).
  CollectiveRequest Ring(int first_node) const {
    return OverRanks(CollectiveOp::kAllReduce, GpuRanks(first_node, 8, {0}), 1 << 26);
  }
  // The resources of the routes between a request's ring neighbours, both ways.
  std::vector<sim::ResourceId> Footprint(const CollectiveRequest& request) const {
    std::vector<sim::ResourceId> resources;
    for (size_t i = 0; i < request.ranks.size(); ++i) {
      const topology::VertexId a = request.ranks[i];
      const topology::VertexId b = request.ranks[(i + 1) % request.ranks.size()];
      for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
        for (topology::LinkIndex link : system_.fabric.Route(from, to)) {
          resources.push_back(network_->ResourceOf(link));
        }
      }
    }
    std::sort(resources.begin(), resources.end());
    resources.erase(std::unique(resources.begin(), resources.end()), resources.end());
    return resources;
  }
  // Launches `request` on channel 1, expected on its footprint until it ends; the time it took.
  sim::Time Run(const CollectiveRequest& request) {
    const std::vector<sim::ResourceId> footprint = Footprint(request);
    network_->ExpectUse(footprint, 1, +1);
    const sim::Time start = engine_.now();
    sim::Time end = sim::Time::Max();
    sim::Status status = network_->Launch(
        request,
        [&] {
          end = engine_.now();
          network_->ExpectUse(footprint, 1, -1);
        },
        nullptr, 1, LaunchExpectation{footprint, 1});
    EXPECT_TRUE(status.ok()) << status;
    engine_.Run();
    return end - start;
  }

  topology::System system_;
  sim::Engine engine_;
  sim::FlowModel model_{&engine_};
  std::unique_ptr<CollectiveNetwork> network_;
  int intrusions_ = 0;
};

// Alone on switch links and with nothing else expected there, the second launch replays, and a
// translate (the same ring in the second SU) replays from its first launch on the first's
// rehearsal: each takes what it takes alone.
TEST_F(ExpectedUsersTest, ReplaysOnSwitchLinksAndTranslatesShareTheRehearsal) {
  const sim::Time first = Run(Ring(0));
  EXPECT_EQ(network_->replayed(), 0u);
  const sim::Time second = Run(Ring(0));
  EXPECT_EQ(network_->replayed(), 1u);
  EXPECT_EQ(second, first);
  const uint64_t rehearsals = network_->rehearsals();
  const sim::Time translate = Run(Ring(32));
  EXPECT_EQ(network_->replayed(), 2u);
  EXPECT_EQ(network_->rehearsals(), rehearsals);
  sim::StatusOr<sim::Time> alone = network_->IdleDuration(Ring(32));
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ(translate, *alone);
  EXPECT_EQ(intrusions_, 0);
}

// Another channel's operation still expected on one of the ring's links stops the replay, unless
// the lookahead shows it cannot start before the replay's hold ends.
TEST_F(ExpectedUsersTest, WhatIsExpectedElsewhereStopsAReplayUnlessItComesLater) {
  const CollectiveRequest ring = Ring(0);
  const std::vector<sim::ResourceId> footprint = Footprint(ring);
  const std::vector<sim::ResourceId> other = {footprint.back()};
  network_->ExpectUse(other, 2, +1);
  Run(ring);
  Run(ring);
  EXPECT_EQ(network_->replayed(), 0u);
  sim::Time asked_until;
  bool later = false;
  network_->SetLookahead(
      [&](std::span<const sim::ResourceId>, sim::Time until, sim::Time, uint64_t work) {
        asked_until = until;
        EXPECT_GT(work, 0u);
        return later;
      });
  const sim::Time start = engine_.now();
  const sim::Time declined = Run(ring);
  EXPECT_EQ(network_->replayed(), 0u);
  EXPECT_GE(asked_until, start + declined);
  later = true;
  const sim::Time replayed = Run(ring);
  EXPECT_EQ(network_->replayed(), 1u);
  EXPECT_EQ(replayed, declined);
  // Once that operation is done, nothing is asked.
  network_->ExpectUse(other, 2, -1);
  later = false;
  Run(ring);
  EXPECT_EQ(network_->replayed(), 2u);
  EXPECT_EQ(intrusions_, 0);
}

// The footprint is a prediction: a flow that comes anyway on a held link is an intrusion.
TEST_F(ExpectedUsersTest, AFlowTheFootprintMissedIsAnIntrusion) {
  const CollectiveRequest ring = Ring(0);
  Run(ring);
  const std::vector<sim::ResourceId> footprint = Footprint(ring);
  network_->ExpectUse(footprint, 1, +1);
  sim::Status status = network_->Launch(
      ring, [] {}, nullptr, 1, LaunchExpectation{footprint, 1});
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(network_->replayed(), 1u);
  // A send between two GPUs of the ring, on channel 2, that nothing announced.
  CollectiveRequest send;
  send.op = CollectiveOp::kPointToPoint;
  send.bytes = 1 << 20;
  send.src = ring.ranks[0];
  send.dst = ring.ranks[1];
  ASSERT_TRUE(network_
                  ->Launch(
                      send, [] {}, nullptr, 2)
                  .ok());
  engine_.Run();
  EXPECT_GE(intrusions_, 1);  // Once per held link the send becomes active on.
  ASSERT_TRUE(network_->intruded().has_value());
  EXPECT_EQ(*network_->intruded(), CollectiveNetwork::ReplayKey(ring));
}

}  // namespace
}  // namespace podsim::collectives
