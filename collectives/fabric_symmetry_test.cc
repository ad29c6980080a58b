// The translations of fabric_symmetry.h map routes onto routes: for chips a and b, the route
// between the translates of a and b is the translate of the route between a and b, link by link.

#include "collectives/fabric_symmetry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "collectives/translation_group.h"
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
      // The parallel routes a transfer is striped over map route by route, with their shares.
      const std::vector<topology::WeightedRoute> parallel = fabric.ParallelRoutes(a, b);
      const std::vector<topology::WeightedRoute> moved_parallel =
          fabric.ParallelRoutes(symmetry.ApplyToVertex(a, shift), symmetry.ApplyToVertex(b, shift));
      ASSERT_EQ(parallel.size(), moved_parallel.size()) << a << " -> " << b;
      for (size_t r = 0; r < parallel.size(); ++r) {
        EXPECT_EQ(parallel[r].fraction, moved_parallel[r].fraction);
        ASSERT_EQ(parallel[r].route.size(), moved_parallel[r].route.size());
        for (size_t i = 0; i < parallel[r].route.size(); ++i) {
          EXPECT_EQ(symmetry.ApplyToLink(parallel[r].route[i], shift), moved_parallel[r].route[i])
              << a << " -> " << b << " route " << r << " hop " << i;
        }
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
  // Axes: the slot, then the node's digits (node in its SU, SU in its pod, pod).
  EXPECT_EQ(symmetry.axis_lengths(), (std::vector<int>{8, 32, 4, 2}));
  EXPECT_EQ(shift->delta, (std::vector<int>{0, 0, 0, -1}));
  ExpectRoutesMap(system.fabric, symmetry, pod1, *shift);
  // Pod 0 to pod 1 and back, through the cores, under a shift of the SUs and the pods.
  ExpectRoutesMap(system.fabric, symmetry, {0, 9, 300, 1024 + 17},
                  FabricSymmetry::Shift{{0, 5, 1, 1}});
  // GPU 1500 is slot 4 of node 187: node 27 of SU 1 of pod 1.
  EXPECT_EQ(symmetry.Coord(1500), (std::vector<int>{4, 27, 1, 1}));
  EXPECT_EQ(symmetry.ChipAt({4, 27, 1, 1}), 1500u);
}

// 2 levels of whole scalable units (32 nodes, which the 16 spines divide): the node's digits as
// with pods, in one pod; the canonical shift moves the first chip's SU to SU 0.
TEST(FabricSymmetryTest, GpuFatTreeShiftsByScalableUnits) {
  topology::System system = System("h100:1024");
  FabricSymmetry symmetry(&system.fabric);
  EXPECT_EQ(symmetry.axis_lengths(), (std::vector<int>{8, 32, 4, 1}));
  const std::vector<topology::VertexId> chips = {256, 263, 300, 511, 700};
  std::optional<FabricSymmetry::Shift> shift = symmetry.ToCanonical(chips);
  ASSERT_TRUE(shift);
  EXPECT_EQ(shift->delta, (std::vector<int>{0, 0, -1, 0}));
  ExpectRoutesMap(system.fabric, symmetry, chips, *shift);
  // GPU 700 is slot 4 of node 87: node 23 of SU 2.
  EXPECT_EQ(symmetry.Coord(700), (std::vector<int>{4, 23, 2, 0}));
  EXPECT_EQ(symmetry.ChipAt({4, 23, 2, 0}), 700u);
}

