#include "sim/event_queue.h"

#include <algorithm>
#include <utility>

#include "sim/check.h"

namespace podsim::sim {

EventId EventQueue::Insert(Time time, EventHandler handler) {
  PODSIM_CHECK(handler) << "event without a handler";
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.handler = std::move(handler);
  PODSIM_CHECK(time >= Time::Zero()) << "event at negative time " << time;
  heap_.push_back(Entry{time.picoseconds(), next_seq_++, slot, s.generation});
  SiftUp(heap_.size() - 1);
  ++live_;
  return EventId{slot, s.generation};
}

bool EventQueue::IsPending(EventId id) const {
  return id.valid() && id.slot < slots_.size() && slots_[id.slot].generation == id.generation;
}

bool EventQueue::Cancel(EventId id) {
  if (!IsPending(id)) return false;
  ReleaseSlot(id.slot);
  --live_;
  return true;
}

void EventQueue::ReleaseSlot(uint32_t slot) {
  Slot& s = slots_[slot];
  s.handler = nullptr;
  // Generation 0 is reserved for "no event"; skip it when the counter wraps.
  if (++s.generation == 0) s.generation = 1;
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
  heap_.front() = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) SiftDown(0);
}

void EventQueue::DropStaleTop() {
  while (!heap_.empty() && slots_[heap_.front().slot].generation != heap_.front().generation) {
    RemoveTop();
  }
}

Time EventQueue::NextTime() {
  PODSIM_CHECK(!empty()) << "NextTime() on an empty event queue";
  DropStaleTop();
  return Time::Picoseconds(heap_.front().time_ps);
}

EventQueue::Event EventQueue::PopNext() {
  PODSIM_CHECK(!empty()) << "PopNext() on an empty event queue";
  DropStaleTop();
  Entry top = heap_.front();
  RemoveTop();
  Event event{Time::Picoseconds(top.time_ps), top.seq, std::move(slots_[top.slot].handler)};
  ReleaseSlot(top.slot);
  --live_;
  return event;
}

}  // namespace podsim::sim
