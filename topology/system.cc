#include "topology/system.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "topology/generic_builder.h"
#include "topology/gpu_builder.h"
#include "topology/names.h"
#include "topology/torus_builder.h"

namespace podsim::topology {

namespace {

constexpr const char* kExpected =
    "expected NAME:SIZE[,key=value]..., like tpu-v5p:16x20x28, h100:1024 or "
    "ring:8,bw=1e11,lat=1e-6";

// Defaults of the generic fabrics: one TPU v4p ICI link, 4.5e10 B/s one way with ~1 us per hop
// (hardware.md 1.1).
constexpr double kDefaultGenericBw = 4.5e10;
constexpr double kDefaultGenericLatency = 1e-6;
constexpr int64_t kMaxAxis = 1 << 20;

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

// A whole number however large: told apart from other text to name the limit it passes.
bool AllDigits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

sim::StatusOr<std::vector<int>> ParseShape(std::string_view text, int max_axes,
                                           std::string_view example) {
  std::vector<int> shape;
  for (std::string_view part : Split(text, 'x')) {
    std::optional<int64_t> extent = ParseCount(part, kMaxAxis);
    if (!extent && AllDigits(part)) {
      return sim::Status::OutOfRange(
          StrCat({"bad shape '", text, "': axis length ", std::string(part),
                  " is over podsim's limit of ", std::to_string(kMaxAxis)}));
    }
    if (!extent || *extent < 1) {
      return sim::Status::ParseError(StrCat({"bad shape '", text, "': expected axis lengths >= 1 ",
                                             "joined by 'x', like ", example}));
    }
    shape.push_back(static_cast<int>(*extent));
  }
  if (static_cast<int>(shape.size()) > max_axes) {
    return sim::Status::InvalidArgument(StrCat(
        {"bad shape '", text, "': at most ", std::to_string(max_axes), " axes, like ", example}));
  }
  return shape;
}

sim::StatusOr<int> ParseSize(std::string_view text, std::string_view what) {
  std::optional<int64_t> count = ParseCount(text, kMaxAxis);
  if (!count && AllDigits(text)) {
    return sim::Status::OutOfRange(
        StrCat({"bad ", what, " count '", text, "': over podsim's limit of ",
                std::to_string(kMaxAxis), " chips"}));
  }
  if (!count || *count < 1) {
    return sim::Status::ParseError(
        StrCat({"bad ", what, " count '", text, "': expected a whole number >= 1"}));
  }
  return static_cast<int>(*count);
}

// wrap=none|all|<letters of the axes that wrap>, e.g. wrap=xz.
sim::StatusOr<std::vector<bool>> ParseWrap(std::string_view text, size_t axes) {
  if (text == "none") return std::vector<bool>(axes, false);
  if (text == "all") return std::vector<bool>(axes, true);
  std::vector<bool> wraps(axes, false);
  const std::string_view letters = std::string_view("xyz").substr(0, axes);
  for (char c : text) {
    size_t axis = letters.find(c);
    if (axis == std::string_view::npos || wraps[axis]) {
      return sim::Status::InvalidArgument(
          StrCat({"bad wrap '", text,
                  "': expected none, all or the axes that wrap, each once, from '", letters, "'"}));
    }
    wraps[axis] = true;
  }
  return wraps;
}

sim::StatusOr<double> NumberOption(const std::map<std::string, std::string>& options,
                                   const std::string& key, double fallback, std::string_view unit) {
  auto it = options.find(key);
  if (it == options.end()) return fallback;
  std::optional<double> value = ParseNumber(it->second);
  if (!value || *value < 0) {
    return sim::Status::InvalidArgument(
        StrCat({key, " must be a number of ", unit, " >= 0 (got '", it->second, "')"}));
  }
  return *value;
}

// The range of nic=, hbm= and hbm_bw=: far below and above any part (1 MB to 1 PB, 1 MB/s to
// 1 PB/s), so that no figure makes a step or its memory unrepresentable.
constexpr double kMinPartFigure = 1e6;
constexpr double kMaxPartFigure = 1e15;

sim::StatusOr<System> Build(std::string_view name, std::string_view size,
                            const std::map<std::string, std::string>& options) {
  System system;
  const std::string family(name);
  if (family == "ring" || family == "torus" || family == "switch") {
    PODSIM_ASSIGN_OR_RETURN(double bw, NumberOption(options, "bw", kDefaultGenericBw, "bytes/s"));
    PODSIM_ASSIGN_OR_RETURN(double lat,
                            NumberOption(options, "lat", kDefaultGenericLatency, "seconds"));
    if (lat > 1) {
      return sim::Status::InvalidArgument(
          StrCat({"lat is seconds per hop and must be <= 1 (got '", options.at("lat"), "')"}));
    }
    GenericLinkOptions link{bw, sim::Time::FromSecondsRounded(lat)};
    system.chip.name = "generic";
    system.chip.family = ChipFamily::kGeneric;
    system.chip.scale_up_link_bytes_per_s = bw;
    system.chip.hop_latency = link.latency;
    sim::StatusOr<Fabric> fabric = sim::Status::InvalidArgument("unreachable");
    if (family == "torus") {
      PODSIM_ASSIGN_OR_RETURN(std::vector<int> shape, ParseShape(size, 3, "4x4 or 4x4x8"));
      std::vector<bool> wraps(shape.size(), true);
      if (options.count("wrap")) {
        PODSIM_ASSIGN_OR_RETURN(wraps, ParseWrap(options.at("wrap"), shape.size()));
      }
      system.kind = SystemKind::kTorus;
      system.chip.scale_up_ports = static_cast<int>(2 * shape.size());
      fabric = BuildGenericTorus(shape, wraps, link);
    } else {
      PODSIM_ASSIGN_OR_RETURN(int chips, ParseSize(size, "chip"));
      if (family == "ring") {
        system.kind = SystemKind::kRing;
        system.chip.scale_up_ports = 2;
        fabric = BuildRing(chips, link);
      } else {
        system.kind = SystemKind::kSwitch;
        system.chip.scale_up_ports = 1;
        fabric = BuildSwitch(chips, link);
      }
    }
    if (!fabric.ok()) return fabric.status();
    system.fabric = std::move(fabric).value();
    return system;
  }

  PODSIM_ASSIGN_OR_RETURN(system.chip, ChipPreset(family));
  if (system.chip.family == ChipFamily::kTpu) {
    system.kind = SystemKind::kTpu;
    PODSIM_ASSIGN_OR_RETURN(std::vector<int> shape, ParseShape(size, 3, "16x20x28 or 8x16"));
    int slices = 1;
    if (options.count("slices")) {
      std::optional<int64_t> count = ParseCount(options.at("slices"), 4096);
      if (!count || *count < 1) {
        return sim::Status::InvalidArgument(StrCat(
            {"slices must be a whole number from 1 to 4096 (got '", options.at("slices"), "')"}));
      }
      slices = static_cast<int>(*count);
    }
    std::optional<std::vector<bool>> wraps;
    if (options.count("wrap")) {
      PODSIM_ASSIGN_OR_RETURN(wraps, ParseWrap(options.at("wrap"), shape.size()));
    }
    PODSIM_ASSIGN_OR_RETURN(system.fabric, BuildTpuSystem(system.chip, shape, slices, wraps));
    return system;
  }
  system.kind = SystemKind::kGpu;
  PODSIM_ASSIGN_OR_RETURN(int gpus, ParseSize(size, "GPU"));
  double oversub = 1.0;  // Spine to leaf bandwidth, 1: none (gpu_builder.h).
  if (auto it = options.find("oversub"); it != options.end()) {
    const std::optional<double> value = ParseNumber(it->second);
    if (!value || !(*value >= 1)) {
      return sim::Status::InvalidArgument(
          StrCat({"oversub must be a ratio >= 1 (got '", it->second, "')"}));
    }
    oversub = *value;
  }
  // Parts that differ from the preset's DGX/HGX design: nic= a cluster's other NICs (BLOOM's 4 x
  // 100 Gb/s Omni-Path per 8 A100s: nic=6.25e9, each GPU's share of its node's scale-out); hbm=
  // and hbm_bw= another memory (torchtitan's Grand Teton H100s: 96 GB of HBM2e at 2.4 TB/s).
  for (const auto& [key, unit, field] :
       {std::tuple{"nic", "bytes/s", &ChipSpec::scale_out_bytes_per_s},
        std::tuple{"hbm", "bytes", &ChipSpec::hbm_bytes},
        std::tuple{"hbm_bw", "bytes/s", &ChipSpec::hbm_bytes_per_s}}) {
    if (!options.count(key)) continue;
    const std::optional<double> value = ParseNumber(options.at(key));
    if (!value || !(*value >= kMinPartFigure && *value <= kMaxPartFigure)) {
      return sim::Status::InvalidArgument(StrCat(
          {key, " must be a number of ", unit, " from 1e6 to 1e15 (got '", options.at(key), "')"}));
    }
    system.chip.*field = *value;
  }
  PODSIM_ASSIGN_OR_RETURN(system.fabric, BuildGpuSystem(system.chip, gpus, oversub));
  return system;
}

std::vector<std::string_view> AllowedKeys(std::string_view family, bool tpu) {
  if (family == "ring" || family == "switch") return {"bw", "lat"};
  if (family == "torus") return {"bw", "lat", "wrap"};
  if (tpu) return {"slices", "wrap"};
  return {"oversub", "nic", "hbm", "hbm_bw"};
}

}  // namespace

sim::StatusOr<System> ResizedSystem(const System& system, std::string_view size) {
  const std::string_view text = system.name;
  const size_t colon = text.find(':');
  const size_t comma = text.find(',', colon);
  return ParseSystem(StrCat({text.substr(0, colon + 1), size,
                             comma == std::string_view::npos ? "" : text.substr(comma)}));
}

sim::StatusOr<System> ParseSystem(std::string_view text) {
  const std::string quoted = StrCat({"system '", text, "'"});
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    return sim::Status::ParseError(StrCat({quoted, ": ", kExpected}));
  }
  const std::string_view name = text.substr(0, colon);
  std::vector<std::string_view> parts = Split(text.substr(colon + 1), ',');