// Slices over DCN: shifts by whole host tiles in every slice at once and of the slices map every
// link and every route, within a slice and across the DCN (chip, host, switch, host, chip).
TEST(FabricSymmetryTest, SlicesOverDcnShiftByHostTilesAndSlices) {
  for (const char* text : {"tpu-v5p:8x4x1,wrap=all,slices=2", "tpu-v5e:16x4,wrap=all,slices=3"}) {
    SCOPED_TRACE(text);
    topology::System system = System(text);
    const topology::Fabric& fabric = system.fabric;
    FabricSymmetry symmetry(&fabric);
    ASSERT_TRUE(symmetry.has_axes());
    const std::vector<int>& lengths = symmetry.axis_lengths();
    ASSERT_EQ(lengths.size(), fabric.shape().size() + 1);
    EXPECT_EQ(lengths.back(), fabric.torus()->slices);
    EXPECT_FALSE(symmetry.translates_torus());  // Not every shift: whole host tiles only.
    EXPECT_FALSE(symmetry.AllowsStep(0, 1));    // A host spans 2 chips along x.
    std::vector<FabricSymmetry::Shift> shifts;
    for (size_t a = 0; a < lengths.size(); ++a) {
      int step = 1;
      while (step < lengths[a] && !symmetry.AllowsStep(a, step)) ++step;
      if (step == lengths[a]) continue;
      shifts.push_back(FabricSymmetry::Shift{std::vector<int>(lengths.size(), 0)});
      shifts.back().delta[a] = step;
    }
    EXPECT_GE(shifts.size(), 2u);
    std::vector<topology::VertexId> chips;
    for (topology::VertexId chip = 0; chip < fabric.chip_count(); chip += 3) chips.push_back(chip);
    const std::optional<FabricSymmetry::Shift> canonical = symmetry.ToCanonical({chips.back()});
    ASSERT_TRUE(canonical);
    shifts.push_back(*canonical);
    for (const FabricSymmetry::Shift& shift : shifts) {
      for (topology::LinkIndex link = 0; link < fabric.link_count(); ++link) {
        const topology::LinkIndex image = symmetry.ApplyToLink(link, shift);
        ASSERT_NE(image, topology::kNoLink) << "link " << link;
        EXPECT_EQ(fabric.link(image).kind, fabric.link(link).kind);
      }
      ExpectRoutesMap(fabric, symmetry, chips, shift);
    }
  }
}

TEST(FabricSymmetryTest, FabricsWithoutTranslations) {
  for (const char* text :
       {"h100:8", "h100:192", "tpu-v5e:8x8,slices=2", "tpu-v5e:4x4", "switch:8"}) {
    topology::System system = System(text);
    FabricSymmetry symmetry(&system.fabric);
    EXPECT_FALSE(symmetry.ToCanonical({1, 2})) << text;
  }
  for (const char* text : {"tpu-v5e:8x8,slices=2", "tpu-v5e:4x4", "switch:8"}) {
    topology::System system = System(text);
    EXPECT_FALSE(FabricSymmetry(&system.fabric).has_axes()) << text;
  }
}

// Every route between every pair of GPUs, and every link, maps under each generator of the
// GPU symmetry (rotation of the slots, or of each slot digit of `radix`; node translation where
// it wraps): brute force over the fabric.
void ExpectGpuGenerators(const std::string& text, std::vector<bool> node_axes,
                         std::vector<int> radix = {}, std::vector<int> node_radix = {}) {
  SCOPED_TRACE(text);
  topology::System system = System(text);
  const topology::Fabric& fabric = system.fabric;
  const size_t digits = radix.empty() ? 1 : radix.size();
  FabricSymmetry symmetry(&fabric, std::move(radix), std::move(node_radix));
  ASSERT_TRUE(symmetry.has_axes());
  const std::vector<int>& lengths = symmetry.axis_lengths();
  ASSERT_EQ(lengths.size(), digits + node_axes.size());
  std::vector<FabricSymmetry::Shift> generators;
  for (size_t d = 0; d < digits; ++d) {
    EXPECT_TRUE(symmetry.AllowsStep(d, 1));
    generators.push_back(FabricSymmetry::Shift{std::vector<int>(lengths.size(), 0)});
    generators.back().delta[d] = 1;
  }
  // Each node axis: its smallest step, which is a translation iff node_axes says so.
  for (size_t n = 0; n < node_axes.size(); ++n) {
    const size_t axis = digits + n;
    int step = 1;
    while (step < lengths[axis] && !symmetry.AllowsStep(axis, step)) ++step;
    EXPECT_EQ(step < lengths[axis], node_axes[n]) << "node axis " << n;
    if (step < lengths[axis]) {
      generators.push_back(FabricSymmetry::Shift{std::vector<int>(lengths.size(), 0)});
      generators.back().delta[axis] = step;
    }
  }
  // Every GPU up to 1024; above, every GPU of node 0, of a node in the second SU and of the last
  // node, and a scattered sample of about 200 more (by a multiplicative hash): pairs in one node,
  // one SU, one pod and across pods, on every rail.
  std::vector<topology::VertexId> chips;
  const uint32_t n = fabric.chip_count();
  const uint32_t modulus = std::max(23u, n / 200);
  for (topology::VertexId chip = 0; chip < n; ++chip) {
    const uint32_t node = chip / 8;
    if (n <= 1024 || node == 0 || node == 37 || node == n / 8 - 1 ||
        (chip * 2654435761u) % modulus == 0) {
      chips.push_back(chip);
    }
  }
  std::vector<topology::WeightedRoute> routes, moved;
  for (const FabricSymmetry::Shift& shift : generators) {
    for (topology::LinkIndex link = 0; link < fabric.link_count(); ++link) {
      const topology::LinkIndex image = symmetry.ApplyToLink(link, shift);
      ASSERT_NE(image, topology::kNoLink) << "link " << link;
      EXPECT_EQ(fabric.link(image).bandwidth_bytes_per_s, fabric.link(link).bandwidth_bytes_per_s);
    }
    // Fabric::Route inside a node picks one NVSwitch by the slots' sum, which a slot rotation
    // moves: transfers stripe over all of them (ParallelRoutes), which do map.
    if (std::all_of(shift.delta.begin(), shift.delta.begin() + static_cast<std::ptrdiff_t>(digits),
                    [](int d) { return d == 0; })) {
      ExpectRoutesMap(fabric, symmetry, chips, shift);
    }
    for (topology::VertexId a : chips) {
      for (topology::VertexId b : chips) {
        if (a == b) continue;
        fabric.ParallelRoutes(a, b, &routes);
        fabric.ParallelRoutes(symmetry.ApplyToVertex(a, shift), symmetry.ApplyToVertex(b, shift),
                              &moved);
        ASSERT_EQ(routes.size(), moved.size());
        // The images of the striped routes are the striped routes of the images, as a set.
        for (const topology::WeightedRoute& route : routes) {
          std::vector<topology::LinkIndex> image;
          for (topology::LinkIndex link : route.route)
            image.push_back(symmetry.ApplyToLink(link, shift));
          const bool found = std::any_of(moved.begin(), moved.end(), [&](const auto& m) {
            return m.route == image && m.fraction == route.fraction;
          });
          EXPECT_TRUE(found) << a << " -> " << b;
        }
      }
    }
  }
}

