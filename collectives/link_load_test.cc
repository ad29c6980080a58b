#include "collectives/link_load.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "collectives/link_copy_echo.h"
#include "collectives/link_orbits.h"
#include "sim/engine.h"
#include "sim/flow_model.h"
#include "topology/generic_builder.h"

namespace podsim::collectives {
namespace {

constexpr double kLineRate = 100;  // bytes/s, so that utilisation is bytes / (100 x seconds).

topology::Fabric Ring(int n) {
  return std::move(
      *topology::BuildRing(n, topology::GenericLinkOptions{kLineRate, sim::Time::Zero()}));
}

sim::Time Seconds(double s) { return sim::Time::FromSecondsRounded(s); }

// Flows count their bytes times their weight on every link of their route, echoed usage counts
// over the time it lasts, bytes echoed count as they are.
TEST(LinkLoadMeterTest, CountsFlowBytesTimesWeightsEchoedUsageAndEchoedBytes) {
  topology::Fabric ring = Ring(4);
  ASSERT_GE(ring.link_count(), 4u);
  LinkLoadMeter meter(&ring);
  EXPECT_FALSE(meter.WantsFlowUsage());
  const std::vector<sim::ResourceId> route = {sim::ResourceId{0}, sim::ResourceId{1}};
  const std::vector<double> weights = {2, 1};
  meter.OnFlowStarted(sim::Time::Zero(), sim::FlowId{}, 100, route, weights);
  meter.OnFlowStarted(sim::Time::Zero(), sim::FlowId{}, 40, route, {});
  meter.OnUsageEchoed(Seconds(1), sim::ResourceId{2}, 50);
  meter.OnUsageEchoed(Seconds(3), sim::ResourceId{2}, 0);
  meter.OnBytesEchoed(Seconds(1), sim::ResourceId{3}, 30);
  // Resources past the links (a switch's reduction engine) are not links.
  meter.OnFlowStarted(
      sim::Time::Zero(), sim::FlowId{}, 1e9,
      std::vector<sim::ResourceId>{sim::ResourceId{static_cast<uint32_t>(ring.link_count())}}, {});
  const std::vector<double> utilisation = meter.Utilisation(Seconds(4), nullptr);
  ASSERT_EQ(utilisation.size(), ring.link_count());
  EXPECT_DOUBLE_EQ(utilisation[0], 240.0 / 400);
  EXPECT_DOUBLE_EQ(utilisation[1], 140.0 / 400);
  EXPECT_DOUBLE_EQ(utilisation[2], 100.0 / 400);
  EXPECT_DOUBLE_EQ(utilisation[3], 30.0 / 400);
  const Bottleneck busiest = meter.Busiest(Seconds(4), nullptr);
  EXPECT_DOUBLE_EQ(busiest.utilisation, 0.6);
  EXPECT_EQ(busiest.links, std::vector<topology::LinkIndex>{0});
}

// Attached to a flow model, the meter is not told of usage changes, and its figures are those of
// integrating the usage the model reports: a flow sharing a link with another, then alone.
TEST(LinkLoadMeterTest, OnAModelEqualsTheIntegralOfTheUsageTheModelReports) {
  topology::Fabric ring = Ring(4);
  sim::Engine engine;
  sim::FlowModel model(&engine);
  for (size_t link = 0; link < ring.link_count(); ++link)
    ASSERT_TRUE(model.AddResource(kLineRate).ok());
  struct Integral : sim::FlowObserver {
    void OnResourceUsageChanged(sim::Time now, sim::ResourceId resource, double used) override {
      if (resource.value >= bytes.size()) bytes.resize(resource.value + 1, 0);
      if (resource.value >= rate.size())
        rate.resize(resource.value + 1, 0), since.resize(rate.size());
      bytes[resource.value] += rate[resource.value] * (now - since[resource.value]).ToSeconds();
      rate[resource.value] = used;
      since[resource.value] = now;
      ++changes;
    }
    std::vector<double> bytes, rate;
    std::vector<sim::Time> since;
    int changes = 0;
  } integral;
  LinkLoadMeter meter(&ring);
  model.AddObserver(&meter);
  model.AddObserver(&integral);
  ASSERT_TRUE(
      model.StartFlow({300, {sim::ResourceId{0}, sim::ResourceId{1}}}, sim::FlowCallback{}).ok());
  ASSERT_TRUE(model.StartFlow({100, {sim::ResourceId{1}}, Seconds(1)}, sim::FlowCallback{}).ok());
  engine.Run();
  ASSERT_GT(integral.changes, 2);
  const std::vector<double> utilisation = meter.Utilisation(engine.now(), nullptr);
  for (uint32_t link : {0u, 1u}) {
    EXPECT_NEAR(utilisation[link], integral.bytes[link] / (kLineRate * engine.now().ToSeconds()),
                1e-9)
        << "link " << link;
  }
  EXPECT_NEAR(utilisation[1] * kLineRate * engine.now().ToSeconds(), 400, 1e-6);
}

// A quotient's copy links carry what their twin carries: flows' bytes and echoed usage.
TEST(LinkCopyEchoTest, CopiesCarryTheirTwinsBytesAndEchoedUsage) {
  topology::Fabric ring = Ring(4);
  LinkLoadMeter meter(&ring);
  LinkOrbits orbits;
  for (topology::LinkIndex link = 0; link < ring.link_count(); ++link) {
    orbits.canonical.push_back(link);
    orbits.multiplicity.push_back(1);
    orbits.twin.push_back(link);
  }
  orbits.twin[2] = 0;  // Link 2 is a copy of link 0.
  LinkCopyEcho echo(&meter, orbits);
  EXPECT_FALSE(echo.WantsFlowUsage());
  const std::vector<sim::ResourceId> route = {sim::ResourceId{0}, sim::ResourceId{1}};
  echo.OnFlowStarted(sim::Time::Zero(), sim::FlowId{}, 100, route, std::vector<double>{3, 1});
  echo.OnUsageEchoed(sim::Time::Zero(), sim::ResourceId{0}, 10);
  echo.OnUsageEchoed(Seconds(2), sim::ResourceId{0}, 0);
  const std::vector<double> utilisation = meter.Utilisation(Seconds(4), nullptr);
  EXPECT_DOUBLE_EQ(utilisation[0], 320.0 / 400);
  EXPECT_DOUBLE_EQ(utilisation[2], 320.0 / 400);
  EXPECT_DOUBLE_EQ(utilisation[1], 100.0 / 400);
  EXPECT_DOUBLE_EQ(utilisation[3], 0);
}

}  // namespace
}  // namespace podsim::collectives
