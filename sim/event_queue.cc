#include "sim/event_queue.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "sim/check.h"

namespace podsim::sim {

uint32_t EventQueue::AcquireSlot() {
  if (!free_slots_.empty()) {
    uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }
  const auto slot = static_cast<uint32_t>(generations_.size());
  if ((slot & (kBlockSize - 1)) == 0) {
    handler_blocks_.push_back(std::make_unique<std::array<EventHandler, kBlockSize>>());
  }
  generations_.push_back(1);
  sequences_.push_back(0);
  return slot;
}

int EventQueue::BucketOf(int64_t time_ps, int64_t last_ps) {
  const auto differ = static_cast<uint64_t>(time_ps ^ last_ps);
  if (differ == 0) return 0;
  const int level = (std::bit_width(differ) - 1) / kDigitBits;
  const auto digit =
      static_cast<int>((static_cast<uint64_t>(time_ps) >> (level * kDigitBits)) & (kDigits - 1));
  return 1 + level * kDigits + digit;
}

void EventQueue::File(const Item& item) {
  const int index = BucketOf(item.time_ps, last_ps_);
  buckets_[index].items.push_back(item);
  if (index > 0) {
    const int level = (index - 1) / kDigits;
    digits_nonempty_[level] |= uint32_t{1} << ((index - 1) % kDigits);
    levels_nonempty_ |= uint32_t{1} << level;
  }
}

EventId EventQueue::Enqueue(Time time, uint32_t slot) {
  PODSIM_CHECK(Handler(slot)) << "event without a handler";
  const int64_t time_ps = time.picoseconds();
  PODSIM_CHECK(time_ps >= popped_ps_)
      << "event at " << time << " is before the last event popped, at "
      << Time::Picoseconds(popped_ps_);
  if (time_ps < last_ps_) Refile(time_ps);
  const uint32_t generation = generations_[slot];
  sequences_[slot] = next_seq_++;
  File(Item{time_ps, slot, generation});
  ++live_;
  return EventId{slot, generation};
}

void EventQueue::Refile(int64_t last_ps) {
  std::vector<Item> pending;
  for (Bucket& bucket : buckets_) {
    for (size_t i = bucket.head; i < bucket.items.size(); ++i) {
      if (Live(bucket.items[i])) pending.push_back(bucket.items[i]);
    }
    bucket = Bucket{};
  }
  digits_nonempty_ = {};
  levels_nonempty_ = 0;
  cancelled_ = 0;
  // Filing in sequence order keeps every bucket in sequence order (header comment).
  std::sort(pending.begin(), pending.end(), [this](const Item& a, const Item& b) {
    return sequences_[a.slot] < sequences_[b.slot];
  });
  last_ps_ = last_ps;
  for (const Item& item : pending) File(item);
}

bool EventQueue::IsPending(EventId id) const {
  return id.valid() && id.slot < generations_.size() && generations_[id.slot] == id.generation;
}

EventId EventQueue::Reschedule(EventId id, Time time) {
  PODSIM_CHECK(IsPending(id)) << "rescheduling an event that is not pending";
  RetireId(id.slot);
  --live_;
  ++cancelled_;
  return Enqueue(time, id.slot);
}

bool EventQueue::Cancel(EventId id) {
  if (!IsPending(id)) return false;
  RetireId(id.slot);
  FreeSlot(id.slot);
  --live_;
  ++cancelled_;
  return true;
}

void EventQueue::RetireId(uint32_t slot) {
  // Generation 0 is reserved for "no event"; skip it when the counter wraps.
  if (++generations_[slot] == 0) generations_[slot] = 1;
}

void EventQueue::FreeSlot(uint32_t slot) {
  Handler(slot) = nullptr;
  free_slots_.push_back(slot);
}

size_t EventQueue::DropCancelled(std::vector<Item>* items) {
  const size_t stored = items->size();
  std::erase_if(*items, [this](const Item& item) { return !Live(item); });
  PODSIM_CHECK(stored - items->size() <= cancelled_)
      << "event queue miscounted its cancelled items";
  cancelled_ -= stored - items->size();
  return items->size();
}

void EventQueue::RefillFront() {
  Bucket& front = buckets_[0];
  while (true) {
    while (front.head < front.items.size() && !Live(front.items[front.head])) {
      ++front.head;
      PODSIM_CHECK(cancelled_ > 0) << "event queue miscounted its cancelled items";
      --cancelled_;
    }
    if (front.head < front.items.size()) return;
    front.items.clear();
    front.head = 0;
    PODSIM_CHECK(levels_nonempty_ != 0) << "event queue lost track of a live event";
    const int level = std::countr_zero(levels_nonempty_);
    const int digit = std::countr_zero(digits_nonempty_[level]);
    Bucket& lowest = buckets_[1 + level * kDigits + digit];
    digits_nonempty_[level] &= ~(uint32_t{1} << digit);
    if (digits_nonempty_[level] == 0) levels_nonempty_ &= ~(uint32_t{1} << level);
    std::vector<Item>& source = lowest.items;
    // The bucket's time range, in one pass over its items (cheaper than keeping it on every
    // insert and move: the items are contiguous, the bucket headers written per item were not).
    // While cancelled items are more than a quarter of the live ones, they are dropped here
    // rather than carried down: where rates change often most items are (the flow model's
    // moved completions, 99% of BM_SharedTorus's: 12.8% fewer instructions). Otherwise (a few
    // cancelled timeouts, say) no item's generation is read, and the front drops them.
    if (cancelled_ * 4 > live_ && DropCancelled(&source) == 0) continue;
    int64_t earliest = INT64_MAX, latest = INT64_MIN;
    for (const Item& item : source) {
      earliest = std::min(earliest, item.time_ps);
      latest = std::max(latest, item.time_ps);
    }
    last_ps_ = earliest;
    const bool one_instant = earliest == latest;
    if (one_instant) {  // As a lock-step burst: the bucket becomes the front.
      std::swap(front.items, source);
      continue;
    }
    // Every item moves to a lower level: it differs from `earliest` below digit `level`.
    for (const Item& item : source) File(item);
    source.clear();
  }
}

Time EventQueue::NextTime() {
  PODSIM_CHECK(!empty()) << "NextTime() on an empty event queue";
  SettleFront();
  return Time::Picoseconds(last_ps_);
}

EventQueue::Event EventQueue::PopNext() {
  PODSIM_CHECK(!empty()) << "PopNext() on an empty event queue";
  SettleFront();
  Bucket& front = buckets_[0];
  const Item item = front.items[front.head++];
  // The next event's handler slot, likely out of cache with many events pending: fetched while
  // this one runs.
  if (front.head < front.items.size()) __builtin_prefetch(&Handler(front.items[front.head].slot));
  // The front keeps its storage: a zero-delay insert from the handler about to run appends to it.
  RetireId(item.slot);
  --live_;
  popped_ps_ = item.time_ps;
  return Event{Time::Picoseconds(item.time_ps), item.slot};
}

void EventQueue::Run(const Event& event) {
  Handler(event.slot)();
  FreeSlot(event.slot);
}

}  // namespace podsim::sim
