#include "cli/report_format.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>

#include "topology/names.h"

namespace podsim::cli {

std::string FormatSeconds(double seconds) {
  char text[32];
  if (seconds == 0) return "0";
  if (seconds >= 1) {
    std::snprintf(text, sizeof text, "%.3f s", seconds);
  } else if (seconds >= 1e-3) {
    std::snprintf(text, sizeof text, "%.3f ms", seconds * 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.3f us", seconds * 1e6);
  }
  return text;
}

std::string FormatPercent(double fraction) {
  char text[16];
  std::snprintf(text, sizeof text, "%.1f%%", 100 * fraction);
  return text;
}

sim::StatusOr<int64_t> ParseTokenCount(std::string_view flag, const std::string& text) {
  static const std::pair<std::string_view, double> kSuffixes[] = {
      {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}};
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
  if (value) *value *= scale;
  if (!value || *value < 1 || *value != std::floor(*value) || *value > 1e15) {
    return sim::Status::InvalidArgument(std::string(flag) +
                                        ": expected a whole number of tokens >= 1 like 4096, 4M "
                                        "or 1Mi (got '" +
                                        text + "')");
  }
  return static_cast<int64_t>(*value);
}

}  // namespace podsim::cli
