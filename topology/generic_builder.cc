#include "topology/generic_builder.h"

#include <cmath>
#include <string>

#include "topology/torus_builder.h"

namespace podsim::topology {

namespace {

constexpr int kMaxGenericChips = 1 << 20;

sim::Status CheckLink(const GenericLinkOptions& link) {
  if (!(link.bytes_per_s > 0) || !std::isfinite(link.bytes_per_s)) {
    return sim::Status::InvalidArgument("bw must be > 0 bytes/s");
  }
  return sim::Status::Ok();
}

}  // namespace

sim::StatusOr<Fabric> BuildRing(int chips, const GenericLinkOptions& link) {
  return BuildGenericTorus({chips}, {true}, link);
}

sim::StatusOr<Fabric> BuildGenericTorus(const std::vector<int>& shape,
                                        const std::vector<bool>& wraps,
                                        const GenericLinkOptions& link) {
  PODSIM_RETURN_IF_ERROR(CheckLink(link));
  TorusOptions o;
  o.shape = shape;
  o.wraps = wraps;
  o.link_bytes_per_s = link.bytes_per_s;
  o.hop_latency = link.latency;
  o.kind = LinkKind::kGeneric;
  PODSIM_RETURN_IF_ERROR(ValidateTorusOptions(o));
  return BuildTorus(o);
}

sim::StatusOr<Fabric> BuildSwitch(int chips, const GenericLinkOptions& link) {
  PODSIM_RETURN_IF_ERROR(CheckLink(link));
  if (chips < 1 || chips > kMaxGenericChips) {
    return sim::Status::InvalidArgument("switch needs 1 to " + std::to_string(kMaxGenericChips) +
                                        " chips (got " + std::to_string(chips) + ")");
  }
  Fabric fabric;
  for (int i = 0; i < chips; ++i) fabric.AddVertex(VertexKind::kChip, "chip" + std::to_string(i));
  StarLayout star;
  star.hub = fabric.AddVertex(VertexKind::kSwitch, "switch");
  for (int i = 0; i < chips; ++i) {
    const VertexId chip = static_cast<VertexId>(i);
    star.up.push_back(
        fabric.AddLink(chip, star.hub, link.bytes_per_s, link.latency, LinkKind::kGeneric));
    star.down.push_back(
        fabric.AddLink(star.hub, chip, link.bytes_per_s, link.latency, LinkKind::kGeneric));
  }
  fabric.set_star(std::move(star));
  return fabric;
}

}  // namespace podsim::topology
