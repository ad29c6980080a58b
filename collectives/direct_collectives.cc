#include "collectives/direct_collectives.h"

#include <utility>

#include "sim/check.h"

namespace podsim::collectives {

DirectAllToAll::DirectAllToAll(TransferExecutor* executor,
                               std::vector<std::vector<topology::VertexId>> groups,
                               double bytes_per_group)
    : executor_(executor), groups_(std::move(groups)), bytes_per_group_(bytes_per_group) {}

void DirectAllToAll::Start(sim::EventHandler on_done) {
  on_done_ = std::move(on_done);
  pending_ = 1;  // Held until every send is issued, so an early completion cannot finish us.
  for (const auto& group : groups_) {
    const double n = static_cast<double>(group.size());
    const double chunk = bytes_per_group_ / (n * n);
    for (topology::VertexId src : group) {
      for (topology::VertexId dst : group) {
        if (src == dst) continue;
        ++pending_;
        executor_->Send(
            src, dst, chunk,
            [this] {
              if (--pending_ == 0) on_done_();
            },
            {}, RouteChoice::kDimensionOrder);
      }
    }
  }
  if (--pending_ == 0) executor_->engine()->Schedule(sim::Time::Zero(), std::move(on_done_));
}

ChainBroadcast::ChainBroadcast(TransferExecutor* executor,
                               std::vector<std::vector<topology::VertexId>> groups,
                               double bytes_per_group, uint32_t chunks)
    : executor_(executor),
      groups_(std::move(groups)),
      chunk_bytes_(bytes_per_group / chunks),
      chunks_(chunks) {
  PODSIM_CHECK(chunks_ >= 1) << "broadcast needs at least one chunk";
}

void ChainBroadcast::Start(sim::EventHandler on_done) {
  on_done_ = std::move(on_done);
  hops_.clear();
  for (const auto& group : groups_) {
    hops_.emplace_back(group.size());
    hops_.back()[0].received = chunks_;
    if (group.size() > 1) pending_ += chunks_;
  }
  if (pending_ == 0) {
    executor_->engine()->Schedule(sim::Time::Zero(), std::move(on_done_));
    return;
  }
  for (uint32_t g = 0; g < groups_.size(); ++g) TryForward(g, 0);
}

void ChainBroadcast::TryForward(uint32_t g, uint32_t i) {
  std::vector<Hop>& chain = hops_[g];
  if (i + 1 >= chain.size()) return;
  Hop& hop = chain[i];
  if (hop.sending || hop.sent >= chunks_ || hop.sent >= hop.received) return;
  hop.sending = true;
  executor_->Send(groups_[g][i], groups_[g][i + 1], chunk_bytes_, [this, g, i] {
    std::vector<Hop>& chain = hops_[g];
    chain[i].sending = false;
    ++chain[i].sent;
    ++chain[i + 1].received;
    if (i + 2 == chain.size() && --pending_ == 0) {
      on_done_();
      return;
    }
    TryForward(g, i + 1);
    TryForward(g, i);
  });
}

PointToPoint::PointToPoint(TransferExecutor* executor, topology::VertexId src,
                           topology::VertexId dst, double bytes)
    : executor_(executor), src_(src), dst_(dst), bytes_(bytes) {}

void PointToPoint::Start(sim::EventHandler on_done) {
  executor_->Send(src_, dst_, bytes_, std::move(on_done));
}

}  // namespace podsim::collectives
