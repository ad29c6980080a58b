#include "sim/time.h"

#include <gtest/gtest.h>

namespace podsim::sim {
namespace {

TEST(TimeTest, UnitFactoriesAgree) {
  EXPECT_EQ(Time::Nanoseconds(1), Time::Picoseconds(1'000));
  EXPECT_EQ(Time::Microseconds(1), Time::Nanoseconds(1'000));
  EXPECT_EQ(Time::Milliseconds(1), Time::Microseconds(1'000));
  EXPECT_EQ(Time::Seconds(1), Time::Milliseconds(1'000));
  EXPECT_EQ(Time::Seconds(3).picoseconds(), 3'000'000'000'000);
}

TEST(TimeTest, FromSecondsCeilRoundsUp) {
  EXPECT_EQ(Time::FromSecondsCeil(1e-12), Time::Picoseconds(1));
  EXPECT_EQ(Time::FromSecondsCeil(1.5e-12), Time::Picoseconds(2));
  EXPECT_EQ(Time::FromSecondsCeil(0), Time::Zero());
  EXPECT_EQ(Time::FromSecondsCeil(2.0), Time::Seconds(2));
}

TEST(TimeTest, FromSecondsRoundedRoundsToNearest) {
  EXPECT_EQ(Time::FromSecondsRounded(1e-6), Time::Microseconds(1));
  EXPECT_EQ(Time::FromSecondsRounded(1.4e-12), Time::Picoseconds(1));
}

TEST(TimeTest, ArithmeticAndOrder) {
  Time a = Time::Microseconds(3);
  Time b = Time::Nanoseconds(500);
  EXPECT_EQ(a + b, Time::Nanoseconds(3'500));
  EXPECT_EQ(a - b, Time::Nanoseconds(2'500));
  EXPECT_LT(b, a);
  EXPECT_DOUBLE_EQ(a.ToSeconds(), 3e-6);
}

TEST(TimeTest, ToStringPicksAUnit) {
  EXPECT_EQ(Time::Picoseconds(12).ToString(), "12 ps");
  EXPECT_EQ(Time::Nanoseconds(1'250).ToString(), "1.25 us");
  EXPECT_EQ(Time::Seconds(2).ToString(), "2 s");
}

TEST(TimeDeathTest, OverflowAborts) {
  EXPECT_DEATH(Time::Max() + Time::Picoseconds(1), "time overflow");
  EXPECT_DEATH(Time::FromSecondsCeil(-1.0), "not representable");
  EXPECT_DEATH(Time::FromSecondsCeil(1e10), "not representable");
}

}  // namespace
}  // namespace podsim::sim