  std::vector<std::string_view> families(ChipPresetNames().begin(), ChipPresetNames().end());
  families.insert(families.end(), {"ring", "torus", "switch"});
  if (std::find(families.begin(), families.end(), name) == families.end()) {
    std::string known;
    for (std::string_view f : families) known += StrCat({known.empty() ? "" : ", ", f});
    return sim::Status::NotFound(StrCat(
        {quoted, ": unknown system '", name, "'", DidYouMean(name, families), "; known: ", known}));
  }
  const bool tpu = name.starts_with("tpu");
  std::vector<std::string_view> allowed = AllowedKeys(name, tpu);
  std::map<std::string, std::string> options;
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == parts[i].size()) {
      return sim::Status::ParseError(
          StrCat({quoted, ": option '", parts[i], "' should be key=value; ", kExpected}));
    }
    const std::string key(parts[i].substr(0, eq));
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string list;
      for (std::string_view k : allowed) list += StrCat({list.empty() ? "" : ", ", k});
      return sim::Status::InvalidArgument(StrCat({quoted, ": unknown option '", key, "' for ", name,
                                                  DidYouMean(key, allowed), "; allowed: ", list}));
    }
    if (!options.emplace(key, std::string(parts[i].substr(eq + 1))).second) {
      return sim::Status::InvalidArgument(StrCat({quoted, ": option '", key, "' given twice"}));
    }
  }
  sim::StatusOr<System> system = Build(name, parts[0], options);
  if (!system.ok()) {
    // Builder messages that already start with "name:size" keep it; others get the input quoted.
    const std::string& message = system.status().message();
    if (message.starts_with(StrCat({name, ":"}))) return system.status();
    return system.status().WithContext(quoted);
  }
  system->name = std::string(text);
  return system;
}

