#include "collectives/switch_tree_reduction.h"

#include <utility>

#include "sim/check.h"

namespace podsim::collectives {

SwitchTreeReduction::SwitchTreeReduction(TransferExecutor* executor, std::vector<TreeLeaf> leaves,
                                         double bytes, uint32_t chunks)
    : executor_(executor),
      leaves_(std::move(leaves)),
      roots_(leaves_.empty() ? 0 : static_cast<uint32_t>(leaves_.front().root_up.size())),
      chunks_(chunks),
      window_(executor->per_message_overhead() > sim::Time::Zero() ? 2 : 1),
      chunk_bytes_(bytes / chunks) {
  PODSIM_CHECK(chunks_ >= 1 && !leaves_.empty() && roots_ >= 1)
      << "a switch tree needs chunks, leaves and roots";
  for (const TreeLeaf& leaf : leaves_) {
    PODSIM_CHECK(!leaf.member_up.empty() && leaf.member_up.size() == leaf.member_down.size() &&
                 leaf.root_up.size() == roots_ && leaf.root_down.size() == roots_)
        << "every leaf needs members and a route to and from every root";
  }
}

void SwitchTreeReduction::Start(sim::EventHandler on_done) {
  on_done_ = std::move(on_done);
  start_ = executor_->engine()->now();
  const size_t leaves = leaves_.size();
  up_issued_.assign(leaves, {});
  up_sent_.assign(leaves, {});
  leaf_arrived_.assign(leaves, std::vector<uint32_t>(chunks_, 0));
  leaf_reduced_.assign(leaves, std::vector<uint32_t>(chunks_, 0));
  root_arrived_.assign(roots_, std::vector<uint32_t>(chunks_, 0));
  pending_ = 0;
  for (uint32_t l = 0; l < leaves; ++l) {
    const size_t members = leaves_[l].member_up.size();
    up_issued_[l].assign(members, 0);
    up_sent_[l].assign(members, 0);
    pending_ += members * chunks_;
  }
  for (uint32_t l = 0; l < leaves; ++l) {
    for (uint32_t m = 0; m < leaves_[l].member_up.size(); ++m) SendUp(l, m);
  }
}

void SwitchTreeReduction::SendUp(uint32_t l, uint32_t m) {
  const SwitchRoute& route = leaves_[l].member_up[m];
  while (up_issued_[l][m] < chunks_ && up_issued_[l][m] - up_sent_[l][m] < window_) {
    ++up_issued_[l][m];
    // The array is ready at the start and a member streams its chunks back to back, so a chunk
    // sent when the previous one completed owes no latency (transfer_executor.h, SendTiming).
    SendTiming timing;
    timing.data_ready = start_;
    timing.previous_done = up_issued_[l][m] > 1 ? executor_->engine()->now() : sim::Time::Zero();
    executor_->SendOnResources(
        route.links, route.latency, chunk_bytes_, [this, l, m] { OnMemberUp(l, m); }, timing);
  }
}

void SwitchTreeReduction::OnMemberUp(uint32_t l, uint32_t m) {
  // Uploads on one route start in order, share it equally and so complete in order.
  const uint32_t chunk = up_sent_[l][m]++;
  SendUp(l, m);
  if (++leaf_arrived_[l][chunk] < leaves_[l].member_up.size()) return;
  // The leaf holds its members' partial sum of `chunk`: one stripe up to every root.
  for (uint32_t r = 0; r < roots_; ++r) {
    const SwitchRoute& route = leaves_[l].root_up[r];
    executor_->SendOnResources(route.links, route.latency, chunk_bytes_ / roots_,
                               [this, r, chunk] { OnLeafUp(r, chunk); });
  }
}

void SwitchTreeReduction::OnLeafUp(uint32_t r, uint32_t chunk) {
  if (++root_arrived_[r][chunk] < leaves_.size()) return;
  // Root r holds its stripe of `chunk` from every leaf: multicast the sum down to every leaf.
  for (uint32_t l = 0; l < leaves_.size(); ++l) {
    const SwitchRoute& route = leaves_[l].root_down[r];
    executor_->SendOnResources(route.links, route.latency, chunk_bytes_ / roots_,
                               [this, l, chunk] { OnRootDown(l, chunk); });
  }
}

void SwitchTreeReduction::OnRootDown(uint32_t l, uint32_t chunk) {
  if (++leaf_reduced_[l][chunk] < roots_) return;
  // The leaf holds every stripe of the reduced chunk: multicast it to its members.
  for (const SwitchRoute& route : leaves_[l].member_down) {
    executor_->SendOnResources(route.links, route.latency, chunk_bytes_, [this] { OnDelivered(); });
  }
}

void SwitchTreeReduction::OnDelivered() {
  PODSIM_CHECK(pending_ > 0) << "more deliveries than expected";
  if (--pending_ == 0) on_done_();
}

}  // namespace podsim::collectives
