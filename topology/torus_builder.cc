#include "topology/torus_builder.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/check.h"
#include "topology/names.h"

namespace podsim::topology {

namespace {

std::string ShapeString(const std::vector<int>& shape) {
  std::string text;
  for (size_t a = 0; a < shape.size(); ++a) {
    if (a > 0) text += "x";
    text += std::to_string(shape[a]);
  }
  return text;
}

std::string CoordName(const std::vector<int>& coord) {
  std::string text = "(";
  for (size_t a = 0; a < coord.size(); ++a) {
    if (a > 0) text += ",";
    text += std::to_string(coord[a]);
  }
  return text + ")";
}

// Largest supported system: beyond any published pod, small enough to build in well under 1 s.
constexpr int64_t kMaxChips = 1 << 20;

}  // namespace

sim::Status ValidateTorusOptions(const TorusOptions& o) {
  if (o.shape.empty() || o.shape.size() > 3) {
    return sim::Status::InvalidArgument("a torus needs 1 to 3 axes (got " +
                                        std::to_string(o.shape.size()) + ")");
  }
  if (o.wraps.size() != o.shape.size()) {
    return sim::Status::InvalidArgument("wraps name " + std::to_string(o.wraps.size()) +
                                        " axes for a " + std::to_string(o.shape.size()) +
                                        "-axis shape");
  }
  int64_t chips = 1;
  for (int extent : o.shape) {
    if (extent < 1) {
      return sim::Status::InvalidArgument("axis lengths must be >= 1 (got " + ShapeString(o.shape) +
                                          ")");
    }
    chips *= extent;
    if (chips > kMaxChips) break;
  }
  if (o.slices < 1) {
    return sim::Status::InvalidArgument("slices must be >= 1 (got " + std::to_string(o.slices) +
                                        ")");
  }
  if (chips * o.slices > kMaxChips) {
    return sim::Status::OutOfRange("a torus of more than " + std::to_string(kMaxChips) +
                                   " chips is beyond podsim's limit");
  }
  if (!(o.link_bytes_per_s > 0) || !std::isfinite(o.link_bytes_per_s)) {
    return sim::Status::InvalidArgument("link bandwidth must be > 0 bytes/s");
  }
  if (!o.host_shape.empty()) {
    if (!(o.pcie_bytes_per_s > 0)) return sim::Status::InvalidArgument("PCIe bandwidth <= 0");
    if (o.slices > 1 && !(o.host_dcn_bytes_per_s > 0)) {
      return sim::Status::InvalidArgument("DCN bandwidth must be > 0 with several slices");
    }
    for (size_t a = 0; a < o.shape.size(); ++a) {
      const int tile = a < o.host_shape.size() ? std::min(o.host_shape[a], o.shape[a]) : 1;
      if (o.shape[a] % tile != 0) {
        std::vector<int> host(o.shape.size(), 1);
        for (size_t b = 0; b < o.shape.size() && b < o.host_shape.size(); ++b) {
          host[b] = o.host_shape[b];
        }
        return sim::Status::InvalidArgument("shape " + ShapeString(o.shape) +
                                            " is not tiled by hosts of " + ShapeString(host) +
                                            " chips (axis " + std::to_string(a) + ")");
      }
    }
  }
  return sim::Status::Ok();
}

Fabric BuildTorus(const TorusOptions& o) {
  PODSIM_CHECK(ValidateTorusOptions(o).ok()) << ValidateTorusOptions(o);
  Fabric fabric;
  TorusLayout t;
  t.shape = o.shape;
  t.slices = o.slices;
  const int axes = static_cast<int>(o.shape.size());
  for (int a = 0; a < axes; ++a) t.wraps.push_back(o.wraps[a] && o.shape[a] > 2);
  const uint32_t per_slice = static_cast<uint32_t>(t.chips_per_slice());
  const uint32_t chips = per_slice * static_cast<uint32_t>(o.slices);

  std::vector<int> coord(axes, 0);
  for (uint32_t c = 0; c < chips; ++c) {
    uint32_t local = c % per_slice;
    for (int a = 0; a < axes; ++a) {
      coord[a] = static_cast<int>(local % static_cast<uint32_t>(o.shape[a]));
      local /= static_cast<uint32_t>(o.shape[a]);
    }
    std::string name = StrCat({"chip", CoordName(coord)});
    if (o.slices > 1) name = StrCat({"s", std::to_string(c / per_slice), "/", name});
    fabric.AddVertex(VertexKind::kChip, std::move(name));
  }

  // ICI links, chip-major, then axis, then +1 before -1: each link direction exactly once.
  t.neighbour_links.assign(static_cast<size_t>(chips) * axes * 2, kNoLink);
  for (uint32_t c = 0; c < chips; ++c) {
    uint32_t local = c % per_slice;
    uint32_t stride = 1;
    for (int a = 0; a < axes; ++a) {
      const int length = o.shape[a];
      const int x = static_cast<int>(local % static_cast<uint32_t>(length));
      local /= static_cast<uint32_t>(length);
      for (int d = 0; d < 2; ++d) {
        int next = d == 0 ? x + 1 : x - 1;
        if (next < 0 || next >= length) {
          if (!t.wraps[a]) continue;
          next = (next + length) % length;
        }
        const uint32_t neighbour = c + static_cast<uint32_t>(next - x) * stride;
        t.neighbour_links[(static_cast<size_t>(c) * axes + a) * 2 + d] =
            fabric.AddLink(c, neighbour, o.link_bytes_per_s, o.hop_latency, o.kind);
      }
      stride *= static_cast<uint32_t>(length);
    }
  }

  if (!o.host_shape.empty()) {
    std::vector<int> tile(axes), hosts_along(axes);
    uint32_t hosts_per_slice = 1;
    for (int a = 0; a < axes; ++a) {
      tile[a] =
          a < static_cast<int>(o.host_shape.size()) ? std::min(o.host_shape[a], o.shape[a]) : 1;
      hosts_along[a] = o.shape[a] / tile[a];
      hosts_per_slice *= static_cast<uint32_t>(hosts_along[a]);
    }
    const uint32_t host_count = hosts_per_slice * static_cast<uint32_t>(o.slices);
    for (uint32_t h = 0; h < host_count; ++h) {
      std::string name = StrCat({"host", std::to_string(h % hosts_per_slice)});
      if (o.slices > 1) name = StrCat({"s", std::to_string(h / hosts_per_slice), "/", name});
      t.hosts.push_back(fabric.AddVertex(VertexKind::kHost, std::move(name)));
    }
    t.host_of_chip.resize(chips);
    for (uint32_t c = 0; c < chips; ++c) {
      uint32_t local = c % per_slice;
      uint32_t host = 0, stride = 1;
      for (int a = 0; a < axes; ++a) {
        const int x = static_cast<int>(local % static_cast<uint32_t>(o.shape[a]));
        local /= static_cast<uint32_t>(o.shape[a]);
        host += static_cast<uint32_t>(x / tile[a]) * stride;
        stride *= static_cast<uint32_t>(hosts_along[a]);
      }
      t.host_of_chip[c] = host + (c / per_slice) * hosts_per_slice;
    }
    for (uint32_t c = 0; c < chips; ++c) {
      const VertexId host = t.hosts[t.host_of_chip[c]];
      t.chip_to_host.push_back(
          fabric.AddLink(c, host, o.pcie_bytes_per_s, kPcieLatency, LinkKind::kPcie));
      t.host_to_chip.push_back(
          fabric.AddLink(host, c, o.pcie_bytes_per_s, kPcieLatency, LinkKind::kPcie));
    }
    if (o.slices > 1) {
      t.dcn_switch = fabric.AddVertex(VertexKind::kDcnSwitch, "dcn");
      for (VertexId host : t.hosts) {
        t.host_to_dcn.push_back(fabric.AddLink(host, t.dcn_switch, o.host_dcn_bytes_per_s,
                                               kDcnLatency, LinkKind::kDcn));
        t.dcn_to_host.push_back(fabric.AddLink(t.dcn_switch, host, o.host_dcn_bytes_per_s,
                                               kDcnLatency, LinkKind::kDcn));
      }
    }
  }
  fabric.set_torus(std::move(t));
  return fabric;
}

std::vector<bool> DefaultTpuWraps(const ChipSpec& chip, const std::vector<int>& shape) {
  std::vector<bool> wraps;
  if (chip.preset == "tpu-v5e" || chip.preset == "tpu-v6e") {
    // "wraparounds along any axis of size 16 (meaning an 8x16 has a wraparound on the long
    // axis)" (hardware.md 1.1).
    for (int extent : shape) wraps.push_back(extent == 16);
    return wraps;
  }
  // v4p/v5p (and TPU7x, whose 4x4x576 pod is built the same way): the wraparounds come from the
  // optical switches that join full 4x4x4 cubes, so "any multiple of a full cube (e.g. 4x4x4 or
  // 4x4x8) will have wraparounds" while 2x2x1, 2x2x2 and 2x2x4 "have none" (hardware.md 1.1).
  // An axis therefore wraps when its length is a multiple of 4 and the slice is whole cubes.
  const bool whole_cubes =
      std::all_of(shape.begin(), shape.end(), [](int extent) { return extent % 4 == 0; });
  for (size_t a = 0; a < shape.size(); ++a) wraps.push_back(whole_cubes);
  return wraps;
}

namespace {

struct PodLimits {
  int axes;
  std::vector<int> pod;  // Largest slice, as published (hardware.md 1.1 TPU chip table).
  const char* example;
};

std::optional<PodLimits> LimitsFor(const std::string& name) {
  if (name == "tpu-v4p") return PodLimits{3, {16, 16, 16}, "4x4x8"};
  if (name == "tpu-v5p") return PodLimits{3, {16, 20, 28}, "4x4x8"};
  if (name == "tpu7x") return PodLimits{3, {4, 4, 576}, "4x4x8"};
  if (name == "tpu-v5e" || name == "tpu-v6e") return PodLimits{2, {16, 16}, "8x16"};
  return std::nullopt;
}

}  // namespace

sim::StatusOr<Fabric> BuildTpuSystem(const ChipSpec& chip, const std::vector<int>& shape,
                                     int slices, const std::optional<std::vector<bool>>& wraps) {
  std::optional<PodLimits> limits = LimitsFor(chip.name);
  if (!limits) return sim::Status::InvalidArgument(chip.name + " is not a TPU preset");
  const std::string what = chip.name + ":" + ShapeString(shape);
  if (static_cast<int>(shape.size()) != limits->axes) {
    return sim::Status::InvalidArgument(
        what + ": a " + chip.name + " slice needs " + std::to_string(limits->axes) + " axes like " +
        limits->example + " (got " + std::to_string(shape.size()) + ")");
  }
  for (int extent : shape) {
    if (extent < 1) {
      return sim::Status::InvalidArgument(what + ": axis lengths must be >= 1");
    }
  }
  // A slice must fit in a pod in some orientation: compare the sorted extents.
  std::vector<int> sorted = shape, pod = limits->pod;
  std::sort(sorted.begin(), sorted.end());
  std::sort(pod.begin(), pod.end());
  for (size_t a = 0; a < sorted.size(); ++a) {
    if (sorted[a] > pod[a]) {
      return sim::Status::InvalidArgument(what + ": larger than a " + chip.name + " pod (" +
                                          ShapeString(limits->pod) + ")");
    }
  }
  TorusOptions o;
  o.shape = shape;
  o.wraps = wraps ? *wraps : DefaultTpuWraps(chip, shape);
  o.slices = slices;
  o.link_bytes_per_s = chip.scale_up_link_bytes_per_s;
  o.hop_latency = chip.hop_latency;
  o.kind = LinkKind::kIci;
  o.host_shape = chip.host_shape;
  o.pcie_bytes_per_s = chip.pcie_bytes_per_s;
  // A host's DCN bandwidth is its chips' per-chip share times the chips it holds (hardware.md
  // 1.1: "6.25e9 bytes / second per TPU" via "1-2 NICs on each host").
  int host_chips = 1;
  for (size_t a = 0; a < shape.size() && a < chip.host_shape.size(); ++a) {
    host_chips *= std::min(chip.host_shape[a], shape[a]);
  }
  o.host_dcn_bytes_per_s = chip.scale_out_bytes_per_s * host_chips;
  sim::Status valid = ValidateTorusOptions(o);
  if (!valid.ok()) return valid.WithContext(what);
  return BuildTorus(o);
}

}  // namespace podsim::topology
