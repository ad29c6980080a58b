#include "topology/names.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

namespace podsim::topology {

std::string StrCat(std::initializer_list<std::string_view> pieces) {
  std::string text;
  for (std::string_view piece : pieces) text += piece;
  return text;
}

int EditDistance(std::string_view a, std::string_view b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> NearestName(std::string_view given,
                                       std::span<const std::string_view> candidates) {
  const int limit = std::max(2, static_cast<int>(given.size()) / 3);
  int best = limit + 1;
  std::optional<std::string> nearest;
  for (std::string_view candidate : candidates) {
    int distance = EditDistance(given, candidate);
    if (distance < best) {
      best = distance;
      nearest = std::string(candidate);
    }
  }
  return nearest;
}

std::string DidYouMean(std::string_view given, std::span<const std::string_view> candidates) {
  std::optional<std::string> nearest = NearestName(given, candidates);
  return nearest ? " (did you mean '" + *nearest + "'?)" : "";
}

std::optional<bool> ParseBool(std::string_view text) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  return std::nullopt;
}

std::optional<int64_t> ParseCount(std::string_view text, int64_t max) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0 || value > max) {
    return std::nullopt;
  }
  return value;
}

std::optional<double> ParseNumber(std::string_view text) {
  if (text.empty()) return std::nullopt;
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

sim::StatusOr<std::vector<std::pair<std::string_view, std::string_view>>> ParseKeyValues(
    std::string_view text, std::span<const std::string_view> keys, std::string_view where,
    std::string_view grammar) {
  std::vector<std::pair<std::string_view, std::string_view>> pairs;
  if (text.empty()) return pairs;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string_view item =
        text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return sim::Status::ParseError(
          StrCat({where, ": expected key=value, got '", item, "'; form: ", grammar}));
    }
    const std::string_view key = item.substr(0, eq);
    bool known = false;
    for (std::string_view k : keys) known = known || k == key;
    if (!known) {
      return sim::Status::NotFound(
          StrCat({where, ": unknown key '", key, "'", DidYouMean(key, keys), "; form: ", grammar}));
    }
    for (const auto& [seen, unused] : pairs) {
      if (seen == key) {
        return sim::Status::InvalidArgument(StrCat({where, ": key '", key, "' given twice"}));
      }
    }
    pairs.emplace_back(key, item.substr(eq + 1));
    if (comma == std::string_view::npos) return pairs;
    start = comma + 1;
  }
}

}  // namespace podsim::topology