TEST(FabricSymmetryTest, GpuSlotsRotateInEveryNode) {
  ExpectGpuGenerators("h100:8", {false});
  ExpectGpuGenerators("a100:8", {false});
  ExpectGpuGenerators("b200:4", {false});
  // 24 nodes: part of one scalable unit, more nodes than spines and not a multiple of them.
  ExpectGpuGenerators("h100:192", {false});
}

// Slot digits (tp=4 of 8 GPUs: slot = i + 4 q) rotate separately; with their coordinates.
TEST(FabricSymmetryTest, GpuSlotDigitsRotateSeparately) {
  ExpectGpuGenerators("h100:16", {true}, {4, 2});
  ExpectGpuGenerators("h100:16", {true}, {2, 2, 2});
  ExpectGpuGenerators("b200:4", {false}, {2, 2});
  topology::System system = System("h100:16");
  FabricSymmetry symmetry(&system.fabric, {4, 2});
  EXPECT_EQ(symmetry.axis_lengths(), (std::vector<int>{4, 2, 2}));
  EXPECT_EQ(symmetry.Coord(13), (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(symmetry.ChipAt({1, 1, 1}), 13u);
  // Slot 7 (i = 3, q = 1) of node 0: i + 1 wraps to 0 inside its half, so slot 4.
  EXPECT_EQ(symmetry.ApplyToVertex(7, FabricSymmetry::Shift{{1, 0, 0}}), 4u);
  EXPECT_EQ(symmetry.ApplyToVertex(7, FabricSymmetry::Shift{{0, 1, 1}}), 11u);
}

// The same on an A100 node's six NVSwitches and on oversubscribed leaves (every leaf's up-links
// divided alike).
TEST(FabricSymmetryTest, GpuSlotDigitsOfOtherNodesAndOversubscribedLeaves) {
  ExpectGpuGenerators("a100:16", {true}, {2, 4});
  ExpectGpuGenerators("h100:64,oversub=4", {true}, {2, 2, 2});
}

TEST(FabricSymmetryTest, GpuNodesOfOneScalableUnitTranslateByOne) {
  ExpectGpuGenerators("h100:16", {true});   // 2 nodes, fewer than the 16 spines.
  ExpectGpuGenerators("h100:80", {true});   // 10 nodes, fewer than the spines, not dividing them.
  ExpectGpuGenerators("h100:64", {true});   // 8 nodes.
  ExpectGpuGenerators("h100:256", {true});  // A whole scalable unit: 32 nodes, 2 per spine.
}

// 2 levels of whole scalable units: the node within its SU and the SU rotate separately (the
// pod axis is of length 1), on 2 and 3 SUs, oversubscribed or not.
TEST(FabricSymmetryTest, GpuScalableUnitsOfTwoLevelsRotateTheirNodeDigits) {
  ExpectGpuGenerators("h100:512", {true, true, false});
  ExpectGpuGenerators("a100:768,oversub=2", {true, true, false});
}

// The node in its SU as digits (node_radix): blocks of 8 nodes, 4 of them to an SU, each digit
// rotating alone; on three levels too (blocks of 16), where core group j follows spine j.
// Brute force over every pair of GPUs here; the digits' coordinates in the next test.
TEST(FabricSymmetryTest, GpuNodeDigitsWithinScalableUnitsRotateSeparately) {
  // 8 x 4: the upper digit's blocks of 32 straddle the 16 spines' residues.
  ExpectGpuGenerators("h100:512", {true, true, true, false}, {}, {8, 4});
  ExpectGpuGenerators("h100:2048", {true, true, true, true}, {}, {16, 2});
}

TEST(FabricSymmetryTest, GpuNodeDigitsWithinScalableUnitsAreCoordinates) {
  topology::System system = System("h100:512");
  FabricSymmetry symmetry(&system.fabric, {}, {16, 2});
  EXPECT_EQ(symmetry.axis_lengths(), (std::vector<int>{8, 16, 2, 2, 1}));
  // GPU 300 is slot 4 of node 37: node 5 of SU 1, digits 5 and 0.
  EXPECT_EQ(symmetry.Coord(300), (std::vector<int>{4, 5, 0, 1, 0}));
  EXPECT_EQ(symmetry.ChipAt({4, 5, 0, 1, 0}), 300u);
  // Node 15 of SU 0 (GPUs 120-127) moves to node 0 under the first digit, not to node 16.
  EXPECT_EQ(symmetry.ApplyToVertex(121, FabricSymmetry::Shift{{0, 1, 0, 0, 0}}), 1u);
}

// 2 levels with a partial last scalable unit: one node axis, shifts by whole units only where
// they stay inside the fabric.
TEST(FabricSymmetryTest, GpuNodesOfAPartialScalableUnitDoNotRotate) {
  topology::System system = System("h100:520");
  FabricSymmetry symmetry(&system.fabric);
  EXPECT_EQ(symmetry.axis_lengths(), (std::vector<int>{8, 65}));
}

// 3 levels of whole pods: the node's digits rotate separately. The node within its SU and the
// pod always (spine j serves destination nodes j mod 32, the nodes of an SU); the SU within its
// pod where the cores of a group (pods / 2 of them) and the 4 SUs of a pod divide one another.
// Brute force over every pair of GPUs: 2 and 4 pods, and 6 pods, whose 3 cores per group do not
// divide the SUs.
TEST(FabricSymmetryTest, GpuPodsRotateTheirNodeDigits) {
  ExpectGpuGenerators("h100:2048", {true, true, true});
  ExpectGpuGenerators("b200:4096", {true, true, true}, {2, 4});
  ExpectGpuGenerators("h100:6144", {true, false, true});
  ExpectGpuGenerators("h100:16384", {true, true, true});  // 8 cores per group: 4 divides them.
}

// A partial pod: one node axis, no shift wraps.
TEST(FabricSymmetryTest, GpuNodesOfAPartialPodDoNotRotate) {
  topology::System partial = System("h100:1032");
  FabricSymmetry symmetry(&partial.fabric);
  EXPECT_EQ(symmetry.axis_lengths(), (std::vector<int>{8, 129}));
  for (int step = 1; step < 129; ++step) EXPECT_FALSE(symmetry.AllowsStep(1, step)) << step;
}

// Whole pods whose shifts do not wrap (5 pods, 3 cores per group, which divide neither 4 nor the
// 20 SUs): no SU or pod rotation, but the shift to the canonical translate, and back, still maps
// every route, those through the cores included.
TEST(FabricSymmetryTest, GpuPodsThatDoNotWrapStillTranslateToCanonical) {
  topology::System system = System("h100:5120");
  FabricSymmetry symmetry(&system.fabric);
  EXPECT_EQ(symmetry.axis_lengths(), (std::vector<int>{8, 32, 4, 5}));
  EXPECT_TRUE(symmetry.AllowsStep(1, 1));
  EXPECT_FALSE(symmetry.AllowsStep(2, 1));
  EXPECT_FALSE(symmetry.AllowsStep(3, 1));
  const std::vector<topology::VertexId> chips = {1024, 1031, 1500, 2048, 2300, 3071, 3900};
  std::optional<FabricSymmetry::Shift> shift = symmetry.ToCanonical(chips);
  ASSERT_TRUE(shift);
  EXPECT_EQ(shift->delta, (std::vector<int>{0, 0, 0, -1}));
  ExpectRoutesMap(system.fabric, symmetry, chips, *shift);
  std::vector<topology::VertexId> moved;
  for (topology::VertexId chip : chips) moved.push_back(symmetry.ApplyToVertex(chip, *shift));
  ExpectRoutesMap(system.fabric, symmetry, moved, symmetry.Inverse(*shift));
}

}  // namespace
}  // namespace podsim::collectives

