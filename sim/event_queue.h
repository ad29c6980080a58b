// The future event set of the engine.
//
// Ordering: events are ordered by (time, sequence number), where the sequence number is a
// counter incremented on every Insert and Reschedule. Events due at the same time therefore run in
// the order they were scheduled (FIFO), exactly as in ns-3's Scheduler. The order never depends on
// addresses, hashing or the handler itself, so two runs of the same input pop the same events
// in the same order.
//
// Structure: a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan 1990) of radix 16, which relies on
// the engine's monotonicity: no event is inserted before the last one popped. The front bucket
// holds the events due at `last_`, the time of the earliest pending event once the front is
// settled; bucket (l, d) holds those whose time differs from last_ first in hexadecimal digit l
// (counting from the least significant) and has digit d there (d is then above last_'s digit).
// An insert is a bit scan and an append. When the front runs out, the lowest non-empty level's
// smallest digit holds the earliest events: that bucket is scanned for its earliest time, which
// becomes last_, and its events move to lower levels; an event only ever moves down, at most 16
// times, and in practice once or twice, since events are scheduled a few orders of magnitude of
// delay ahead (with one bit a level, as the heap first was, an event moved about four times as
// often). Every bucket stays in sequence order: an insert appends the largest sequence number so
// far, and a bucket is refilled only while empty (every level below the one settled is), from one
// bucket in that bucket's order. So events due at one instant leave the front in FIFO order, with
// no comparisons of sequence numbers.
//
// A peek (NextTime) may settle last_ on an event that is not popped (Engine::RunUntil stops before
// it); an insert earlier than that re-files the pending events around the new time, in O(n log n).
//
// Cancellation is O(1) and lazy: it bumps the generation of the event's handler slot, and the
// stale entry is dropped when it reaches the front or its bucket is refilled from (while stale
// entries are more than a quarter of the live ones; else the refill reads no generation).
//
//   operation   time                          notes
//   Insert      O(1)                          O(n log n) once after a peek, if earlier than it
//   Cancel      O(1)                          frees the handler at once
//   PopNext     O(1) amortised per bucket     plus each event's moves down, O(log delay range)
//               move
//   memory      16 bytes per entry + 76 bytes per live handler slot
//
// Thread safety: none; the engine is single-threaded by design.

