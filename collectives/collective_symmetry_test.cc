// A lone collective on a torus every translation maps onto itself runs one rank per orbit
// (collective_runner.h, CollectiveRequest::reference): the same time as every rank simulated, for
// every op, ring-type algorithm, axis subset, size and efficiency model (issue 13).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectives/collective_runner.h"
#include "topology/system.h"

namespace podsim::collectives {
namespace {

struct Case {
  std::string system;
  std::vector<std::string> axes;
};

class CollectiveSymmetryTest : public ::testing::TestWithParam<Case> {};

TEST_P(CollectiveSymmetryTest, OneRankPerOrbitGivesTheReferenceTime) {
  sim::StatusOr<topology::System> system = topology::ParseSystem(GetParam().system);
  ASSERT_TRUE(system.ok()) << system.status();
  int symmetric = 0;
  for (CollectiveOp op :
       {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter, CollectiveOp::kAllReduce}) {
    for (const char* algorithm : {"", "ring", "bidi-ring", "multi-axis"}) {
      for (double bytes : {3.0 * (1 << 10), 48.0 * (1 << 20)}) {
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
            EXPECT_EQ(fast->simulated_ranks, 1u) << what;
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
                      Case{"tpu-v5e:16x16", {}}, Case{"tpu-v5p:16x1x1,wrap=all", {}}));

}  // namespace
}  // namespace podsim::collectives
