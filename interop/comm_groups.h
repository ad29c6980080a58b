// The communicator groups of a Chakra trace: a JSON object mapping each process group's name (a
// node's `pg_name`) to its ranks in order, `{"0": [0, 1, 2, 3], "tp:4": [4, 5, 6, 7]}`, as
// ASTRA-sim's --comm-group-configuration takes it; and the rank map that places a trace's ranks
// on a system's chips, a JSON array of chip numbers, one per rank.

#ifndef PODSIM_INTEROP_COMM_GROUPS_H_
#define PODSIM_INTEROP_COMM_GROUPS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/status.h"

namespace podsim::interop {

using CommGroups = std::map<std::string, std::vector<int64_t>>;

// Parses the JSON text of `path`; errors name the path and the group. Ranks must be integers
// >= 0, each at most once per group, and each group non-empty.
sim::StatusOr<CommGroups> ParseCommGroups(const std::string& text, const std::string& path);
std::string CommGroupsJson(const CommGroups& groups);

// Parses a rank map: a JSON array of distinct chip numbers >= 0.
sim::StatusOr<std::vector<int64_t>> ParseRankMap(const std::string& text, const std::string& path);

}  // namespace podsim::interop

#endif  // PODSIM_INTEROP_COMM_GROUPS_H_
