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
  Log(std::string name, std::vector<std::string>* log) : name_(std::move(name)), log_(log) {}
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

 private:
  std::string name_;
  std::vector<std::string>* log_;
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

}  // namespace
}  // namespace podsim::sim
