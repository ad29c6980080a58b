#include "topology/mesh_mapping.h"

#include <gtest/gtest.h>

#include <set>

namespace podsim::topology {
namespace {

MeshMapping Map(const System& system, std::string_view mesh,
                const std::map<std::string, std::vector<std::string>>& pieces = {}) {
  sim::StatusOr<MeshMapping> mapping = MapMesh(system, ParseMeshAxes(mesh).value(), pieces);
  PODSIM_CHECK(mapping.ok()) << mapping.status();
  return std::move(mapping).value();
}

// Every chip appears in exactly one group of each axis, and groups have the axis size.
void ExpectPartition(const System& system, const MeshAxisPlacement& axis) {
  std::set<uint32_t> seen;
  for (const std::vector<uint32_t>& group : axis.groups) {
    EXPECT_EQ(static_cast<int>(group.size()), axis.size) << axis.name;
    seen.insert(group.begin(), group.end());
  }
  EXPECT_EQ(seen.size(), system.fabric.chip_count()) << axis.name;
  EXPECT_EQ(static_cast<int>(axis.groups.size()) * axis.size,
            static_cast<int>(system.fabric.chip_count()));
}

TEST(MeshMappingTest, TpuAxesTakeContiguousFactorsFastestFirst) {
  System v5p = ParseSystem("tpu-v5p:4x4x8").value();
  MeshMapping m = Map(v5p, "dp=4,fsdp=4,tp=8");
  ASSERT_EQ(m.axes.size(), 3u);
  const MeshAxisPlacement& dp = m.axes[0];
  const MeshAxisPlacement& fsdp = m.axes[1];
  const MeshAxisPlacement& tp = m.axes[2];
  for (const MeshAxisPlacement& a : m.axes) ExpectPartition(v5p, a);
  ASSERT_EQ(tp.spans.size(), 2u);
  EXPECT_EQ(tp.spans[0].physical_axis, "x");
  EXPECT_TRUE(tp.spans[0].whole_axis);
  EXPECT_TRUE(tp.spans[0].wraps);
  EXPECT_EQ(tp.spans[1].physical_axis, "y");
  EXPECT_EQ(tp.spans[1].extent, 2);
  EXPECT_FALSE(tp.spans[1].whole_axis);
  ASSERT_EQ(fsdp.spans.size(), 2u);
  EXPECT_EQ(fsdp.spans[0].physical_axis, "y");
  EXPECT_EQ(fsdp.spans[0].stride, 2);
  EXPECT_EQ(fsdp.spans[1].physical_axis, "z");
  ASSERT_EQ(dp.spans.size(), 1u);
  EXPECT_EQ(dp.spans[0].physical_axis, "z");
  EXPECT_EQ(dp.spans[0].extent, 4);
  EXPECT_EQ(dp.spans[0].stride, 2);
  EXPECT_FALSE(tp.leaves_node);
  // The tp ring (x whole, then 2 of y, walked as a snake) is a closed ring of neighbours.
  for (const std::vector<uint32_t>& group : tp.groups) {
    for (size_t i = 0; i < group.size(); ++i) {
      EXPECT_EQ(v5p.fabric.Route(group[i], group[(i + 1) % group.size()]).size(), 1u);
    }
  }
  EXPECT_EQ(tp.groups[0], (std::vector<uint32_t>{0, 1, 2, 3, 7, 6, 5, 4}));
}

TEST(MeshMappingTest, ReflectedOrderKeepsNeighboursAcrossThreeAxes) {
  System t = ParseSystem("torus:2x3x4").value();
  MeshMapping m = Map(t, "tp=24");
  for (const std::vector<uint32_t>& group : m.axes[0].groups) {
    for (size_t i = 0; i + 1 < group.size(); ++i) {
      EXPECT_EQ(t.fabric.Route(group[i], group[i + 1]).size(), 1u) << i;
    }
  }
}

TEST(MeshMappingTest, GpuAxesNodeFirstThenScaleOut) {
  System h100 = ParseSystem("h100:64").value();
  MeshMapping m = Map(h100, "dp=8,tp=8");
  EXPECT_EQ(m.physical_axes.size(), 2u);
  const MeshAxisPlacement& dp = m.axes[0];
  const MeshAxisPlacement& tp = m.axes[1];
  EXPECT_FALSE(tp.leaves_node);
  EXPECT_TRUE(dp.leaves_node);
  EXPECT_EQ(tp.groups[1], (std::vector<uint32_t>{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(dp.groups[0], (std::vector<uint32_t>{0, 8, 16, 24, 32, 40, 48, 56}));
  // The order of the string does not matter: pp goes outermost, tp innermost.
  MeshMapping m2 = Map(h100, "tp=4,pp=4,dp=4");
  EXPECT_EQ(m2.axes[0].spans[0].physical_axis, "gpu");
  EXPECT_EQ(m2.axes[1].spans[0].physical_axis, "node");
  EXPECT_EQ(m2.axes[1].spans[0].stride, 2);
  EXPECT_EQ(m2.axes[2].spans.size(), 2u);  // dp: 2 of gpu, then 2 of node.
  EXPECT_TRUE(m2.axes[2].leaves_node);
}

TEST(MeshMappingTest, SlicesAreTheSlowestAxis) {
  System s = ParseSystem("tpu-v5e:16x16,slices=4").value();
  MeshMapping m = Map(s, "dp=4,fsdp=16,tp=16");
  EXPECT_EQ(m.axes[0].spans[0].physical_axis, "slice");
  EXPECT_TRUE(m.axes[0].leaves_node);
  EXPECT_FALSE(m.axes[1].leaves_node);
  EXPECT_EQ(m.axes[0].groups[0], (std::vector<uint32_t>{0, 256, 512, 768}));
}

TEST(MeshMappingTest, ExplicitPieces) {
  System v5p = ParseSystem("tpu-v5p:4x4x8").value();
  MeshMapping m = Map(v5p, "dp=4,fsdp=4,tp=8", {{"tp", {"z"}}});
  EXPECT_EQ(m.axes[2].spans[0].physical_axis, "z");
  EXPECT_TRUE(m.axes[2].spans[0].wraps);
  EXPECT_EQ(m.axes[1].spans[0].physical_axis, "x");
  EXPECT_EQ(m.axes[0].spans[0].physical_axis, "y");
  MeshMapping split = Map(v5p, "dp=4,fsdp=4,tp=8", {{"tp", {"x:2", "y:2", "z:2"}}});
  EXPECT_EQ(split.axes[2].spans.size(), 3u);
  for (const MeshAxisPlacement& a : split.axes) ExpectPartition(v5p, a);
}

// An order puts its axes first: dp before fsdp takes what is left of y after tp.
TEST(MeshMappingTest, OrderPlacesItsAxesFirst) {
  System v5p = ParseSystem("tpu-v5p:4x4x8").value();
  sim::StatusOr<MeshMapping> m =
      MapMesh(v5p, ParseMeshAxes("dp=4,fsdp=4,tp=8").value(), {}, {"tp", "dp"});
  ASSERT_TRUE(m.ok()) << m.status();
  for (const MeshAxisPlacement& a : m->axes) ExpectPartition(v5p, a);
  EXPECT_EQ(m->axes[2].spans[0].physical_axis, "x");
  EXPECT_EQ(m->axes[0].spans[0].physical_axis, "y");
  EXPECT_EQ(m->axes[0].spans[0].stride, 2);
  EXPECT_EQ(m->axes[1].spans[0].physical_axis, "z");
  EXPECT_EQ(MapMesh(v5p, ParseMeshAxes("dp=16,tp=8").value(), {}, {"tq"}).status().message(),
            "placement order names 'tq', which is not an axis of mesh dp=16,tp=8");
  EXPECT_EQ(MapMesh(v5p, ParseMeshAxes("dp=16,tp=8").value(), {}, {"tp", "tp"}).status().message(),
            "placement order names 'tp' twice");
}

TEST(MeshMappingTest, Errors) {
  System v5p = ParseSystem("tpu-v5p:4x4x8").value();
  auto error = [&](std::string_view mesh,
                   const std::map<std::string, std::vector<std::string>>& pieces = {}) {
    return MapMesh(v5p, ParseMeshAxes(mesh).value(), pieces).status().message();
  };
  EXPECT_EQ(error("dp=2,tp=8"), "mesh dp=2,tp=8 has 16 devices but tpu-v5p:4x4x8 has 128 chips");
  EXPECT_EQ(error("dp=64,tp=8"),
            "mesh dp=64,tp=8 has more than 512 devices but tpu-v5p:4x4x8 has 128 chips");
  EXPECT_EQ(error("dp=16,tp=8", {{"tp", {"w"}}}),
            "mesh axis 'tp': unknown physical axis 'w' (did you mean 'x'?); tpu-v5p:4x4x8 has x, "
            "y, z");
  EXPECT_EQ(error("dp=16,tp=8", {{"tp", {"x:3"}}}),
            "mesh axis 'tp': piece 'x:3' must be a factor of the 4 chips left along x");
  EXPECT_EQ(error("dp=16,tp=8", {{"tp", {"x"}}}), "mesh axis 'tp': its pieces hold 4 chips, not 8");
  EXPECT_EQ(error("dp=16,tp=8", {{"tq", {"x"}}}),
            "explicit placement for 'tq', which is not an axis of mesh dp=16,tp=8");
  System odd = ParseSystem("torus:6x4").value();
  EXPECT_EQ(MapMesh(odd, ParseMeshAxes("dp=6,tp=4").value()).status().message(),
            "mesh axis 'tp' (size 4) cannot be placed contiguously on torus:6x4: 6 chips are left "
            "along x and 4 is neither a divisor nor a multiple of that; place it explicitly");
  EXPECT_TRUE(MapMesh(odd, ParseMeshAxes("dp=6,tp=4").value(), {{"tp", {"y"}}}).ok());
  EXPECT_EQ(ParseMeshAxes("dp=2,tp").status().message(),
            "mesh 'dp=2,tp': item 'tp' should be name=size with size >= 1, like dp=2,fsdp=4,tp=8");
  EXPECT_EQ(ParseMeshAxes("dp=2,dp=4").status().message(),
            "mesh 'dp=2,dp=4': axis 'dp' given twice");
}

}  // namespace
}  // namespace podsim::topology
