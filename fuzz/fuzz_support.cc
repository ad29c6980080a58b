#include "fuzz/fuzz_support.h"

#include <google/protobuf/stubs/logging.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

namespace podsim::fuzz {

namespace {

// 1 to 18 decimal digits, as topology::ParseCount accepts them (it takes no sign, space or '+').
std::optional<int64_t> Digits(std::string_view text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

int64_t SaturatingProduct(int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::numeric_limits<int64_t>::max();
  return product;
}

}  // namespace

std::optional<int64_t> RequestedChips(std::string_view system) {
  const size_t colon = system.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::vector<std::string_view> parts = Split(system.substr(colon + 1), ',');
  int64_t chips = 1;
  for (std::string_view part : Split(parts[0], 'x')) {
    const std::optional<int64_t> extent = Digits(part);
    if (!extent) return std::nullopt;
    chips = SaturatingProduct(chips, *extent);
  }
  // Of the options, only slices=K multiplies the chips.
  for (size_t i = 1; i < parts.size(); ++i) {
    if (!parts[i].starts_with("slices=")) continue;
    const std::optional<int64_t> slices = Digits(parts[i].substr(7));
    if (slices) chips = SaturatingProduct(chips, *slices);
  }
  return chips;
}

bool TooBigToBuild(std::string_view system, int64_t limit) {
  const std::optional<int64_t> chips = RequestedChips(system);
  return chips && *chips > limit && *chips <= kBuilderMaxChips;
}

void QuietProtobufLogs() {
  // A null handler discards everything but FATAL, which protobuf still aborts on.
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)quiet;
}

void Fail(const char* file, int line, std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "%s:%d: fuzz check failed: %s: %s\n", file, line, std::string(what).c_str(),
               std::string(detail).c_str());
  std::abort();
}

}  // namespace podsim::fuzz
