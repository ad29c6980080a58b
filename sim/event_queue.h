// The future event set of the engine.
//
// Ordering: events are ordered by (time, sequence number), where the sequence number is a
// counter incremented on every Insert. Events due at the same time therefore run in the order
// they were scheduled (FIFO), exactly as in ns-3's Scheduler. The order never depends on
// addresses, hashing or the handler itself, so two runs of the same input pop the same events
// in the same order.
//
// Structure: events are kept in buckets of equal time, each a FIFO in sequence order, and the
// buckets in a 4-ary min-heap keyed by (time, first sequence). A simulator schedules in bursts at
// one instant (every rank's completion at the end of a ring step, every activation after a hop
// latency), so an insert at the time of the most recently opened bucket appends to it in O(1)
// instead of sifting through the heap. Only the most recent bucket takes appends: any older
// bucket of the same time holds only smaller sequence numbers, which keeps the (time, seq) order
// exact.
//
// Cancellation is O(1) and lazy: it bumps the generation of the event's handler slot, and the
// stale entry is dropped when it reaches the front.
//
//   operation   time                          notes
//   Insert      O(1) into the newest bucket,  n counts buckets, live or holding only
//               else O(log n)                 cancelled entries
//   Cancel      O(1)                          frees the handler at once
//   PopNext     O(1) within a bucket, O(log n) amortised per bucket
//   memory      16 bytes per entry + 64 bytes per live handler slot + 24 per bucket
//
// Thread safety: none; the engine is single-threaded by design.

#ifndef PODSIM_SIM_EVENT_QUEUE_H_
#define PODSIM_SIM_EVENT_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "sim/event_handler.h"
#include "sim/time.h"

namespace podsim::sim {

// Names a scheduled event so it can be cancelled. A default EventId names no event.
struct EventId {
  uint32_t slot = 0;
  uint32_t generation = 0;  // 0 is never a live generation.

  bool valid() const { return generation != 0; }
  friend bool operator==(const EventId&, const EventId&) = default;
};

class EventQueue {
 public:
  EventQueue() = default;
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  // Adds an event; returns its id. The callable is constructed in its slot, never moved after.
  // REQUIRES: handler is callable (not an empty EventHandler).
  template <typename F>
  EventId Insert(Time time, F&& handler) {
    uint32_t slot = AcquireSlot();
    handlers_[slot].Emplace(std::forward<F>(handler));
    return Enqueue(time, slot);
  }

  // Cancels a pending event. Returns false if it already ran, was cancelled or never existed.
  bool Cancel(EventId id);
  bool IsPending(EventId id) const;

  bool empty() const { return live_ == 0; }
  size_t size() const { return live_; }
  // Sequence number the next Insert will get; equals the number of Inserts so far.
  uint64_t next_sequence() const { return next_seq_; }

  // Time of the earliest live event. REQUIRES: !empty().
  Time NextTime();

  struct Event {
    Time time;
    uint64_t sequence;
    uint32_t slot;  // Where the handler waits for Run().
  };
  // Removes and returns the earliest live event. REQUIRES: !empty().
  // Its id is no longer pending (Cancel returns false); the handler stays in place until Run.
  Event PopNext();
  // Runs the handler of a popped event in place, then frees it. Handlers may insert and cancel
  // events while they run: slots live in a deque, so growing it never moves a running handler.
  // REQUIRES: `event` came from PopNext and has not been run.
  void Run(const Event& event);

 private:
  struct Item {
    uint64_t seq;
    uint32_t slot;
    uint32_t generation;
  };
  struct Bucket {
    int64_t time_ps = 0;
    size_t head = 0;  // First item not yet popped.
    std::vector<Item> items;
  };
  struct Entry {  // Heap entry of one bucket.
    int64_t time_ps;
    uint64_t seq;  // Sequence number of the bucket's first item.
    uint32_t bucket;
  };

  // True when a's (time, seq) key is before b's. Keys are unique because seq is. Compared as one
  // 128-bit integer so the comparison compiles without branches (time is never negative).
  static bool Earlier(const Entry& a, const Entry& b) {
    using Key = unsigned __int128;
    return ((Key(uint64_t(a.time_ps)) << 64) | a.seq) < ((Key(uint64_t(b.time_ps)) << 64) | b.seq);
  }
  // heap_ is an implicit 4-ary min-heap: half the depth of a binary heap, and the children of a
  // node share a cache line.
  static constexpr size_t kArity = 4;
  void SiftUp(size_t index);
  void SiftDown(size_t index);
  void RemoveTop();
  // Drops cancelled items and exhausted buckets until the front item is live. REQUIRES: !empty().
  void DropStaleFront();
  static constexpr uint32_t kNoBucket = UINT32_MAX;
  uint32_t AcquireSlot();
  // Files the event whose handler is in `slot`.
  EventId Enqueue(Time time, uint32_t slot);
  // Retires an id so it no longer names a pending event; the slot is not yet reusable.
  void RetireId(uint32_t slot);
  void FreeSlot(uint32_t slot);

  std::vector<Entry> heap_;
  std::vector<Bucket> buckets_;
  std::vector<uint32_t> free_buckets_;
  uint32_t newest_bucket_ = kNoBucket;  // The only bucket appends may go to.
  // Per slot: the handler (a deque, so growing it never moves a running handler) and the
  // generation that names its current event (dense, as every pop checks it).
  std::deque<EventHandler> handlers_;
  std::vector<uint32_t> generations_;
  std::vector<uint32_t> free_slots_;
  uint64_t next_seq_ = 0;
  size_t live_ = 0;
};

}  // namespace podsim::sim

#endif  // PODSIM_SIM_EVENT_QUEUE_H_
