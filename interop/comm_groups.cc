#include "interop/comm_groups.h"

#include <nlohmann/json.hpp>
#include <set>

namespace podsim::interop {

namespace {

// A rank or chip number: a JSON integer >= 0 (and below 2^31, as Chakra's int32 ranks).
bool IsRank(const nlohmann::json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>() < (uint64_t{1} << 31);
  return value.is_number_integer() && value.get<int64_t>() >= 0 &&
         value.get<int64_t>() < (int64_t{1} << 31);
}

sim::StatusOr<nlohmann::json> Parse(const std::string& text, const std::string& path) {
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return sim::Status::ParseError(path + ": not valid JSON");
  return json;
}

}  // namespace

sim::StatusOr<CommGroups> ParseCommGroups(const std::string& text, const std::string& path) {
  PODSIM_ASSIGN_OR_RETURN(nlohmann::json json, Parse(text, path));
  if (!json.is_object()) {
    return sim::Status::InvalidArgument(
        path + ": comm groups are a JSON object of process group name -> [ranks]");
  }
  CommGroups groups;
  for (const auto& [name, ranks] : json.items()) {
    const std::string at = path + ": group \"" + name + "\"";
    if (!ranks.is_array() || ranks.empty()) {
      return sim::Status::InvalidArgument(at + ": not a non-empty array of ranks");
    }
    std::set<int64_t> seen;
    std::vector<int64_t>& out = groups[name];
    for (const nlohmann::json& rank : ranks) {
      if (!IsRank(rank)) {
        return sim::Status::InvalidArgument(at + ": " + rank.dump() +
                                            " is not a rank (an integer >= 0)");
      }
      const int64_t r = rank.get<int64_t>();
      if (!seen.insert(r).second) {
        return sim::Status::InvalidArgument(at + ": rank " + std::to_string(r) + " twice");
      }
      out.push_back(r);
    }
  }
  return groups;
}

std::string CommGroupsJson(const CommGroups& groups) {
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  for (const auto& [name, ranks] : groups) json[name] = ranks;
  return json.dump() + "\n";
}

sim::StatusOr<std::vector<int64_t>> ParseRankMap(const std::string& text, const std::string& path) {
  PODSIM_ASSIGN_OR_RETURN(nlohmann::json json, Parse(text, path));
  if (!json.is_array() || json.empty()) {
    return sim::Status::InvalidArgument(
        path + ": a rank map is a non-empty JSON array, the chip of each rank in rank order");
  }
  std::vector<int64_t> chips;
  std::set<int64_t> seen;
  for (size_t rank = 0; rank < json.size(); ++rank) {
    const std::string at = path + ": rank " + std::to_string(rank);
    if (!IsRank(json[rank])) {
      return sim::Status::InvalidArgument(at + ": " + json[rank].dump() +
                                          " is not a chip number (an integer >= 0)");
    }
    const int64_t chip = json[rank].get<int64_t>();
    if (!seen.insert(chip).second) {
      return sim::Status::InvalidArgument(at + ": chip " + std::to_string(chip) +
                                          " already holds another rank");
    }
    chips.push_back(chip);
  }
  return chips;
}

}  // namespace podsim::interop
