#include "topology/fabric.h"

#include <gtest/gtest.h>

#include <array>
#include <deque>

#include "sim/engine.h"
#include "sim/flow_model.h"
#include "topology/chip_spec.h"
#include "topology/generic_builder.h"
#include "topology/torus_builder.h"

namespace podsim::topology {
namespace {

Fabric Tpu(std::string_view chip, std::vector<int> shape, int slices = 1) {
  sim::StatusOr<Fabric> fabric =
      BuildTpuSystem(ChipPreset(chip).value(), shape, slices, std::nullopt);
  PODSIM_CHECK(fabric.ok()) << fabric.status();
  return std::move(fabric).value();
}

// Fewest hops from src to every chip over links of `kind` only (a reference BFS, independent of
// Fabric::Route).
std::vector<int> HopsFrom(const Fabric& f, VertexId src, LinkKind kind) {
  std::vector<int> hops(f.vertex_count(), -1);
  std::deque<VertexId> queue = {src};
  hops[src] = 0;
  while (!queue.empty()) {
    VertexId v = queue.front();
    queue.pop_front();
    for (LinkIndex l : f.OutLinks(v)) {
      if (f.link(l).kind != kind || hops[f.link(l).dst] >= 0) continue;
      hops[f.link(l).dst] = hops[v] + 1;
      queue.push_back(f.link(l).dst);
    }
  }
  return hops;
}

// Runs one flow of `bytes` over `route` on an idle fabric and returns when it finished.
sim::Time IdleTransferTime(const Fabric& f, const std::vector<LinkIndex>& route, double bytes) {
  sim::Engine engine;
  sim::FlowModel model(&engine);
  InstallLinks(f, &model);
  std::vector<sim::ResourceId> resources;
  for (LinkIndex l : route) resources.push_back(sim::ResourceId{l});
  sim::Time done;
  PODSIM_CHECK(model
                   .StartFlow(sim::FlowSpec{bytes, resources, f.RouteLatency(route)},
                              [&] { done = engine.now(); })
                   .ok());
  engine.Run();
  return done;
}

TEST(TorusTest, V4pCubeCountsDegreesAndDiameter) {
  Fabric f = Tpu("tpu-v4p", {4, 4, 4});
  EXPECT_EQ(f.chip_count(), 64u);
  EXPECT_EQ(f.CountVertices(VertexKind::kHost), 16u);  // Hosts of 2x2x1.
  int ici = 0;
  for (const Link& l : f.links()) ici += l.kind == LinkKind::kIci;
  EXPECT_EQ(ici, 64 * 6);
  EXPECT_EQ(f.link_count(), 64u * 6 + 64 * 2);  // ICI + a PCIe pair per chip.
  for (VertexId c = 0; c < f.chip_count(); ++c) {
    int degree = 0;
    for (LinkIndex l : f.OutLinks(c)) degree += f.link(l).kind == LinkKind::kIci;
    EXPECT_EQ(degree, 6);
  }
  std::vector<int> hops = HopsFrom(f, 0, LinkKind::kIci);
  int diameter = 0;
  for (VertexId c = 0; c < f.chip_count(); ++c) diameter = std::max(diameter, hops[c]);
  EXPECT_EQ(diameter, 6);
}

TEST(TorusTest, WrapRulesPerGeneration) {
  EXPECT_EQ(Tpu("tpu-v5e", {8, 16}).torus()->wraps, (std::vector<bool>{false, true}));
  EXPECT_EQ(Tpu("tpu-v5p", {4, 4, 8}).torus()->wraps, (std::vector<bool>{true, true, true}));
  EXPECT_EQ(Tpu("tpu-v5p", {2, 2, 4}).torus()->wraps, (std::vector<bool>{false, false, false}));
  EXPECT_EQ(Tpu("tpu-v6e", {16, 16}).torus()->wraps, (std::vector<bool>{true, true}));
  EXPECT_EQ(Tpu("tpu-v5e", {4, 4}).torus()->wraps, (std::vector<bool>{false, false}));
  EXPECT_EQ(Tpu("tpu-v4p", {4, 4, 12}).torus()->wraps, (std::vector<bool>{true, true, true}));
  // An explicit override wins over the rule.
  Fabric f = BuildTpuSystem(ChipPreset("tpu-v5p").value(), {4, 4, 8}, 1,
                            std::vector<bool>{true, false, true})
                 .value();
  EXPECT_EQ(f.torus()->wraps, (std::vector<bool>{true, false, true}));
  EXPECT_FALSE(f.NeighborLink(f.ChipAt({0, 3, 0}), 1, +1).has_value());
  EXPECT_TRUE(f.NeighborLink(f.ChipAt({3, 0, 0}), 0, +1).has_value());
}

TEST(TorusTest, ChipCoordinatesAndNeighbours) {
  Fabric f = Tpu("tpu-v5p", {4, 4, 8});
  EXPECT_EQ(f.AxisNames(), (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(f.ChipAt({1, 2, 3}), 1u + 4 * (2 + 4 * 3));
  for (uint32_t c = 0; c < f.chip_count(); ++c) EXPECT_EQ(f.ChipAt(f.ChipCoord(c)), c);
  const Link& wrap = f.link(f.NeighborLink(f.ChipAt({3, 0, 0}), 0, +1).value());
  EXPECT_EQ(wrap.dst, f.ChipAt({0, 0, 0}));
  const Link& down = f.link(f.NeighborLink(f.ChipAt({0, 0, 0}), 2, -1).value());
  EXPECT_EQ(down.dst, f.ChipAt({0, 0, 7}));
  Fabric mesh = Tpu("tpu-v5p", {2, 2, 4});
  EXPECT_FALSE(mesh.NeighborLink(0, 0, -1).has_value());
  EXPECT_TRUE(mesh.NeighborLink(0, 0, +1).has_value());
}

TEST(TorusTest, DimensionOrderRoutesAreShortestAndSymmetric) {
  for (std::vector<int> shape : {std::vector<int>{4, 4, 4}, {2, 2, 4}, {4, 4, 8}}) {
    Fabric f = Tpu("tpu-v5p", shape);
    for (VertexId a = 0; a < f.chip_count(); ++a) {
      std::vector<int> hops = HopsFrom(f, a, LinkKind::kIci);
      for (VertexId b = 0; b < f.chip_count(); ++b) {
        std::vector<LinkIndex> route = f.Route(a, b);
        ASSERT_EQ(static_cast<int>(route.size()), hops[b]) << a << " -> " << b;
        EXPECT_EQ(route.size(), f.Route(b, a).size());
        VertexId at = a;
        for (LinkIndex l : route) {
          ASSERT_EQ(f.link(l).src, at);
          at = f.link(l).dst;
        }
        EXPECT_EQ(at, b);
      }
    }
  }
}

TEST(TorusTest, DimensionOrderGoesXThenYThenZAndPositiveOnTies) {
  Fabric f = Tpu("tpu-v5p", {4, 4, 4});
  std::vector<LinkIndex> route = f.Route(f.ChipAt({0, 0, 0}), f.ChipAt({2, 1, 3}));
  ASSERT_EQ(route.size(), 4u);  // x: 2 (tie, positive), y: 1, z: 1 (backwards over the wrap).
  EXPECT_EQ(f.link(route[0]).dst, f.ChipAt({1, 0, 0}));
  EXPECT_EQ(f.link(route[1]).dst, f.ChipAt({2, 0, 0}));
  EXPECT_EQ(f.link(route[2]).dst, f.ChipAt({2, 1, 0}));
  EXPECT_EQ(f.link(route[3]).dst, f.ChipAt({2, 1, 3}));
  EXPECT_EQ(f.RouteLatency(route), sim::Time::Microseconds(4));
}

// A transfer in a slice is split over one dimension-order route per axis its chips differ on
// (each starting on its axis), times both ways round on a tied axis: every route shortest, the
// shares even, and the routes of one axis order link-disjoint.
TEST(TorusTest, ParallelRoutesStripeOverTheDisjointShortestRoutes) {
  for (std::vector<int> shape : {std::vector<int>{4, 4, 4}, {2, 2, 4}, {4, 4, 8}}) {
    Fabric f = Tpu("tpu-v5p", shape);
    for (VertexId a = 0; a < f.chip_count(); ++a) {
      std::vector<int> hops = HopsFrom(f, a, LinkKind::kIci);
      const std::array<int, 3> from = {f.ChipCoord(a)[0], f.ChipCoord(a)[1], f.ChipCoord(a)[2]};
      for (VertexId b = 0; b < f.chip_count(); ++b) {
        if (a == b) continue;
        int axes = 0;
        int ties = 0;
        for (int axis = 0; axis < 3; ++axis) {
          const int forward = (f.ChipCoord(b)[axis] - from[axis] + shape[axis]) % shape[axis];
          axes += forward != 0;
          ties += f.torus()->wraps[axis] && forward != 0 && 2 * forward == shape[axis];
        }
        const std::vector<WeightedRoute> routes = f.ParallelRoutes(a, b);
        ASSERT_EQ(routes.size(), static_cast<size_t>(axes << ties)) << a << " -> " << b;
        // Per way round on the tied axes (routes r with one r % 2^ties), each link's uses.
        std::vector<std::vector<int>> uses(size_t{1} << ties, std::vector<int>(f.link_count()));
        for (size_t r = 0; r < routes.size(); ++r) {
          EXPECT_DOUBLE_EQ(routes[r].fraction, 1.0 / routes.size());
          ASSERT_EQ(static_cast<int>(routes[r].route.size()), hops[b]) << a << " -> " << b;
          VertexId at = a;
          for (LinkIndex l : routes[r].route) {
            ASSERT_EQ(f.link(l).src, at);
            at = f.link(l).dst;
            EXPECT_EQ(++uses[r % uses.size()][l], 1) << a << " -> " << b << " link " << l;
          }
          EXPECT_EQ(at, b);
        }
      }
    }
  }
}

TEST(TorusTest, IdlePointToPointTimeIsLatencyPlusBytesOverBandwidth) {
  Fabric f = Tpu("tpu-v5p", {4, 4, 4});
  std::vector<LinkIndex> route = f.Route(f.ChipAt({0, 0, 0}), f.ChipAt({2, 1, 0}));
  ASSERT_EQ(route.size(), 3u);
  const double bytes = 9e8;  // 10 ms at 9e10 B/s.
  EXPECT_EQ(IdleTransferTime(f, route, bytes),
            sim::Time::Microseconds(3) + sim::Time::Milliseconds(10));
}

TEST(TorusTest, SlicesTalkOverDcnThroughTheirHosts) {
  Fabric f = Tpu("tpu-v5e", {16, 16}, 4);
  EXPECT_EQ(f.chip_count(), 1024u);
  EXPECT_EQ(f.CountVertices(VertexKind::kHost), 128u);  // 4x2 hosts.
  EXPECT_EQ(f.CountVertices(VertexKind::kDcnSwitch), 1u);
  EXPECT_EQ(f.SliceOf(256), 1);
  EXPECT_EQ(f.ChipCoord(256 + 17), (std::vector<int>{1, 1}));
  std::vector<LinkIndex> route = f.Route(5, 256 + 5);
  ASSERT_EQ(route.size(), 4u);
  EXPECT_EQ(f.link(route[0]).kind, LinkKind::kPcie);
  EXPECT_EQ(f.link(route[1]).kind, LinkKind::kDcn);
  // A host of 8 v5e chips has 8 x 3.125e9 of DCN (hardware.md 1.1).
  EXPECT_DOUBLE_EQ(f.link(route[1]).bandwidth_bytes_per_s, 2.5e10);
  EXPECT_EQ(f.link(route[3]).dst, 256u + 5);
  // Within a slice the route stays on ICI.
  for (LinkIndex l : f.Route(0, 255)) EXPECT_EQ(f.link(l).kind, LinkKind::kIci);
}

TEST(TorusTest, InstallLinksMakesResourceIEqualLinkI) {
  Fabric f = Tpu("tpu-v5e", {4, 4});
  sim::Engine engine;
  sim::FlowModel model(&engine);
  InstallLinks(f, &model);
  ASSERT_EQ(model.resource_count(), f.link_count());
  for (LinkIndex i = 0; i < f.link_count(); ++i) {
    EXPECT_EQ(model.capacity(sim::ResourceId{i}), f.link(i).bandwidth_bytes_per_s);
  }
}

TEST(TorusTest, BadShapesAreRejected) {
  const ChipSpec v5p = ChipPreset("tpu-v5p").value();
  EXPECT_EQ(BuildTpuSystem(v5p, {16, 20}, 1, std::nullopt).status().message(),
            "tpu-v5p:16x20: a tpu-v5p slice needs 3 axes like 4x4x8 (got 2)");
  EXPECT_EQ(BuildTpuSystem(v5p, {16, 20, 32}, 1, std::nullopt).status().message(),
            "tpu-v5p:16x20x32: larger than a tpu-v5p pod (16x20x28)");
  EXPECT_EQ(BuildTpuSystem(v5p, {3, 4, 4}, 1, std::nullopt).status().message(),
            "tpu-v5p:3x4x4: shape 3x4x4 is not tiled by hosts of 2x2x1 chips (axis 0)");
  EXPECT_EQ(
      BuildTpuSystem(ChipPreset("tpu-v5e").value(), {32, 8}, 1, std::nullopt).status().message(),
      "tpu-v5e:32x8: larger than a tpu-v5e pod (16x16)");
}

TEST(GenericTest, RingTorusAndSwitch) {
  GenericLinkOptions link{1e11, sim::Time::Nanoseconds(100)};
  Fabric ring = BuildRing(8, link).value();
  EXPECT_EQ(ring.link_count(), 16u);
  EXPECT_EQ(ring.Route(0, 4).size(), 4u);
  EXPECT_EQ(ring.Route(0, 5).size(), 3u);
  EXPECT_EQ(ring.link(ring.Route(0, 5)[0]).dst, 7u);  // Backwards is shorter.
  Fabric two = BuildRing(2, link).value();
  EXPECT_EQ(two.link_count(), 2u);  // No duplicate wrap link between two chips.
  Fabric torus = BuildGenericTorus({4, 3}, {true, true}, link).value();
  EXPECT_EQ(torus.link_count(), 12u * 4);
  Fabric star = BuildSwitch(5, link).value();
  EXPECT_EQ(star.vertex_count(), 6u);
  EXPECT_EQ(star.Route(1, 3).size(), 2u);
  EXPECT_EQ(star.RouteLatency(star.Route(1, 3)), sim::Time::Nanoseconds(200));
  EXPECT_EQ(BuildSwitch(0, link).status().message(), "switch needs 1 to 1048576 chips (got 0)");
  EXPECT_EQ(BuildRing(4, {0, sim::Time::Zero()}).status().message(), "bw must be > 0 bytes/s");
}

TEST(FabricTest, BfsRouteForVerticesOutsideTheLayout) {
  Fabric f = Tpu("tpu-v5p", {2, 2, 1});
  const VertexId host = f.torus()->hosts[0];
  std::vector<LinkIndex> route = f.Route(host, 3);
  ASSERT_EQ(route.size(), 1u);
  EXPECT_EQ(f.link(route[0]).kind, LinkKind::kPcie);
}

}  // namespace
}  // namespace podsim::topology
