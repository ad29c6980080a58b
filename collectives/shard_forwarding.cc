#include "collectives/shard_forwarding.h"

#include <algorithm>
#include <utility>

#include "sim/check.h"

namespace podsim::collectives {

std::string_view ForwardingPatternName(ForwardingPattern pattern) {
  switch (pattern) {
    case ForwardingPattern::kUnidirectionalRing:
      return "ring";
    case ForwardingPattern::kBidirectionalRing:
      return "bidi-ring";
    case ForwardingPattern::kLine:
      return "line";
    case ForwardingPattern::kShift:
      return "shift";
  }
  return "?";
}

ShardForwarding::ShardForwarding(TransferExecutor* executor, std::vector<topology::VertexId> ranks,
                                 ForwardingPattern pattern, double shard_bytes,
                                 RankDoneListener* listener, uint32_t tag, uint32_t chunks)
    : executor_(executor),
      ranks_(std::move(ranks)),
      pattern_(pattern),
      shard_bytes_(shard_bytes),
      chunks_(chunks),
      listener_(listener),
      tag_(tag),
      state_(ranks_.size()) {
  PODSIM_CHECK(!ranks_.empty()) << "a ring needs at least one rank";
  PODSIM_CHECK(shard_bytes_ >= 0) << "negative shard " << shard_bytes_;
  PODSIM_CHECK(chunks_ >= 1) << "a step needs at least one chunk";
}

uint32_t ShardForwarding::StepCount(uint32_t index, int direction) const {
  const uint32_t n = static_cast<uint32_t>(ranks_.size());
  switch (pattern_) {
    case ForwardingPattern::kUnidirectionalRing:
      return direction == 0 ? n - 1 : 0;
    case ForwardingPattern::kBidirectionalRing:
      // Odd n: (n-1)/2 shards each way. Even n: the opposite rank's shard is split, half each
      // way, so both directions make n/2 sends, the last one of half a shard.
      (void)direction;
      return n / 2;
    case ForwardingPattern::kLine:
      // Rightwards a rank forwards the shards of itself and every rank to its left; leftwards
      // those of itself and every rank to its right. The end ranks have no neighbour outwards.
      if (direction == 0) return index + 1 < n ? index + 1 : 0;
      return index > 0 ? n - index : 0;
    case ForwardingPattern::kShift:
      return direction == 0 && n > 1 ? 1 : 0;
  }
  return 0;
}

uint32_t ShardForwarding::Neighbour(uint32_t index, int direction) const {
  const uint32_t n = static_cast<uint32_t>(ranks_.size());
  return direction == 0 ? (index + 1) % n : (index + n - 1) % n;
}

uint32_t ShardForwarding::ReceiveCount(uint32_t index, int direction) const {
  if (pattern_ == ForwardingPattern::kLine) {
    const uint32_t n = static_cast<uint32_t>(ranks_.size());
    if (direction == 0 && index == 0) return 0;
    if (direction == 1 && index + 1 == n) return 0;
  }
  // The sender into `index` in this direction is its neighbour the other way.
  return StepCount(Neighbour(index, 1 - direction), direction);
}

void ShardForwarding::RankReady(uint32_t index) {
  PODSIM_CHECK(index < state_.size() && !state_[index].ready)
      << "rank " << index << " made ready twice or out of range";
  PODSIM_CHECK(simulated_.empty() || simulated_[index]) << "a mirrored rank made ready";
  state_[index].ready = true;
  state_[index].ready_time = executor_->engine()->now();
  TryAdvance(index);
  CheckDone(index);
}

void ShardForwarding::TryAdvance(uint32_t index) {
  RankState& state = state_[index];
  if (!state.ready) return;
  for (int direction = 0; direction < 2; ++direction) {
    const uint32_t steps = StepCount(index, direction);
    const uint32_t send = state.sent[direction];
    if (state.sending[direction] || send >= steps * chunks_) continue;
    // Send i is chunk i % C of step i / C, which forwards what arrived as the same chunk of the
    // previous step, receive i - C (chunks of one direction arrive in the order they were sent).
    const uint32_t step = send / chunks_;
    SendTiming timing;
    timing.data_ready = state.ready_time;
    if (step > 0) {
      const uint32_t needed = send - chunks_;
      if (state.received[direction] <= needed) continue;
      std::vector<sim::Time>& arrivals = state.arrivals[direction];
      timing.data_ready = std::max(timing.data_ready, arrivals[needed - state.base[direction]]);
      if (needed + 1 - state.base[direction] == arrivals.size()) {
        arrivals.clear();
        state.base[direction] = needed + 1;
      }
    }
    if (send > 0) timing.previous_done = state.last_done[direction];
    const bool half = pattern_ == ForwardingPattern::kBidirectionalRing && ranks_.size() % 2 == 0 &&
                      step + 1 == steps;
    state.sending[direction] = true;
    executor_->Send(
        ranks_[index], ranks_[Neighbour(index, direction)],
        (half ? shard_bytes_ / 2 : shard_bytes_) / chunks_,
        [this, index, direction] { OnSendDone(index, direction); }, timing);
  }
}

void ShardForwarding::OnSendDone(uint32_t index, int direction) {
  const sim::Time now = executor_->engine()->now();
  RankState& state = state_[index];
  state.sending[direction] = false;
  state.last_done[direction] = now;
  ++state.sent[direction];
  const uint32_t receiver = Neighbour(index, direction);
  if (!simulated_.empty() && !simulated_[receiver]) {
    router_->RouteReceive(tag_, receiver, direction);
    TryAdvance(index);
    CheckDone(index);
    return;
  }
  RecordReceive(receiver, direction);
  TryAdvance(receiver);
  TryAdvance(index);
  CheckDone(receiver);
  CheckDone(index);
}

void ShardForwarding::RecordReceive(uint32_t index, int direction) {
  RankState& receiving = state_[index];
  ++receiving.received[direction];
  // Only receives a later send forwards need their arrival time.
  if (receiving.received[direction] <= StepCount(index, direction) * chunks_) {
    receiving.arrivals[direction].push_back(executor_->engine()->now());
  }
}

void ShardForwarding::Mirror(std::vector<uint8_t> simulated, ReceiveRouter* router) {
  PODSIM_CHECK(simulated.size() == ranks_.size() && router != nullptr) << "bad mirror";
  simulated_ = std::move(simulated);
  router_ = router;
}

void ShardForwarding::Receive(uint32_t index, int direction) {
  PODSIM_CHECK(simulated_.empty() || simulated_[index]) << "receive routed to a mirrored rank";
  RecordReceive(index, direction);
  TryAdvance(index);
  CheckDone(index);
}

void ShardForwarding::CheckDone(uint32_t index) {
  RankState& state = state_[index];
  if (state.done || !state.ready) return;
  for (int direction = 0; direction < 2; ++direction) {
    if (state.sent[direction] < StepCount(index, direction) * chunks_) return;
    if (state.received[direction] < ReceiveCount(index, direction) * chunks_) return;
  }
  state.done = true;
  listener_->OnRankDone(tag_, index);
}

}  // namespace podsim::collectives
