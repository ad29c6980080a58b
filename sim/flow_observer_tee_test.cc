#include "sim/flow_observer_tee.h"

#include <gtest/gtest.h>

#include <span>
#include <string>
#include <utility>
#include <vector>

namespace podsim::sim {
namespace {

// Writes what it sees, tagged with its name, into a shared log.
class Log : public FlowObserver {
 public:
  Log(std::string name, std::vector<std::string>* log, bool wants_usage = true)
      : name_(std::move(name)), log_(log), wants_usage_(wants_usage) {}
  void OnFlowStarted(Time, FlowId, double bytes, std::span<const ResourceId> route,
                     std::span<const double>) override {
    log_->push_back(name_ + " started " + std::to_string(static_cast<int>(bytes)) + " over " +
                    std::to_string(route.size()));
  }
  void OnFlowRateChanged(Time, FlowId, double rate) override {
    log_->push_back(name_ + " rate " + std::to_string(static_cast<int>(rate)));
  }
  void OnFlowCompleted(Time, FlowId) override { log_->push_back(name_ + " completed"); }
  void OnResourceUsageChanged(Time, ResourceId resource, double used) override {
    log_->push_back(name_ + " usage " + std::to_string(resource.value) + " " +
                    std::to_string(static_cast<int>(used)));
  }
  bool WantsFlowUsage() const override { return wants_usage_; }
  void OnBytesEchoed(Time, ResourceId resource, double bytes) override {
    log_->push_back(name_ + " bytes " + std::to_string(resource.value) + " " +
                    std::to_string(static_cast<int>(bytes)));
  }

 private:
  std::string name_;
  std::vector<std::string>* log_;
  bool wants_usage_;
};

TEST(FlowObserverTeeTest, PassesEveryEventToEachObserverInOrderSkippingNull) {
  std::vector<std::string> log;
  Log a("a", &log), b("b", &log);
  FlowObserverTee tee({&a, nullptr, &b});
  const std::vector<ResourceId> route = {ResourceId{1}, ResourceId{2}};
  tee.OnFlowStarted(Time::Zero(), FlowId{}, 5, route, {});
  tee.OnFlowRateChanged(Time::Zero(), FlowId{}, 7);
  tee.OnResourceUsageChanged(Time::Zero(), ResourceId{3}, 9);
  tee.OnFlowCompleted(Time::Zero(), FlowId{});
  EXPECT_EQ(log, (std::vector<std::string>{"a started 5 over 2", "b started 5 over 2", "a rate 7",
                                           "b rate 7", "a usage 3 9", "b usage 3 9", "a completed",
                                           "b completed"}));
}

// Flows' usage goes only to the observers that want it; echoed usage (by default a usage change)
// and echoed bytes go to every one.
TEST(FlowObserverTeeTest, PassesFlowsUsageOnlyToTheObserversThatWantIt) {
  std::vector<std::string> log;
  Log a("a", &log, /*wants_usage=*/false), b("b", &log);
  FlowObserverTee tee({&a, &b});
  EXPECT_TRUE(tee.WantsFlowUsage());
  tee.OnResourceUsageChanged(Time::Zero(), ResourceId{3}, 9);
  tee.OnUsageEchoed(Time::Zero(), ResourceId{4}, 8);
  tee.OnBytesEchoed(Time::Zero(), ResourceId{5}, 7);
  EXPECT_EQ(log, (std::vector<std::string>{"b usage 3 9", "a usage 4 8", "b usage 4 8",
                                           "a bytes 5 7", "b bytes 5 7"}));
  FlowObserverTee neither({&a});
  EXPECT_FALSE(neither.WantsFlowUsage());
}

}  // namespace
}  // namespace podsim::sim
