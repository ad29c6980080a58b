// A lone collective that the fabric's symmetries map onto itself runs one rank per orbit
// (collective_runner.h, CollectiveRequest::reference): the same time as every rank simulated, for
// every op, ring-type or hierarchical algorithm, axis subset, size and efficiency model, on tori
// and GPU fat trees (issue 13).

#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "collectives/collective_runner.h"
#include "topology/system.h"

namespace podsim::collectives {
namespace {

struct Case {
  std::string system;
  std::vector<std::string> axes;
  // The algorithms tried besides the default.
  std::vector<std::string> algorithms = {"ring", "bidi-ring", "multi-axis"};
  std::vector<double> bytes_per_rank = {3.0 * (1 << 10), 48.0 * (1 << 20)};
};

class CollectiveSymmetryTest : public ::testing::TestWithParam<Case> {};

// Test names: index, system and axes with every other character as '_' (tpu-v5e:16x16 ->
// 7_tpu_v5e_16x16), so that a run can select one.
std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = std::to_string(info.index) + "_" + info.param.system;
  for (const std::string& axis : info.param.axes) name += "_" + axis;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

TEST_P(CollectiveSymmetryTest, OneRankPerOrbitGivesTheReferenceTime) {
  sim::StatusOr<topology::System> system = topology::ParseSystem(GetParam().system);
  ASSERT_TRUE(system.ok()) << system.status();
  int symmetric = 0;
  for (CollectiveOp op :
       {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter, CollectiveOp::kAllReduce}) {
    std::vector<std::string> algorithms = GetParam().algorithms;
    algorithms.insert(algorithms.begin(), "");
    for (const std::string& algorithm : algorithms) {
      for (double bytes : GetParam().bytes_per_rank) {
        for (bool calibrated : {false, true}) {
          CollectiveRequest request;
          request.op = op;
          request.bytes = bytes * system->fabric.chip_count();
          request.axes = GetParam().axes;
          request.algorithm = algorithm;
          request.calibrated = calibrated;
          request.max_transfers = 50'000'000;
          CollectiveRequest reference = request;
          reference.reference = true;
          sim::StatusOr<CollectiveResult> fast = SimulateCollective(system->fabric, request);
          sim::StatusOr<CollectiveResult> full = SimulateCollective(system->fabric, reference);
          ASSERT_EQ(fast.ok(), full.ok()) << fast.status() << " / " << full.status();
          if (!fast.ok()) continue;
          const std::string what = std::string(CollectiveOpName(op)) + " " + algorithm + " " +
                                   std::to_string(bytes) + (calibrated ? " calibrated" : "");
          EXPECT_FALSE(full->symmetric) << what;
          EXPECT_EQ(fast->algorithm, full->algorithm) << what;
          const double t = full->time.ToSeconds();
          EXPECT_NEAR(fast->time.ToSeconds(), t, 1e-9 * t + 2e-12) << what;
          if (fast->symmetric) {
            ++symmetric;
            // Every rank of a torus is alike; on a GPU fat tree fewer
            // than all.
            if (system->fabric.torus() != nullptr) {
              EXPECT_EQ(fast->simulated_ranks, 1u) << what;
            }
            EXPECT_LT(fast->simulated_ranks, full->simulated_ranks) << what;
            EXPECT_LT(fast->transfers, full->transfers) << what;
          }
        }
      }
    }
  }
  EXPECT_GT(symmetric, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Tori, CollectiveSymmetryTest,
    ::testing::Values(Case{"ring:16,bw=1e11,lat=5e-7", {}}, Case{"ring:9,bw=1e11,lat=5e-7", {}},
                      Case{"torus:4x6,bw=1e11,lat=5e-7", {}},
                      Case{"torus:4x6,bw=1e11,lat=5e-7", {"y"}}, Case{"tpu-v5p:4x4x4", {}},
                      Case{"tpu-v5p:4x4x8", {"x", "z"}}, Case{"tpu-v5p:4x4x8", {"z"}},
                      Case{"tpu-v5e:16x16", {}}, Case{"tpu-v5p:16x1x1,wrap=all", {}}),
    CaseName);

// Slot rotations in every node; node translations by one in a fabric of one scalable unit
// (h100:16, a100:32, h100:80 with fewer nodes than spines, h100:64 oversubscribed), none past
// a partial unit (h100:136: 17 nodes), by whole units across two (h100:512). Only the
// hierarchical algorithm (the default across nodes) is reduced there.
const std::vector<std::string> kHierarchical = {"hierarchical"};
INSTANTIATE_TEST_SUITE_P(
    GpuFatTrees, CollectiveSymmetryTest,
    ::testing::Values(Case{"h100:16", {}, kHierarchical}, Case{"a100:32", {}, kHierarchical},
                      Case{"h100:80", {}, kHierarchical},
                      Case{"h100:64,oversub=4", {}, kHierarchical},
                      Case{"h100:136", {}, kHierarchical},
                      Case{"h100:512", {}, kHierarchical, {3.0 * (1 << 10), 64.0 * (1 << 10)}}),
    CaseName);

}  // namespace
}  // namespace podsim::collectives
