// Chunked, back-to-back sends: the route latency of a chunk hides behind the previous chunk's
// delivery (transfer_executor.h SendTiming; shard_forwarding.h Chunks).

#include "collectives/shard_forwarding.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "collectives/phased_collective.h"
#include "collectives/transfer_executor.h"
#include "sim/engine.h"
#include "sim/flow_model.h"
#include "topology/generic_builder.h"

namespace podsim::collectives {
namespace {

constexpr double kBandwidth = 1e10;                          // 10 GB/s per link direction.
constexpr sim::Time kLatency = sim::Time::Microseconds(10);  // A long wire.

struct Rig {
  explicit Rig(int ranks)
      : fabric(std::move(*topology::BuildRing(ranks, {kBandwidth, kLatency}))),
        model(&engine),
        executor((topology::InstallLinks(fabric, &model), &fabric), &engine, &model,
                 sim::Time::Zero()) {}
  topology::Fabric fabric;
  sim::Engine engine;
  sim::FlowModel model;
  TransferExecutor executor;
};

TEST(SendTimingTest, BackToBackSendHidesItsLatency) {
  Rig rig(2);
  const double bytes = 1e6;  // 100 us at 10 GB/s.
  sim::Time first_done, second_done;
  rig.executor.Send(0, 1, bytes, [&] {
    first_done = rig.engine.now();
    // The second chunk's data was ready at time 0: it streams right behind the first.
    SendTiming timing{sim::Time::Zero(), first_done};
    rig.executor.Send(
        0, 1, bytes, [&] { second_done = rig.engine.now(); }, timing);
  });
  rig.engine.Run();
  EXPECT_EQ(first_done, kLatency + sim::Time::Microseconds(100));
  EXPECT_EQ(second_done, first_done + sim::Time::Microseconds(100));
}

TEST(SendTimingTest, DataArrivingAfterTheWireDrainedPaysTheFullLatency) {
  Rig rig(2);
  sim::Time done;
  rig.engine.Schedule(sim::Time::Microseconds(280), [&] {
    // The previous send completed at 250 us (its last byte left at 240 us); the data is ready at
    // 280 us, so nothing is in the wire and the whole latency is owed.
    SendTiming timing{sim::Time::Microseconds(280), sim::Time::Microseconds(250)};
    rig.executor.Send(
        0, 1, 1e6, [&] { done = rig.engine.now(); }, timing);
  });
  rig.engine.Run();
  EXPECT_EQ(done, sim::Time::Microseconds(280) + kLatency + sim::Time::Microseconds(100));
}

TEST(SendTimingTest, DataReadyWhileThePreviousChunkWasInTheWirePaysPartOfTheLatency) {
  Rig rig(2);
  sim::Time done;
  rig.engine.Schedule(sim::Time::Microseconds(250), [&] {
    // Ready at 245 us, after the previous chunk's last byte left (240 us): the sender starts at
    // 245 us and the chunk lands at 245 + 10 + 100 us.
    SendTiming timing{sim::Time::Microseconds(245), sim::Time::Microseconds(250)};
    rig.executor.Send(
        0, 1, 1e6, [&] { done = rig.engine.now(); }, timing);
  });
  rig.engine.Run();
  EXPECT_EQ(done, sim::Time::Microseconds(245) + kLatency + sim::Time::Microseconds(100));
}

sim::Time RingAllGather(int ranks, double shard, uint32_t chunks) {
  Rig rig(ranks);
  std::vector<topology::VertexId> members;
  for (int i = 0; i < ranks; ++i) members.push_back(static_cast<topology::VertexId>(i));
  ExchangePiece piece;
  piece.phases.push_back(
      ExchangePhase{ForwardingPattern::kUnidirectionalRing, {members}, shard, chunks});
  PhasedCollective collective(&rig.executor, members, {piece});
  sim::Time end;
  collective.Start([&] { end = rig.engine.now(); });
  rig.engine.Run();
  return end;
}

// Without chunks every ring step pays the hop latency before its shard: (n-1) (L + s/W). With
// chunks a rank streams its sends back to back, so the latency is paid once and the ring runs at
// its bandwidth bound: (n-1) s/W + L.
TEST(ShardForwardingTest, ChunksPipelineRingStepsPastTheLatency) {
  const int n = 8;
  const double shard = 1e6;  // 100 us per step at 10 GB/s; latency 10 us per hop.
  const double step_s = shard / kBandwidth;
  const double unchunked = RingAllGather(n, shard, 1).ToSeconds();
  EXPECT_NEAR(unchunked, (n - 1) * (kLatency.ToSeconds() + step_s), 1e-9);
  const uint32_t c = 8;
  const double chunked = RingAllGather(n, shard, c).ToSeconds();
  EXPECT_NEAR(chunked, (n - 1) * step_s + kLatency.ToSeconds(), 1e-9);
  EXPECT_GE(chunked, (n - 1) * step_s);  // Never faster than the bytes.
}

}  // namespace
}  // namespace podsim::collectives
