#include "sim/event_queue.h"

#include <algorithm>
#include <utility>

#include "sim/check.h"

namespace podsim::sim {

uint32_t EventQueue::AcquireSlot() {
  if (!free_slots_.empty()) {
    uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }
  handlers_.emplace_back();
  generations_.push_back(1);
  return static_cast<uint32_t>(generations_.size() - 1);
}

EventId EventQueue::Enqueue(Time time, uint32_t slot) {
  PODSIM_CHECK(handlers_[slot]) << "event without a handler";
  const uint32_t generation = generations_[slot];
  PODSIM_CHECK(time >= Time::Zero()) << "event at negative time " << time;
  const int64_t time_ps = time.picoseconds();
  const uint64_t seq = next_seq_++;
  if (newest_bucket_ == kNoBucket || buckets_[newest_bucket_].time_ps != time_ps) {
    uint32_t bucket;
    if (!free_buckets_.empty()) {
      bucket = free_buckets_.back();
      free_buckets_.pop_back();
    } else {
      bucket = static_cast<uint32_t>(buckets_.size());
      buckets_.emplace_back();
    }
    buckets_[bucket].time_ps = time_ps;
    buckets_[bucket].head = 0;
    buckets_[bucket].items.clear();
    heap_.push_back(Entry{time_ps, seq, bucket});
    SiftUp(heap_.size() - 1);
    newest_bucket_ = bucket;
  }
  buckets_[newest_bucket_].items.push_back(Item{seq, slot, generation});
  ++live_;
  return EventId{slot, generation};
}

bool EventQueue::IsPending(EventId id) const {
  return id.valid() && id.slot < generations_.size() && generations_[id.slot] == id.generation;
}

bool EventQueue::Cancel(EventId id) {
  if (!IsPending(id)) return false;
  RetireId(id.slot);
  FreeSlot(id.slot);
  --live_;
  return true;
}

void EventQueue::RetireId(uint32_t slot) {
  // Generation 0 is reserved for "no event"; skip it when the counter wraps.
  if (++generations_[slot] == 0) generations_[slot] = 1;
}

void EventQueue::FreeSlot(uint32_t slot) {
  handlers_[slot] = nullptr;
  free_slots_.push_back(slot);
}

void EventQueue::SiftUp(size_t index) {
  Entry moving = heap_[index];
  while (index > 0) {
    size_t parent = (index - 1) / kArity;
    if (!Earlier(moving, heap_[parent])) break;
    heap_[index] = heap_[parent];
    index = parent;
  }
  heap_[index] = moving;
}

void EventQueue::SiftDown(size_t index) {
  // Bottom-up: walk the hole down to a leaf along the earliest children, then sift the moving
  // entry up from there. The entry taken from the back usually belongs near the leaves, so this
  // saves one unpredictable comparison per level over the textbook loop.
  const size_t size = heap_.size();
  Entry moving = heap_[index];
  while (true) {
    size_t first = index * kArity + 1;
    if (first >= size) break;
    size_t best;
    if (first + 3 < size) {
      // All four children exist: a two-round tournament, free of data-dependent branches.
      size_t left = first + Earlier(heap_[first + 1], heap_[first]);
      size_t right = first + 2 + Earlier(heap_[first + 3], heap_[first + 2]);
      best = Earlier(heap_[right], heap_[left]) ? right : left;
    } else {
      best = first;
      for (size_t child = first + 1; child < size; ++child) {
        best = Earlier(heap_[child], heap_[best]) ? child : best;
      }
    }
    heap_[index] = heap_[best];
    index = best;
  }
  heap_[index] = moving;
  SiftUp(index);
}

void EventQueue::RemoveTop() {
  const uint32_t bucket = heap_.front().bucket;
  if (bucket == newest_bucket_) newest_bucket_ = kNoBucket;
  free_buckets_.push_back(bucket);
  heap_.front() = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) SiftDown(0);
}

void EventQueue::DropStaleFront() {
  while (true) {
    PODSIM_CHECK(!heap_.empty()) << "event queue lost track of a live event";
    Bucket& bucket = buckets_[heap_.front().bucket];
    while (bucket.head < bucket.items.size() &&
           generations_[bucket.items[bucket.head].slot] != bucket.items[bucket.head].generation) {
      ++bucket.head;
    }
    if (bucket.head < bucket.items.size()) return;
    RemoveTop();
  }
}

Time EventQueue::NextTime() {
  PODSIM_CHECK(!empty()) << "NextTime() on an empty event queue";
  DropStaleFront();
  return Time::Picoseconds(heap_.front().time_ps);
}

EventQueue::Event EventQueue::PopNext() {
  PODSIM_CHECK(!empty()) << "PopNext() on an empty event queue";
  DropStaleFront();
  Bucket& bucket = buckets_[heap_.front().bucket];
  const Item item = bucket.items[bucket.head++];
  // An exhausted bucket stays in the heap until the next pop: a zero-delay insert from the
  // handler about to run may still append to it.
  RetireId(item.slot);
  --live_;
  return Event{Time::Picoseconds(bucket.time_ps), item.seq, item.slot};
}

void EventQueue::Run(const Event& event) {
  handlers_[event.slot]();
  FreeSlot(event.slot);
}

}  // namespace podsim::sim
