// Small string helpers shared by the topology parsers: spelling suggestions and number parsing.

#ifndef PODSIM_TOPOLOGY_NAMES_H_
#define PODSIM_TOPOLOGY_NAMES_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/status.h"

namespace podsim::topology {

// Concatenates the pieces (appending in place; also sidesteps GCC 12's false -Wrestrict on
// chains of operator+ with literals).
std::string StrCat(std::initializer_list<std::string_view> pieces);

// Levenshtein distance between a and b (insertions, deletions and substitutions cost 1).
int EditDistance(std::string_view a, std::string_view b);

// The candidate nearest to `given` by edit distance, if it is close enough to be a plausible
// misspelling (distance <= max(2, |given| / 3)); ties go to the earlier candidate (deterministic).
std::optional<std::string> NearestName(std::string_view given,
                                       std::span<const std::string_view> candidates);

// " (did you mean 'x'?)" or "" when nothing is near; appended to NotFound messages.
std::string DidYouMean(std::string_view given, std::span<const std::string_view> candidates);

// Splits "key=value,key=value" into its pairs, in order. Errors name `where` and show `grammar`:
// an item without '=' or with an empty key is a ParseError ("<where>: expected key=value, got
// 'x'; form: <grammar>"), a key not in `keys` NotFound with a spelling suggestion, a key given
// twice InvalidArgument. An empty text has no pairs.
sim::StatusOr<std::vector<std::pair<std::string_view, std::string_view>>> ParseKeyValues(
    std::string_view text, std::span<const std::string_view> keys, std::string_view where,
    std::string_view grammar);

// Parses a boolean as key=value lists and scenario-like text write it: true, false, 1 or 0.
std::optional<bool> ParseBool(std::string_view text);

// Parses a whole string as a non-negative decimal integer no larger than `max`.
std::optional<int64_t> ParseCount(std::string_view text, int64_t max);

// Parses a whole string as a finite double ("4.5e10", "1e-6").
std::optional<double> ParseNumber(std::string_view text);

}  // namespace podsim::topology

#endif  // PODSIM_TOPOLOGY_NAMES_H_
