#include "cli/byte_size.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <utility>

#include "topology/names.h"

namespace podsim::cli {

namespace {

constexpr std::array<std::pair<std::string_view, double>, 9> kSuffixes = {{
    {"KiB", 1024.0},
    {"MiB", 1024.0 * 1024},
    {"GiB", 1024.0 * 1024 * 1024},
    {"TiB", 1024.0 * 1024 * 1024 * 1024},
    {"KB", 1e3},
    {"MB", 1e6},
    {"GB", 1e9},
    {"TB", 1e12},
    {"B", 1},
}};

}  // namespace

sim::StatusOr<double> ParseByteSize(std::string_view flag, std::string_view text) {
  std::string_view number = text;
  double scale = 1;
  for (const auto& [suffix, factor] : kSuffixes) {
    if (number.size() > suffix.size() && number.ends_with(suffix)) {
      number.remove_suffix(suffix.size());
      scale = factor;
      break;
    }
  }
  std::optional<double> value = topology::ParseNumber(number);
  if (!value) {
    return sim::Status::InvalidArgument(std::string(flag) +
                                        ": expected a size like 1048576, 1e9, " +
                                        "64KiB, 16GiB or 1.5GB (got '" + std::string(text) + "')");
  }
  return *value * scale;
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