std::span<const SystemForm> SystemForms() {
  static constexpr SystemForm kForms[] = {
      {"TPU", "tpu-v4p|tpu-v5p|tpu7x:XxYxZ",
       "slices=K (K slices joined over DCN), wrap=none|all|<axes> (override the wraparound)",
       "tpu-v5p:16x20x28"},
      {"TPU", "tpu-v5e|tpu-v6e:XxY", "slices=K, wrap=none|all|<axes>", "tpu-v5e:16x16,slices=2"},
      {"GPU", "a100|h100|h200|b200:N",
       "oversub=F (fat-tree leaf oversubscription, >= 1), nic=bytes/s (each GPU's scale-out "
       "bandwidth per direction; default the preset's NIC), hbm=bytes and hbm_bw=bytes/s (each "
       "GPU's memory and its bandwidth; default the preset's); N <= 8 is one NVSwitch node, else "
       "whole nodes on an InfiniBand fat tree",
       "h100:1024"},
      {"GPU", "gb200:72", "none (one NVL72 NVSwitch domain of 72 GPUs)", "gb200:72"},
      {"generic", "ring:N",
       "bw=bytes/s per link direction (default 4.5e10), lat=seconds per hop (default 1e-6)",
       "ring:1024,bw=1e11,lat=5e-7"},
      {"generic", "torus:AxB[xC]", "bw=, lat=, wrap=none|all|<axes>", "torus:8x8,wrap=none"},
      {"generic", "switch:N", "bw=, lat= (N chips on one switch)", "switch:16"},
  };
  return kForms;
}

}  // namespace podsim::topology
