#include "topology/gpu_builder.h"

#include <gtest/gtest.h>

#include "sim/engine.h"
#include "sim/flow_model.h"

namespace podsim::topology {
namespace {

Fabric Gpus(std::string_view chip, int gpus, double oversub = 1) {
  sim::StatusOr<Fabric> fabric = BuildGpuSystem(ChipPreset(chip).value(), gpus, oversub);
  PODSIM_CHECK(fabric.ok()) << fabric.status();
  return std::move(fabric).value();
}

double OutBandwidth(const Fabric& f, VertexId v, LinkKind kind) {
  double total = 0;
  for (LinkIndex l : f.OutLinks(v)) {
    if (f.link(l).kind == kind) total += f.link(l).bandwidth_bytes_per_s;
  }
  return total;
}

TEST(GpuBuilderTest, H100NodeHasFourSwitchesInA5445Pattern) {
  Fabric f = Gpus("h100", 8);
  EXPECT_EQ(f.chip_count(), 8u);
  EXPECT_EQ(f.CountVertices(VertexKind::kNvSwitch), 4u);
  EXPECT_EQ(f.link_count(), 8u * 4 * 2);
  EXPECT_EQ(f.switch_levels(), 1);
  EXPECT_FALSE(f.NicOf(0).has_value());
  std::vector<VertexId> switches = f.NodeSwitches(0);
  ASSERT_EQ(switches.size(), 4u);
  for (VertexId g = 0; g < 8; ++g) {
    EXPECT_DOUBLE_EQ(OutBandwidth(f, g, LinkKind::kNvLink), 450e9);  // 18 x 25 GB/s.
  }
  std::vector<double> per_switch;
  for (LinkIndex l : f.OutLinks(0)) per_switch.push_back(f.link(l).bandwidth_bytes_per_s);
  EXPECT_EQ(per_switch, (std::vector<double>{125e9, 100e9, 100e9, 125e9}));
  // Each switch sees 8 GPUs.
  EXPECT_EQ(f.OutLinks(switches[0]).size(), 8u);
}

TEST(GpuBuilderTest, OtherNodes) {
  Fabric a100 = Gpus("a100", 8);
  EXPECT_EQ(a100.CountVertices(VertexKind::kNvSwitch), 6u);
  EXPECT_DOUBLE_EQ(OutBandwidth(a100, 3, LinkKind::kNvLink), 300e9);
  Fabric b200 = Gpus("b200", 8);
  EXPECT_EQ(b200.CountVertices(VertexKind::kNvSwitch), 2u);
  EXPECT_DOUBLE_EQ(OutBandwidth(b200, 3, LinkKind::kNvLink), 900e9);
  Fabric nvl72 = Gpus("gb200", 72);
  EXPECT_EQ(nvl72.chip_count(), 72u);
  EXPECT_EQ(nvl72.CountVertices(VertexKind::kNvSwitch), 18u);
  EXPECT_EQ(nvl72.gpus_per_node(), 72);
  EXPECT_DOUBLE_EQ(OutBandwidth(nvl72, 71, LinkKind::kNvLink), 900e9);
  Fabric half = Gpus("h100", 4);
  EXPECT_EQ(half.chip_count(), 4u);
  EXPECT_EQ(half.CountVertices(VertexKind::kNvSwitch), 4u);
}

TEST(GpuBuilderTest, SuperPodOf1024GpusHas560Switches) {
  // hardware.md 1.3: 128 nodes, 4 SUs of 8 leaves, 16 spines: 512 + 32 + 16 = 560 switches.
  Fabric f = Gpus("h100", 1024);
  EXPECT_EQ(f.switch_levels(), 2);
  EXPECT_EQ(f.CountVertices(VertexKind::kNvSwitch), 512u);
  EXPECT_EQ(f.CountVertices(VertexKind::kLeafSwitch), 32u);
  EXPECT_EQ(f.CountVertices(VertexKind::kSpineSwitch), 16u);
  EXPECT_EQ(f.CountVertices(VertexKind::kCoreSwitch), 0u);
  EXPECT_EQ(f.CountVertices(VertexKind::kNic), 1024u);
  // A leaf: 32 down-ports of 50 GB/s, and as much up, spread over 16 spines (2 ports each).
  const VertexId leaf = f.gpu()->leaves[0];
  double down = 0, up = 0;
  for (LinkIndex l : f.OutLinks(leaf)) {
    (f.vertex_kind(f.link(l).dst) == VertexKind::kNic ? down : up) +=
        f.link(l).bandwidth_bytes_per_s;
  }
  EXPECT_DOUBLE_EQ(down, 32 * 50e9);
  EXPECT_DOUBLE_EQ(up, 32 * 50e9);
  // A spine: 64 ports of 50 GB/s = 3.2 TB/s down (hardware.md: "16 x 3.2TB/s = 51.2TB/s").
  EXPECT_DOUBLE_EQ(OutBandwidth(f, f.gpu()->spines[0], LinkKind::kInfiniBand), 3.2e12);
}

TEST(GpuBuilderTest, ThirdLevelWhenTheGpuCountNeedsIt) {
  Fabric f = Gpus("h100", 16384);
  EXPECT_EQ(f.switch_levels(), 3);
  EXPECT_EQ(f.gpu()->pods, 16);
  EXPECT_EQ(f.CountVertices(VertexKind::kLeafSwitch), 512u);
  EXPECT_EQ(f.CountVertices(VertexKind::kSpineSwitch), 16u * 32);
  EXPECT_EQ(f.CountVertices(VertexKind::kCoreSwitch), 32u * 8);
  // Every spine and core switch uses at most its 64 ports' worth of bandwidth each way.
  for (VertexId v = f.chip_count(); v < f.vertex_count(); ++v) {
    if (f.vertex_kind(v) == VertexKind::kSpineSwitch ||
        f.vertex_kind(v) == VertexKind::kCoreSwitch) {
      EXPECT_LE(OutBandwidth(f, v, LinkKind::kInfiniBand), 64 * 50e9 + 1);
    }
  }
  EXPECT_EQ(Gpus("h100", 1032).switch_levels(), 3);
}

TEST(GpuBuilderTest, RouteLengthsBySharedLevel) {
  Fabric f = Gpus("h100", 16384);
  EXPECT_EQ(f.Route(0, 5).size(), 2u);      // Same node: GPU -> NVSwitch -> GPU.
  EXPECT_EQ(f.Route(0, 8).size(), 4u);      // Same rail leaf: GPU, NIC, leaf, NIC, GPU.
  EXPECT_EQ(f.Route(0, 9).size(), 6u);      // Other rail: up to a spine.
  EXPECT_EQ(f.Route(0, 512).size(), 6u);    // Other SU of the same pod.
  EXPECT_EQ(f.Route(0, 16383).size(), 8u);  // Other pod: through a core switch.
  for (VertexId b : {1u, 8u, 9u, 300u, 2048u, 9999u, 16383u}) {
    std::vector<LinkIndex> route = f.Route(0, b);
    EXPECT_EQ(route.size(), f.Route(b, 0).size());
    VertexId at = 0;
    for (LinkIndex l : route) {
      ASSERT_EQ(f.link(l).src, at);
      at = f.link(l).dst;
    }
    EXPECT_EQ(at, b);
  }
  // Destinations on different nodes spread over different spines.
  EXPECT_NE(f.Route(0, 9)[2], f.Route(0, 17)[2]);
}

TEST(GpuBuilderTest, IdleTransferInsideANodeUsesAllNvLinks) {
  Fabric f = Gpus("h100", 8);
  sim::Engine engine;
  sim::FlowModel model(&engine);
  InstallLinks(f, &model);
  const double bytes = 450e6;  // 1 ms at 450 GB/s.
  std::vector<WeightedRoute> routes = f.ParallelRoutes(0, 5);
  ASSERT_EQ(routes.size(), 4u);
  double fractions = 0;
  sim::Time last;
  for (const WeightedRoute& r : routes) {
    fractions += r.fraction;
    std::vector<sim::ResourceId> resources;
    for (LinkIndex l : r.route) resources.push_back(sim::ResourceId{l});
    ASSERT_TRUE(
        model
            .StartFlow(sim::FlowSpec{bytes * r.fraction, resources, f.RouteLatency(r.route)},
                       [&] { last = std::max(last, engine.now()); })
            .ok());
  }
  engine.Run();
  EXPECT_DOUBLE_EQ(fractions, 1.0);
  // Two NVLink hops of 0.5 us, then 1 ms of bytes (to within a picosecond of rounding).
  const sim::Time expected = sim::Time::Microseconds(1) + sim::Time::Milliseconds(1);
  EXPECT_LE(std::abs((last - expected).picoseconds()), 1);
}

TEST(GpuBuilderTest, IdleTransferAcrossNodesIsNicBound) {
  Fabric f = Gpus("h100", 64);
  sim::Engine engine;
  sim::FlowModel model(&engine);
  InstallLinks(f, &model);
  std::vector<LinkIndex> route = f.Route(3, 40);
  ASSERT_EQ(route.size(), 6u);
  EXPECT_DOUBLE_EQ(f.RouteBandwidth(route), 50e9);
  std::vector<sim::ResourceId> resources;
  for (LinkIndex l : route) resources.push_back(sim::ResourceId{l});
  sim::Time done;
  ASSERT_TRUE(model
                  .StartFlow(sim::FlowSpec{50e6, resources, f.RouteLatency(route)},
                             [&] { done = engine.now(); })
                  .ok());
  engine.Run();
  // 2 PCIe + 4 InfiniBand hops of 0.5 us, then 1 ms at 50 GB/s.
  EXPECT_EQ(done, sim::Time::Microseconds(3) + sim::Time::Milliseconds(1));
}

TEST(GpuBuilderTest, BadCounts) {
  const ChipSpec h100 = ChipPreset("h100").value();
  EXPECT_EQ(BuildGpuSystem(h100, 12, 1).status().message(),
            "h100:12: more than one node needs whole nodes of 8 GPUs (got 12)");
  EXPECT_EQ(BuildGpuSystem(h100, 0, 1).status().message(), "h100:0: needs at least 1 GPU");
  EXPECT_EQ(BuildGpuSystem(h100, 16, 0.5).status().message(),
            "h100:16: oversub must be >= 1 (got 0.500000)");
  EXPECT_EQ(BuildGpuSystem(ChipPreset("gb200").value(), 144, 1).status().message(),
            "gb200:144: podsim models one gb200 NVL72 domain (72 GPUs); several racks are not "
            "modelled yet");
  EXPECT_EQ(BuildGpuSystem(h100, 131072, 1).status().message(),
            "h100:131072: more than 65536 GPUs needs a fat tree deeper than 3 levels");
}

}  // namespace
}  // namespace podsim::topology
