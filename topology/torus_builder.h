// Builds tori: TPU slices (with hosts, and DCN between slices) and generic ring:/torus: fabrics.

#ifndef PODSIM_TOPOLOGY_TORUS_BUILDER_H_
#define PODSIM_TOPOLOGY_TORUS_BUILDER_H_

#include <optional>
#include <vector>

#include "sim/status.h"
#include "sim/time.h"
#include "topology/chip_spec.h"
#include "topology/fabric.h"

namespace podsim::topology {

// Latencies of the host-side links, which hardware.md does not give. podsim assumes 1 us for a
// PCIe crossing (chip <-> host) and 10 us for one side of a DCN transfer (host NIC <-> the
// data-centre network), i.e. ~22 us chip to chip between slices; calibrate before relying on
// latency-bound multi-slice results.
inline constexpr sim::Time kPcieLatency = sim::Time::Microseconds(1);
inline constexpr sim::Time kDcnLatency = sim::Time::Microseconds(10);

struct TorusOptions {
  std::vector<int> shape;   // Axis lengths, each >= 1; x first.
  std::vector<bool> wraps;  // Per axis. A wrap on an axis of length <= 2 adds no link (the two
                            // chips are already neighbours) and is reported as false.
  int slices = 1;
  double link_bytes_per_s = 0;  // One way, per link.
  sim::Time hop_latency;
  LinkKind kind = LinkKind::kIci;
  // Hosts (empty host_shape: none). Each host owns a tile of host_shape chips (clipped to the
  // slice shape), with a PCIe link pair per chip and, with slices > 1, a DCN link pair carrying
  // host_dcn_bytes_per_s each way.
  std::vector<int> host_shape;
  double pcie_bytes_per_s = 0;
  double host_dcn_bytes_per_s = 0;
};

// Checks shape, wraps, slices, bandwidths and host tiling; the message names what is wrong.
sim::Status ValidateTorusOptions(const TorusOptions& options);

// Builds the fabric. REQUIRES: ValidateTorusOptions(options).ok().
Fabric BuildTorus(const TorusOptions& options);

// The wraparound links a TPU slice of this shape has (hardware.md 1.1 "Topology and wraparound
// rules"): on v4p, v5p (and TPU7x, built from the same 4x4x4 cubes) an axis wraps when its
// length is a multiple of 4 and the slice is made of whole cubes (so 2x2x4 has no wraps); v5e and
// v6e wrap only axes of length 16.
std::vector<bool> DefaultTpuWraps(const ChipSpec& chip, const std::vector<int>& shape);

// A TPU system: `slices` copies of the `shape` slice of `chip`, with hosts per the chip's host
// shape and DCN between slices. `wraps` overrides the generation's rule. Fails with
// InvalidArgument on a shape the generation cannot have (wrong number of axes, larger than a pod,
// not tiled by hosts when slices > 1).
sim::StatusOr<Fabric> BuildTpuSystem(const ChipSpec& chip, const std::vector<int>& shape,
                                     int slices, const std::optional<std::vector<bool>>& wraps);

}  // namespace podsim::topology

#endif  // PODSIM_TOPOLOGY_TORUS_BUILDER_H_