namespace podsim::collectives {
namespace {

// NVSwitches of a node with as many NVLinks to every GPU are alike: each but the lowest is a copy
// of the lowest (link_orbits.h), and every transfer between two GPUs of a node puts a stripe of
// the same share on each of them, so a stripe on a copy has a twin the quotient keeps.
TEST(FabricSymmetryTest, AlikeNvSwitchesAreCopiesOfTheLowest) {
  struct Case {
    const char* system;
    std::vector<int> twin;  // Per switch of a node: the switch that stands for it.
  };
  for (const Case& c : {Case{"a100:16", {0, 0, 0, 0, 0, 0}}, Case{"h100:16", {0, 1, 1, 0}},
                        Case{"b200:8", {0, 0}}, Case{"gb200:72", std::vector<int>(18, 0)}}) {
    SCOPED_TRACE(c.system);
    const topology::System system = System(c.system);
    const topology::Fabric& fabric = system.fabric;
    const topology::GpuLayout& gpu = *fabric.gpu();
    ASSERT_EQ(gpu.switches_per_node, static_cast<int>(c.twin.size()));
    const LinkOrbits orbits = TranslationGroup(&fabric).Orbits();
    ASSERT_EQ(orbits.twin.size(), fabric.link_count());
    size_t copies = 0;
    for (topology::VertexId g = 0; g < fabric.chip_count(); ++g) {
      for (int s = 0; s < gpu.switches_per_node; ++s) {
        const size_t at = static_cast<size_t>(g) * gpu.switches_per_node;
        for (const std::vector<topology::LinkIndex>* links :
             {&gpu.gpu_to_switch, &gpu.switch_to_gpu}) {
          const topology::LinkIndex link = (*links)[at + s];
          EXPECT_EQ(orbits.IsCopy(link), c.twin[s] != s);
          EXPECT_EQ(orbits.twin[link], (*links)[at + c.twin[s]]);
          EXPECT_EQ(orbits.canonical[link], (*links)[at + c.twin[s]]);
          EXPECT_EQ(orbits.multiplicity[link], 1.0);
          copies += orbits.IsCopy(link) ? 1 : 0;
        }
      }
    }
    size_t all_copies = 0;
    for (topology::LinkIndex l = 0; l < fabric.link_count(); ++l) all_copies += orbits.IsCopy(l);
    EXPECT_EQ(all_copies, copies);
    // Every stripe on a copy has a twin: the same share, through the switch standing for it.
    const topology::VertexId last = static_cast<topology::VertexId>(gpu.gpus_per_node - 1);
    const std::vector<topology::WeightedRoute> stripes = fabric.ParallelRoutes(0, last);
    ASSERT_EQ(stripes.size(), c.twin.size());
    for (size_t s = 0; s < stripes.size(); ++s) {
      const topology::WeightedRoute& twin = stripes[c.twin[s]];
      EXPECT_EQ(stripes[s].fraction, twin.fraction);
      ASSERT_EQ(stripes[s].route.size(), twin.route.size());
      for (size_t i = 0; i < twin.route.size(); ++i) {
        EXPECT_EQ(orbits.canonical[stripes[s].route[i]], twin.route[i]);
      }
    }
  }
  // Without NVSwitches alike (a torus), no copies.
  const topology::System torus = System("tpu-v5p:4x4x4");
  EXPECT_TRUE(TranslationGroup(&torus.fabric).Orbits().twin.empty());
}

}  // namespace
}  // namespace podsim::collectives
