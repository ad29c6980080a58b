// The translations of fabric_symmetry.h map routes onto routes: for chips a and b, the route
// between the translates of a and b is the translate of the route between a and b, link by link.

#include "collectives/fabric_symmetry.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topology/system.h"

namespace podsim::collectives {
namespace {

topology::System System(const std::string& text) {
  sim::StatusOr<topology::System> system = topology::ParseSystem(text);
  EXPECT_TRUE(system.ok()) << system.status();
  return std::move(*system);
}

// Checks every route between `chips` (and their translates by `shift`) link by link.
void ExpectRoutesMap(const topology::Fabric& fabric, const FabricSymmetry& symmetry,
                     const std::vector<topology::VertexId>& chips,
                     const FabricSymmetry::Shift& shift) {
  for (topology::VertexId a : chips) {
    for (topology::VertexId b : chips) {
      if (a == b) continue;
      const std::vector<topology::LinkIndex> route = fabric.Route(a, b);
      const std::vector<topology::LinkIndex> moved =
          fabric.Route(symmetry.ApplyToVertex(a, shift), symmetry.ApplyToVertex(b, shift));
      ASSERT_EQ(route.size(), moved.size()) << a << " -> " << b;
      for (size_t i = 0; i < route.size(); ++i) {
        EXPECT_EQ(symmetry.ApplyToLink(route[i], shift), moved[i])
            << a << " -> " << b << " hop " << i;
      }
    }
  }
}

TEST(FabricSymmetryTest, WrappedTorusShiftsAnyWay) {
  topology::System system = System("tpu-v5p:4x4x8");
  FabricSymmetry symmetry(&system.fabric);
  const std::vector<topology::VertexId> chips = {17, 18, 40, 77, 101, 127};
  ASSERT_TRUE(symmetry.ToCanonical(chips));
  ExpectRoutesMap(system.fabric, symmetry, chips, *symmetry.ToCanonical(chips));
  ExpectRoutesMap(system.fabric, symmetry, chips, FabricSymmetry::Shift{{1, 3, 5}});
}

// 3 levels (2 pods of 1024 GPUs): chips of pod 1 move to pod 0, routes to other pods through
// the cores included.
TEST(FabricSymmetryTest, GpuFatTreeShiftsByPods) {
  topology::System system = System("h100:2048");
  FabricSymmetry symmetry(&system.fabric);
  const std::vector<topology::VertexId> pod1 = {1500, 1031, 1100, 1024, 2047};
  std::optional<FabricSymmetry::Shift> shift = symmetry.ToCanonical(pod1);
  ASSERT_TRUE(shift);
  EXPECT_EQ(shift->delta, std::vector<int>{-128});
  ExpectRoutesMap(system.fabric, symmetry, pod1, *shift);
  // Pod 0 to pod 1 and back, through the cores.
  ExpectRoutesMap(system.fabric, symmetry, {0, 9, 1024 + 17}, FabricSymmetry::Shift{{0}});
}

// 2 levels: whole scalable units (32 nodes) when the 16 spines divide them.
TEST(FabricSymmetryTest, GpuFatTreeShiftsByScalableUnits) {
  topology::System system = System("h100:1024");
  FabricSymmetry symmetry(&system.fabric);
  const std::vector<topology::VertexId> chips = {256, 263, 300, 511, 700};
  std::optional<FabricSymmetry::Shift> shift = symmetry.ToCanonical(chips);
  ASSERT_TRUE(shift);
  EXPECT_EQ(shift->delta, std::vector<int>{-32});
  ExpectRoutesMap(system.fabric, symmetry, chips, *shift);
}

TEST(FabricSymmetryTest, FabricsWithoutSymmetry) {
  for (const char* text : {"h100:8", "tpu-v5e:16x16,slices=2", "tpu-v5e:4x4", "switch:8"}) {
    topology::System system = System(text);
    FabricSymmetry symmetry(&system.fabric);
    EXPECT_FALSE(symmetry.ToCanonical({1, 2})) << text;
  }
}

}  // namespace
}  // namespace podsim::collectives
