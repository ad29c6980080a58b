// FabricEfficiency: what real collective software (NCCL, XLA) gets out of a fabric, as opposed to
// its line rate, calibrated once per chip family from measured collectives.
//
// The pure fabric (the default, `CollectiveRequest::calibrated == false`) moves bytes at link line
// rate and pays only the per-hop latencies of the links; the idle-fabric closed forms of
// reference/formulas.md are checked in that mode. The calibrated model changes the simulated
// system, never the result: link capacities are scaled per link kind (protocol overhead), switches
// doing in-network reduction get a reduction-engine resource of limited throughput, every message
// pays a software overhead and every collective a launch latency. Times still come out of the
// flows.
//
// Calibration (reference/measured.md V9, reference/hardware.md 1.3, reference/formulas.md 4.3);
// one set of numbers per chip family, never tuned per row:
//   GPU (NVLink, InfiniBand, PCIe links):
//     * NVLink bandwidth x 0.822 = 370/450: "NCCL protocol overhead ~20% -> ~370 GB/s effective
//       busbw" on H100 NVLink4 450 GB/s/dir (sjeaugey, nccl-tests #212; hardware.md "Empirical
//       NCCL behaviour (8xH100)": "close to 370GB/s"); h100, h200 and GPUs without a figure of
//       their own. Per generation, from the large-message 8-GPU all-reduce busbw of NVIDIA's
//       GTC25 S72583 slide (calibration.md G5.2: A100 232, H100 370, B200 700 GB/s): a100 x 0.773
//       = 232/300 (NVLink3 300 GB/s/dir), b200 and gb200 x 0.778 = 700/900 (NVLink5).
//     * InfiniBand bandwidth x 0.94 = 47/50: "NDR 400 Gb/s IB -> 46-48 GB/s per NIC" (AddyLaddy,
//       nccl-tests #290), midpoint.
//     * NVSwitch reduction engine at 0.6095 of the NVLink bandwidth attached to the switch, so an
//       8-GPU NVLS all-reduce reaches busbw 480 GB/s instead of the theoretical 2*7/8*450 =
//       787.5 GB/s: "With NVLink SHARP (NVLS) peak busbw ~480 GB/s" (nccl-tests #212; GTC S62129;
//       hardware.md SHARP: "about 480GB/s effective", "+30% not +75%"); h100 and h200. b200 and
//       gb200 at 0.540 of theirs, so an 8-GPU NVLS all-reduce reaches 850 GB/s of the theoretical
//       2*7/8*900 = 1575 GB/s: GTC25 S72583's 8-GPU "B200 SHARP 850" (calibration.md
//       G5.2).
//     * Per-message overhead 0.6 us: NCCL's NVLink hwLat for Ring/Tree with the LL protocol
//       (src/graph/tuning.cc, quoted in nccl #1334); paid per step on top of the fabric's own hop
//       latencies (0.5 us per NVLink hop in topology/chip_spec.cc), so a step through an
//       NVSwitch costs 1.6 us, between NCCL's LL (0.6) and LL128 (1.9) NVLink step costs.
//     * Launch latency 30 us per collective: the measured 1 MiB DGX-H100 all-reduce times (vidur
//       all_reduce.csv, measured.md V9: 43, 41, 34 us on 2, 4, 8 GPUs, mean 39.3 us) minus what
//       the model above simulates for them without a launch latency (8.9 us, NVLS), rounded; it
//       is NCCL's baseLat (6.6-14 us) plus PyTorch's launch cost.
//   TPU (ICI, DCN links):
//     * ICI bandwidth x 0.95: "v5e AllGather ~95% of peak one-way link BW at >= ~10MB"
//       (formulas.md 4.3; hardware.md 1.3 "reaches ~95% of 4.5e10").
//     * Launch latency 2.7 us: book case S5 (formulas.md 4.3), a 32 kB-shard v5e AllGather over
//       3 hops measured at ~8 us, minus the 5.3 us the calibrated fabric simulates for it (3 hops
//       of 1 us plus 3 shards of 32 kB at 95% of 4.5e10 B/s).
//   Generic fabrics (ring:, torus:, switch:): no calibration; the model is the pure fabric.
//
// Validation (not calibration) rows are in efficiency_model_test.cc.

#ifndef PODSIM_COLLECTIVES_EFFICIENCY_MODEL_H_
#define PODSIM_COLLECTIVES_EFFICIENCY_MODEL_H_

#include <array>
#include <string>

#include "sim/time.h"
#include "topology/fabric.h"

namespace podsim::collectives {

struct FabricEfficiency {
  // Fraction of line rate each link kind delivers, indexed by topology::LinkKind; in (0, 1].
  std::array<double, 6> link_bandwidth_factor = {1, 1, 1, 1, 1, 1};
  // Throughput of a switch's reduction engine (NVLS, SHARP) as a fraction of the bandwidth of the
  // links into the switch; 0 means unlimited (no engine resource).
  double in_switch_reduction_factor = 0;
  // Software cost of one message, paid before its bytes move (adds to
  // CollectiveRequest::per_message_overhead).
  sim::Time per_message_overhead = sim::Time::Zero();
  // Paid once before a collective's first transfer (kernel launch, NCCL baseLat).
  sim::Time launch_latency = sim::Time::Zero();
  // Which family's calibration this is: "gpu", "tpu" or "none".
  std::string family = "none";

  double LinkFactor(topology::LinkKind kind) const {
    return link_bandwidth_factor[static_cast<size_t>(kind)];
  }
  bool operator==(const FabricEfficiency&) const = default;
};

// The pure fabric: line rate, no overheads.
FabricEfficiency PureFabric();

// What a collective pays before its first transfer: the launch latency, or nothing for a later
// chunk of an operation already launched (CollectiveRequest::launched).
inline sim::Time LaunchLatency(const FabricEfficiency& efficiency, bool launched) {
  return launched ? sim::Time::Zero() : efficiency.launch_latency;
}

// The calibrated model for the fabric's chip family (the header comment gives the sources):
// GPU when the fabric has a GpuLayout, TPU when it has ICI links, the pure fabric otherwise.
FabricEfficiency CalibratedEfficiency(const topology::Fabric& fabric);

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_EFFICIENCY_MODEL_H_
