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
  heap_.push_back(Entry{time.picoseconds(), next_seq_++, slot, s.generation});
  std::push_heap(heap_.begin(), heap_.end(), Later);
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

void EventQueue::DropStaleTop() {
  while (!heap_.empty() && slots_[heap_.front().slot].generation != heap_.front().generation) {
    std::pop_heap(heap_.begin(), heap_.end(), Later);
    heap_.pop_back();
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
  std::pop_heap(heap_.begin(), heap_.end(), Later);
  Entry top = heap_.back();
  heap_.pop_back();
  Event event{Time::Picoseconds(top.time_ps), top.seq, std::move(slots_[top.slot].handler)};
  ReleaseSlot(top.slot);
  --live_;
  return event;
}

}  // namespace podsim::sim
