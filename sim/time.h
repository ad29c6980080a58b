// Simulated time: a signed 64-bit count of picoseconds.
//
// Integer time keeps event order exact and reproducible (no floating-point drift between runs or
// machines). 2^63 ps is about 106 days of simulated time, far beyond any step we model. Durations
// derived from rates are rounded *up* to whole picoseconds (FromSecondsCeil), so a transfer never
// completes before its bytes could have moved.
//
// The horizon. Time::Max() stands for "never": a duration too long to represent (a size over a
// rate of 1e-300 B/s, an op of 1e10 s) converts to Max(), and sums saturate there instead of
// wrapping. The engine refuses to schedule an event at Max() and reports that the simulation
// passed the horizon (Engine::passed_horizon()), which each simulation turns into an OutOfRange
// error naming what it simulated. So no input can reach an overflow check.

#ifndef PODSIM_SIM_TIME_H_
#define PODSIM_SIM_TIME_H_

#include <compare>
#include <cstdint>
#include <iosfwd>
#include <limits>
#include <string>

namespace podsim::sim {

class Time {
 public:
  constexpr Time() = default;

  static constexpr Time Zero() { return Time(0); }
  // The largest representable time; used as "never".
  static constexpr Time Max() { return Time(std::numeric_limits<int64_t>::max()); }

  static constexpr Time Picoseconds(int64_t ps) { return Time(ps); }
  static constexpr Time Nanoseconds(int64_t ns) { return Time(Scaled(ns, 1'000)); }
  static constexpr Time Microseconds(int64_t us) { return Time(Scaled(us, 1'000'000)); }
  static constexpr Time Milliseconds(int64_t ms) { return Time(Scaled(ms, 1'000'000'000)); }
  static constexpr Time Seconds(int64_t s) { return Time(Scaled(s, 1'000'000'000'000)); }

  // Rounds up to the next whole picosecond; Max() for +infinity or anything at or past 2^63 ps.
  // REQUIRES: seconds is not NaN and >= 0.
  static Time FromSecondsCeil(double seconds) {
    const double ps = __builtin_ceil(seconds * 1e12);
    // 2^63: the first double past the horizon. The out-of-line path saturates or aborts.
    if (ps >= 0 && ps < 9223372036854775808.0) return Time(static_cast<int64_t>(ps));
    return SaturatedFromPicoseconds(ps, seconds);
  }
  // Rounds to the nearest picosecond, saturating as FromSecondsCeil; for user-given constants
  // such as link latencies. REQUIRES: seconds is not NaN and >= 0.
  static Time FromSecondsRounded(double seconds);

  constexpr int64_t picoseconds() const { return ps_; }
  constexpr double ToSeconds() const { return static_cast<double>(ps_) * 1e-12; }
  constexpr double ToMicroseconds() const { return static_cast<double>(ps_) * 1e-6; }

  constexpr auto operator<=>(const Time&) const = default;

  // A sum past Max() is Max() (the horizon); a sum below the smallest time aborts (PODSIM_CHECK:
  // a wrapped time would silently reorder events). Max() minus a finite time is Max(); other
  // differences abort on overflow.
  Time operator+(Time other) const {
    int64_t sum = 0;
    if (__builtin_add_overflow(ps_, other.ps_, &sum)) return OverflowedSum(other);
    return Time(sum);
  }
  Time operator-(Time other) const {
    int64_t difference = 0;
    if (ps_ == Max().ps_ || __builtin_sub_overflow(ps_, other.ps_, &difference)) {
      return OverflowedDifference(other);
    }
    return Time(difference);
  }
  Time& operator+=(Time other) { return *this = *this + other; }
  Time& operator-=(Time other) { return *this = *this - other; }

  // A human-readable form with a unit that keeps 3-4 significant digits ("1.25 us").
  std::string ToString() const;

 private:
  constexpr explicit Time(int64_t ps) : ps_(ps) {}
  // The cold paths of the conversions and arithmetic above (time.cc).
  static Time SaturatedFromPicoseconds(double ps, double original_seconds);
  Time OverflowedSum(Time other) const;
  Time OverflowedDifference(Time other) const;
  static constexpr int64_t Scaled(int64_t value, int64_t ps_per_unit) {
    // Checked at compile time for constants; at run time an overflow aborts via a trap.
    return (value > std::numeric_limits<int64_t>::max() / ps_per_unit ||
            value < std::numeric_limits<int64_t>::min() / ps_per_unit)
               ? (__builtin_trap(), 0)
               : value * ps_per_unit;
  }

  int64_t ps_ = 0;
};

std::ostream& operator<<(std::ostream& os, Time t);

}  // namespace podsim::sim

#endif  // PODSIM_SIM_TIME_H_
