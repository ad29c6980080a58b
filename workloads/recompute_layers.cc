#include "workloads/recompute_layers.h"

#include <charconv>
#include <utility>

namespace podsim::workloads {

bool RecomputeLayers::Recomputes(int chip_index, int chunk_index) const {
  switch (kind) {
    case Kind::kAll:
      return true;
    case Kind::kEvery:
      return (chip_index + 1) % n == 0;
    case Kind::kFirst:
      return chunk_index < n;
  }
  return true;
}

sim::StatusOr<RecomputeLayers> RecomputeLayersNamed(std::string_view text) {
  if (text == "all") return RecomputeLayers{};
  std::string quoted = "'";
  quoted.append(text);
  quoted += "'";
  for (const auto& [prefix, kind] :
       {std::pair{std::string_view("every:"), RecomputeLayers::Kind::kEvery},
        std::pair{std::string_view("first:"), RecomputeLayers::Kind::kFirst}}) {
    if (!text.starts_with(prefix)) continue;
    const std::string_view digits = text.substr(prefix.size());
    int n = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (error == std::errc() && end == digits.data() + digits.size() && !digits.empty() && n >= 1) {
      return RecomputeLayers{kind, n};
    }
    std::string message = quoted;
    message += ": ";
    message.append(prefix);
    message += " needs a whole number of layers from 1 to 2147483647";
    return sim::Status::InvalidArgument(message);
  }
  return sim::Status::InvalidArgument(
      quoted +
      " is not a layer selection: all, every:N (every N-th layer of a chip, torchtitan's "
      "selective layer checkpointing) or first:N (the first N layers of each model chunk, "
      "Megatron-LM's block method)");
}

std::string RecomputeLayersName(const RecomputeLayers& layers) {
  switch (layers.kind) {
    case RecomputeLayers::Kind::kAll:
      return "all";
    case RecomputeLayers::Kind::kEvery:
      return "every:" + std::to_string(layers.n);
    case RecomputeLayers::Kind::kFirst:
      return "first:" + std::to_string(layers.n);
  }
  return "all";
}

}  // namespace podsim::workloads