#ifndef PODSIM_SIM_EVENT_QUEUE_H_
#define PODSIM_SIM_EVENT_QUEUE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
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
  // REQUIRES: handler is callable (not an empty EventHandler); time >= 0 and not before the last
  // event popped.
  template <typename F>
  EventId Insert(Time time, F&& handler) {
    uint32_t slot = AcquireSlot();
    Handler(slot).Emplace(std::forward<F>(handler));
    return Enqueue(time, slot);
  }

  // Moves pending event `id` to `time`, keeping its handler: as Cancel(id) and an Insert of the
  // same handler (a new id and sequence number, so the order is the same), without destroying
  // and constructing the handler or freeing and taking a slot. REQUIRES: IsPending(id); time as
  // Insert's.
  EventId Reschedule(EventId id, Time time);
  // Cancels a pending event. Returns false if it already ran, was cancelled or never existed.
  bool Cancel(EventId id);
  bool IsPending(EventId id) const;

  bool empty() const { return live_ == 0; }
  size_t size() const { return live_; }
  // Sequence number the next Insert or Reschedule will get; the number of both so far.
  uint64_t next_sequence() const { return next_seq_; }

  // Time of the earliest live event. REQUIRES: !empty().
  Time NextTime();

  struct Event {
    Time time;
    uint32_t slot;  // Where the handler waits for Run().
  };
  // Removes and returns the earliest live event. REQUIRES: !empty().
  // Its id is no longer pending (Cancel returns false); the handler stays in place until Run.
  Event PopNext();
  // Runs the handler of a popped event in place, then frees it. Handlers may insert and cancel
  // events while they run: slots live in fixed blocks, so adding blocks never moves a running
  // handler.
  // REQUIRES: `event` came from PopNext and has not been run.
  void Run(const Event& event);
  // The sequence number of a popped event (read only when asked: a pop then touches one array
  // fewer). REQUIRES: `event` came from PopNext and has not been run.
  uint64_t SequenceOf(const Event& event) const { return sequences_[event.slot]; }

 private:
  // 16 bytes, so buckets move few cache lines; the sequence number waits in its slot.
  struct Item {
    int64_t time_ps;
    uint32_t slot;
    uint32_t generation;
  };
  // The front bucket (index 0), then kDigits buckets for each of the kLevels hexadecimal digits
  // of a non-negative 64-bit time: bucket (l, d) is 1 + l * kDigits + d.
  static constexpr int kDigitBits = 4;
  static constexpr int kDigits = 1 << kDigitBits;
  static constexpr int kLevels = (64 + kDigitBits - 1) / kDigitBits;
  static constexpr int kBuckets = 1 + kLevels * kDigits;
  struct Bucket {
    size_t head = 0;  // First item not yet popped (the front only; 0 elsewhere).
    std::vector<Item> items;
  };
  static int BucketOf(int64_t time_ps, int64_t last_ps);
  void File(const Item& item);
  // Makes the front's first item live, refilling the front from the lowest non-empty bucket as
  // needed. REQUIRES: !empty(). Inline for the case a pop after a peek meets: already settled.
  void SettleFront() {
    const Bucket& front = buckets_[0];
    if (front.head < front.items.size() && Live(front.items[front.head])) return;
    RefillFront();
  }
  void RefillFront();
  // Drops the cancelled items of a bucket's `items`, keeping the others' order; returns how many
  // are left. Out of line, so that RefillFront stays small enough to have File inlined (with this
  // inlined, a refill without cancellations took 9% more instructions).
  [[gnu::noinline]] size_t DropCancelled(std::vector<Item>* items);
  // Re-files every pending event around `last_ps` (an insert before a peeked front).
  void Refile(int64_t last_ps);
  bool Live(const Item& item) const { return generations_[item.slot] == item.generation; }

  static constexpr uint32_t kBlockBits = 8;
  static constexpr uint32_t kBlockSize = 1u << kBlockBits;
  EventHandler& Handler(uint32_t slot) {
    return (*handler_blocks_[slot >> kBlockBits])[slot & (kBlockSize - 1)];
  }
  uint32_t AcquireSlot();
  // Files the event whose handler is in `slot`.
  EventId Enqueue(Time time, uint32_t slot);
  // Retires an id so it no longer names a pending event; the slot is not yet reusable.
  void RetireId(uint32_t slot);
  void FreeSlot(uint32_t slot);

  std::array<Bucket, kBuckets> buckets_;
  // Bit d of digits_nonempty_[l] set when bucket (l, d) may hold items; bit l of levels_nonempty_
  // when any of level l's does.
  std::array<uint32_t, kLevels> digits_nonempty_ = {};
  uint32_t levels_nonempty_ = 0;
  int64_t last_ps_ = 0;    // The time bucket indices are relative to.
  int64_t popped_ps_ = 0;  // Time of the last event popped: no insert may be earlier.
  // Per slot: the handler, in fixed blocks so a running handler never moves, the generation that
  // names its current event (dense, as every pop checks it) and its event's sequence number.
  std::vector<std::unique_ptr<std::array<EventHandler, kBlockSize>>> handler_blocks_;
  std::vector<uint32_t> generations_;
  std::vector<uint64_t> sequences_;
  std::vector<uint32_t> free_slots_;
  uint64_t next_seq_ = 0;
  size_t live_ = 0;
  // Cancelled (and moved) events' items still stored in the buckets, exactly: RefillFront drops
  // them as it goes while they are many.
  size_t cancelled_ = 0;
};

}  // namespace podsim::sim

#endif  // PODSIM_SIM_EVENT_QUEUE_H_
