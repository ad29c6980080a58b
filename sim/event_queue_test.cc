#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <string>

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
  queue.Insert(Time::Nanoseconds(2), [] {});
  queue.Insert(Time::Nanoseconds(1), [] {});
  EXPECT_EQ(queue.next_sequence(), 2u);
  EXPECT_EQ(queue.PopNext().sequence, 1u);
  EXPECT_EQ(queue.PopNext().sequence, 0u);
}

TEST(EventQueueTest, DefaultIdNamesNoEvent) {
  EventQueue queue;
  EXPECT_FALSE(queue.IsPending(EventId{}));
  EXPECT_FALSE(queue.Cancel(EventId{}));
}

}  // namespace
}  // namespace podsim::sim
