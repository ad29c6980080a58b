#include "collectives/in_switch_reduction.h"

#include <utility>
#include <vector>

#include "sim/check.h"

namespace podsim::collectives {

InSwitchReduction::InSwitchReduction(TransferExecutor* executor, CollectiveOp op, uint32_t members,
                                     std::vector<ReductionSwitch> switches, double bytes,
                                     uint32_t chunks, std::vector<uint32_t> simulated)
    : executor_(executor),
      op_(op),
      members_(members),
      simulated_(std::move(simulated)),
      switches_(std::move(switches)),
      chunks_(chunks),
      window_(executor->per_message_overhead() > sim::Time::Zero() ? 2 : 1) {
  PODSIM_CHECK(chunks_ >= 1 && members_ >= 1 && !switches_.empty())
      << "in-switch reduction needs chunks, members and switches";
  const double chunk = bytes / chunks_;
  const double n = members_;
  switch (op) {
    case CollectiveOp::kAllReduce:
      up_bytes_ = chunk;
      down_bytes_ = chunk;
      break;
    case CollectiveOp::kReduceScatter:
      up_bytes_ = chunk;
      down_bytes_ = chunk / n;
      break;
    case CollectiveOp::kAllGather:
      up_bytes_ = chunk / n;
      down_bytes_ = chunk * (n - 1) / n;
      break;
    default:
      PODSIM_CHECK(false) << "in-switch reduction cannot run " << CollectiveOpName(op);
  }
  for (ReductionSwitch& sw : switches_) {
    PODSIM_CHECK(sw.up.size() == members_ && sw.down.size() == members_)
        << "a reduction switch needs a route per member";
    // A reducing op's uploads cross the switch's reduction engine after the links.
    if (sw.engine.has_value() && op_ != CollectiveOp::kAllGather) {
      for (std::vector<sim::ResourceId>& route : sw.up) route.push_back(*sw.engine);
    }
  }
  if (simulated_.empty()) {
    for (uint32_t m = 0; m < members_; ++m) simulated_.push_back(m);
  }
  for (uint32_t m : simulated_) PODSIM_CHECK(m < members_) << "member " << m << " out of range";
}

void InSwitchReduction::Start(sim::EventHandler on_done) {
  on_done_ = std::move(on_done);
  up_issued_.assign(switches_.size(), std::vector<uint32_t>(members_, 0));
  up_sent_.assign(switches_.size(), std::vector<uint32_t>(members_, 0));
  arrived_.assign(switches_.size(), std::vector<uint32_t>(chunks_, 0));
  pending_ = switches_.size() * static_cast<size_t>(chunks_) * simulated_.size();
  for (uint32_t s = 0; s < switches_.size(); ++s) {
    for (uint32_t m : simulated_) SendUp(s, m);
  }
}

void InSwitchReduction::SendUp(uint32_t s, uint32_t m) {
  const ReductionSwitch& sw = switches_[s];
  while (up_issued_[s][m] < chunks_ && up_issued_[s][m] - up_sent_[s][m] < window_) {
    ++up_issued_[s][m];
    executor_->SendOnResources(sw.up[m], sw.up_latency[m], up_bytes_ * sw.fraction,
                               [this, s, m] { OnUpDone(s, m); });
  }
}

void InSwitchReduction::OnUpDone(uint32_t s, uint32_t m) {
  // Uploads on one link start in order, share it equally and so complete in order.
  const uint32_t chunk = up_sent_[s][m]++;
  SendUp(s, m);
  if (++arrived_[s][chunk] < simulated_.size()) return;
  // The switch holds chunk `chunk` from every member: multicast the result down.
  const ReductionSwitch& sw = switches_[s];
  for (uint32_t dst : simulated_) {
    executor_->SendOnResources(sw.down[dst], sw.down_latency[dst], down_bytes_ * sw.fraction,
                               [this] {
                                 PODSIM_CHECK(pending_ > 0) << "more deliveries than expected";
                                 if (--pending_ == 0) on_done_();
                               });
  }
}

}  // namespace podsim::collectives
