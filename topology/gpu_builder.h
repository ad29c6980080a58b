// Builds GPU systems: NVSwitch nodes (DGX A100/H100/H200/B200, GB200 NVL72) and, for more than
// one node, the rail-optimised InfiniBand fat tree of the DGX SuperPod.
//
// Node (hardware.md 1.3): every GPU has a link to every NVSwitch of its node carrying the NVLinks
// it has to that switch (parallel NVLinks to one switch are one link of their summed bandwidth):
//   a100: 12 NVLinks x 25 GB/s, 6 switches, 2 each;   h100/h200: 18 x 25 GB/s, 4 switches, 5+4+4+5;
//   b200: 18 x 50 GB/s, 2 switches, 9+9;               gb200: 72 GPUs, 18 switches, 1 each.
// Fat tree (hardware.md 1.3 "Scale-out"): one NIC per GPU (PCIe to the GPU, one InfiniBand port of
// the chip's scale_out bandwidth to its leaf); a scalable unit (SU) is 32 nodes under 8 rail
// leaves, GPU r of every node on leaf r. Switches have 64 ports:
//   * up to 4 SUs (1024 GPUs): 2 levels, 16 spines; each leaf has its 32 up-ports spread evenly
//     over the 16 spines (2 ports each), as in the reference 1024-GPU SuperPod.
//   * more: 3 levels. A pod of 4 SUs has 32 spines (a spine now gives half its ports to the core,
//     so one port to each of the 32 leaves of the pod); spine j of every pod connects to core
//     group j of ceil(pods / 2) switches, spreading its 32 up-ports evenly over them. Up to 64 pods
//     (65,536 GPUs, the radix-64 limit k^3/4).
// Parallel ports between the same two switches are one link of their summed bandwidth. The
// oversubscription factor divides the leaves' up-link bandwidth (the tier where SuperPod designs
// taper); the tiers above stay non-blocking.

#ifndef PODSIM_TOPOLOGY_GPU_BUILDER_H_
#define PODSIM_TOPOLOGY_GPU_BUILDER_H_

#include "sim/status.h"
#include "sim/time.h"
#include "topology/chip_spec.h"
#include "topology/fabric.h"

namespace podsim::topology {

// Per-hop latencies of the scale-out path, not given in hardware.md: podsim assumes 0.5 us for the
// GPU <-> NIC PCIe crossing and 0.5 us per InfiniBand hop (link plus switch), so a cross-leaf
// message pays ~3 us, the order of NCCL's inter-node small-message latency; calibrate before
// relying on latency-bound results.
inline constexpr sim::Time kGpuPcieLatency = sim::Time::Nanoseconds(500);
inline constexpr sim::Time kInfiniBandHopLatency = sim::Time::Nanoseconds(500);

// Largest GPU system podsim builds: 64 pods of 1024 GPUs.
inline constexpr int kMaxGpus = 65536;

// Builds `gpus` GPUs of `chip` (a100, h100, h200, b200 or gb200). Up to one node's worth builds a
// single (possibly partial) node; more needs whole nodes. Fails with InvalidArgument naming the
// expected form on a count that is not a whole number of nodes, an unsupported size, or an
// oversubscription factor < 1.
sim::StatusOr<Fabric> BuildGpuSystem(const ChipSpec& chip, int gpus, double oversubscription);

}  // namespace podsim::topology

#endif  // PODSIM_TOPOLOGY_GPU_BUILDER_H_
