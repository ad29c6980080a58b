#include "sim/time.h"

#include <cmath>
#include <cstdio>
#include <ostream>

#include "sim/check.h"

namespace podsim::sim {

namespace {

// 2^63 as a double: the first value that does not fit in int64.
constexpr double kTwoTo63 = 9223372036854775808.0;

Time FromPicoseconds(double ps, double original_seconds) {
  PODSIM_CHECK(!std::isnan(ps) && ps >= 0) << "time of " << original_seconds << " s";
  if (ps >= kTwoTo63) return Time::Max();
  return Time::Picoseconds(static_cast<int64_t>(ps));
}

}  // namespace

Time Time::SaturatedFromPicoseconds(double ps, double original_seconds) {
  return FromPicoseconds(ps, original_seconds);
}

Time Time::FromSecondsRounded(double seconds) {
  return FromPicoseconds(std::nearbyint(seconds * 1e12), seconds);
}

Time Time::OverflowedSum(Time other) const {
  PODSIM_CHECK(ps_ > 0) << "time overflow: " << ps_ << " ps + " << other.ps_ << " ps";
  return Max();
}

Time Time::OverflowedDifference(Time other) const {
  if (*this == Max() && other != Max()) return Max();
  int64_t difference = 0;
  PODSIM_CHECK(!__builtin_sub_overflow(ps_, other.ps_, &difference))
      << "time overflow: " << ps_ << " ps - " << other.ps_ << " ps";
  return Time(difference);
}

std::string Time::ToString() const {
  struct Unit {
    double ps;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{1e12, "s"}, {1e9, "ms"}, {1e6, "us"}, {1e3, "ns"}};
  double magnitude = std::fabs(static_cast<double>(ps_));
  char buffer[64];
  for (const Unit& unit : kUnits) {
    if (magnitude >= unit.ps) {
      std::snprintf(buffer, sizeof buffer, "%.4g %s", static_cast<double>(ps_) / unit.ps,
                    unit.name);
      return buffer;
    }
  }
  std::snprintf(buffer, sizeof buffer, "%lld ps", static_cast<long long>(ps_));
  return buffer;
}

std::ostream& operator<<(std::ostream& os, Time t) { return os << t.ToString(); }

}  // namespace podsim::sim
