#include "sim/time.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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

// issue 16 D2: times past the horizon saturate at Max() ("never") for the engine to refuse.
TEST(TimeTest, UnrepresentableTimesSaturateAtTheHorizon) {
  EXPECT_EQ(Time::FromSecondsCeil(1e10), Time::Max());
  EXPECT_EQ(Time::FromSecondsCeil(std::numeric_limits<double>::infinity()), Time::Max());
  EXPECT_EQ(Time::FromSecondsRounded(1e300), Time::Max());
  EXPECT_LT(Time::FromSecondsCeil(9.2e6), Time::Max());  // 106 days fit.
  EXPECT_EQ(Time::Max() + Time::Picoseconds(1), Time::Max());
  EXPECT_EQ(Time::Seconds(9'000'000) + Time::Seconds(9'000'000), Time::Max());
  EXPECT_EQ(Time::Max() - Time::Seconds(1), Time::Max());
  EXPECT_EQ(Time::Seconds(3) - Time::Seconds(1), Time::Seconds(2));
}

TEST(TimeDeathTest, NegativeOrNanSecondsAndNegativeOverflowAbort) {
  EXPECT_DEATH(Time::FromSecondsCeil(-1.0), "time of -1 s");
  EXPECT_DEATH(Time::FromSecondsCeil(std::nan("")), "time of");
  EXPECT_DEATH(Time::Picoseconds(std::numeric_limits<int64_t>::min()) + Time::Picoseconds(-1),
               "time overflow");
  EXPECT_DEATH(Time::Zero() - Time::Max() - Time::Seconds(1), "time overflow");
}

}  // namespace
}  // namespace podsim::sim
