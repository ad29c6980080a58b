#include "cli/byte_size.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <utility>

#include "topology/names.h"

namespace podsim::cli {

namespace {

constexpr double kKi = 1024.0;

// Longest first, so that "KiB" is not read as "B" after a number "1Ki".
constexpr std::array<std::pair<std::string_view, double>, 17> kSuffixes = {{
    {"KiB", kKi},
    {"MiB", kKi* kKi},
    {"GiB", kKi* kKi* kKi},
    {"TiB", kKi* kKi* kKi* kKi},
    {"KB", 1e3},
    {"MB", 1e6},
    {"GB", 1e9},
    {"TB", 1e12},
    {"Ki", kKi},
    {"Mi", kKi* kKi},
    {"Gi", kKi* kKi* kKi},
    {"Ti", kKi* kKi* kKi* kKi},
    {"K", 1e3},
    {"M", 1e6},
    {"G", 1e9},
    {"T", 1e12},
    {"B", 1},
}};

}  // namespace

std::optional<double> ParseSuffixedNumber(std::string_view text, bool bytes) {
  std::string_view number = text;
  double scale = 1;
  for (const auto& [suffix, factor] : kSuffixes) {
    if (number.size() > suffix.size() && number.ends_with(suffix)) {
      if (!bytes && suffix.ends_with('B')) return std::nullopt;
      number.remove_suffix(suffix.size());
      scale = factor;
      break;
    }
  }
  std::optional<double> value = topology::ParseNumber(number);
  if (!value) return std::nullopt;
  return *value * scale;
}

sim::StatusOr<double> ParseByteSize(std::string_view flag, std::string_view text) {
  std::optional<double> value = ParseSuffixedNumber(text, /*bytes=*/true);
  if (!value) {
    return sim::Status::InvalidArgument(std::string(flag) +
                                        ": expected a size like 1048576, 1e9, " +
                                        "64KiB, 16GiB or 1.5GB (got '" + std::string(text) + "')");
  }
  return *value;
}

std::string FormatByteSize(double bytes) {
  static constexpr std::array<std::pair<const char*, double>, 4> kUnits = {{
      {"TiB", 1024.0 * 1024 * 1024 * 1024},
      {"GiB", 1024.0 * 1024 * 1024},
      {"MiB", 1024.0 * 1024},
      {"KiB", 1024.0},
  }};
  char buffer[64];
  for (const auto& [name, factor] : kUnits) {
    if (bytes >= factor) {
      std::snprintf(buffer, sizeof buffer, "%.4g %s", bytes / factor, name);
      return buffer;
    }
  }
  std::snprintf(buffer, sizeof buffer, "%.4g B", bytes);
  return buffer;
}

}  // namespace podsim::cli
