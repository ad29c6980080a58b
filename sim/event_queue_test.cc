#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace podsim::sim {
namespace {

TEST(EventQueueTest, PopsInTimeOrder) {
  EventQueue queue;
  std::string order;
  queue.Insert(Time::Nanoseconds(3), [&] { order += 'c'; });
  queue.Insert(Time::Nanoseconds(1), [&] { order += 'a'; });
  queue.Insert(Time::Nanoseconds(2), [&] { order += 'b'; });
  while (!queue.empty()) queue.Run(queue.PopNext());
  EXPECT_EQ(order, "abc");
}

TEST(EventQueueTest, SameTimeEventsRunInInsertionOrder) {
  EventQueue queue;
  std::string order;
  for (char c = 'a'; c <= 'j'; ++c) {
    queue.Insert(Time::Nanoseconds(5), [&order, c] { order += c; });
  }
  while (!queue.empty()) queue.Run(queue.PopNext());
  EXPECT_EQ(order, "abcdefghij");
}

TEST(EventQueueTest, CancelledEventsNeverRun) {
  EventQueue queue;
  std::string order;
  EventId a = queue.Insert(Time::Nanoseconds(1), [&] { order += 'a'; });
  queue.Insert(Time::Nanoseconds(2), [&] { order += 'b'; });
  EXPECT_TRUE(queue.IsPending(a));
  EXPECT_TRUE(queue.Cancel(a));
  EXPECT_FALSE(queue.IsPending(a));
  EXPECT_FALSE(queue.Cancel(a));
  EXPECT_EQ(queue.size(), 1u);
  EXPECT_EQ(queue.NextTime(), Time::Nanoseconds(2));
  while (!queue.empty()) queue.Run(queue.PopNext());
  EXPECT_EQ(order, "b");
}

TEST(EventQueueTest, ReusedSlotDoesNotReviveCancelledId) {
  EventQueue queue;
  EventId old_id = queue.Insert(Time::Nanoseconds(1), [] {});
  ASSERT_TRUE(queue.Cancel(old_id));
  EventId new_id = queue.Insert(Time::Nanoseconds(1), [] {});
  EXPECT_EQ(new_id.slot, old_id.slot);
  EXPECT_FALSE(queue.IsPending(old_id));
  EXPECT_FALSE(queue.Cancel(old_id));
  EXPECT_TRUE(queue.IsPending(new_id));
}

TEST(EventQueueTest, SequenceNumbersCountInserts) {
  EventQueue queue;
  const EventId cancelled = queue.Insert(Time::Nanoseconds(2), [] {});
  queue.Insert(Time::Nanoseconds(1), [] {});
  ASSERT_TRUE(queue.Cancel(cancelled));
  queue.Insert(Time::Nanoseconds(3), [] {});  // Takes the cancelled event's slot, 0.
  EXPECT_EQ(queue.next_sequence(), 3u);
  const EventQueue::Event first = queue.PopNext();
  EXPECT_EQ(queue.SequenceOf(first), 1u);
  queue.Run(first);
  EXPECT_EQ(queue.SequenceOf(queue.PopNext()), 2u);
}

TEST(EventQueueTest, DefaultIdNamesNoEvent) {
  EventQueue queue;
  EXPECT_FALSE(queue.IsPending(EventId{}));
  EXPECT_FALSE(queue.Cancel(EventId{}));
}

// The radix heap against a reference ordered by (time, sequence): random inserts at delays from 0
// (bursts at one instant) to 2^40 ps, cancellations, moves (Reschedule), peeks that settle the
// front on an event that is not popped and inserts earlier than it (as after Engine::RunUntil),
// pops; cancelled and moved events are dropped as buckets refill. Deterministic by seed.
TEST(EventQueueTest, MatchesAnOrderedReferenceUnderRandomUse) {
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    std::mt19937_64 rng(seed);
    EventQueue queue;
    std::map<std::pair<int64_t, uint64_t>, EventId> reference;  // (time, seq) -> id.
    std::vector<std::pair<int64_t, uint64_t>> popped;
    int64_t now = 0;
    auto delay = [&]() -> int64_t {
      switch (rng() % 4) {
        case 0:
          return 0;
        case 1:
          return static_cast<int64_t>(rng() % 16);
        case 2:
          return static_cast<int64_t>(rng() % 4096);
        default:
          return static_cast<int64_t>(rng() % (int64_t{1} << 40));
      }
    };
    for (int step = 0; step < 10000; ++step) {
      const uint64_t action = rng() % 10;
      if (action < 5 || reference.empty()) {
        const int64_t time = now + delay();
        const uint64_t seq = queue.next_sequence();
        reference[{time, seq}] = queue.Insert(Time::Picoseconds(time), [] {});
      } else if (action == 5) {
        auto it = reference.begin();
        std::advance(it, static_cast<long>(rng() % reference.size()));
        ASSERT_TRUE(queue.Cancel(it->second));
        reference.erase(it);
      } else if (action == 7) {
        // Moved: as a cancel and an insert (a new sequence number), possibly before a peek.
        auto it = reference.begin();
        std::advance(it, static_cast<long>(rng() % reference.size()));
        const int64_t time = now + delay();
        const uint64_t seq = queue.next_sequence();
        const EventId moved = queue.Reschedule(it->second, Time::Picoseconds(time));
        EXPECT_FALSE(queue.IsPending(it->second));
        reference.erase(it);
        reference[{time, seq}] = moved;
      } else if (action == 6) {
        // A peek, then maybe an insert between now and the peeked front.
        ASSERT_EQ(queue.NextTime().picoseconds(), reference.begin()->first.first)
            << "seed " << seed;
        const int64_t front = reference.begin()->first.first;
        if (front > now) {
          const int64_t time =
              now + static_cast<int64_t>(rng() % static_cast<uint64_t>(front - now));
          const uint64_t seq = queue.next_sequence();
          reference[{time, seq}] = queue.Insert(Time::Picoseconds(time), [] {});
        }
      } else {
        const EventQueue::Event event = queue.PopNext();
        ASSERT_EQ(std::make_pair(event.time.picoseconds(), queue.SequenceOf(event)),
                  reference.begin()->first)
            << "seed " << seed << ", step " << step;
        reference.erase(reference.begin());
        now = event.time.picoseconds();
        queue.Run(event);
      }
      ASSERT_EQ(queue.size(), reference.size());
    }
    while (!queue.empty()) {
      const EventQueue::Event event = queue.PopNext();
      ASSERT_EQ(std::make_pair(event.time.picoseconds(), queue.SequenceOf(event)),
                reference.begin()->first);
      reference.erase(reference.begin());
      queue.Run(event);
    }
    EXPECT_TRUE(reference.empty());
  }
}

TEST(EventQueueDeathTest, InsertBeforeTheLastPopAborts) {
  EventQueue queue;
  queue.Insert(Time::Nanoseconds(5), [] {});
  queue.Run(queue.PopNext());
  EXPECT_DEATH(queue.Insert(Time::Nanoseconds(4), [] {}), "before the last event popped");
}

}  // namespace
}  // namespace podsim::sim
