// ChipSpec: what one accelerator can compute, hold and move; and the named presets.
//
// Units are SI: FLOP/s, bytes, bytes/s, and sim::Time for latencies. Bandwidths are one-way (one
// direction of one link), which is what a flow-model resource carries; the book's "bidirectional"
// figures are twice these (reference/hardware.md, Conventions). A peak of 0 means the chip has no
// such datatype path. Every preset number cites its source in chip_spec.cc.

#ifndef PODSIM_TOPOLOGY_CHIP_SPEC_H_
#define PODSIM_TOPOLOGY_CHIP_SPEC_H_

#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"
#include "sim/time.h"

namespace podsim::topology {

enum class ChipFamily { kTpu, kGpu, kGeneric };

struct ChipSpec {
  std::string name;  // Preset name ("tpu-v5p", "h100") or a user-chosen one.
  // The preset this chip is, or was built from (a scenario's `base`), whatever its name: what
  // picks its compute calibration (workloads/compute_model.h) and a TPU's default wraparounds.
  // Empty for a chip of no preset.
  std::string preset;
  ChipFamily family = ChipFamily::kGeneric;
  // Where a preset's figures come from (chip_spec.cc cites each one); empty for other chips.
  std::string source;

  // Dense peak compute, FLOP/s (no structured sparsity). 0 = unsupported datatype.
  double bf16_flops_per_s = 0;
  double int8_flops_per_s = 0;
  double fp8_flops_per_s = 0;
  // Whether the chip's fp8 GEMMs take only the TN layout (both operands K-major), so that a
  // tensor read along either dimension needs a transposed fp8 copy: Hopper. Blackwell's take any
  // layout (Transformer Engine common/gemm/cublaslt_gemm.cu, CanonicalizeGemmInput; cuBLASLt's
  // fp8 requirement "A must be transposed and B non-transposed"; docs/sources.md).
  bool fp8_gemm_tn_only = false;
  // Whether the tensor cores take fp8 with a scale per block of 32 elements (OCP MXFP8):
  // Blackwell (Transformer Engine's MXFP8BlockScaling needs it; docs/sources.md).
  bool fp8_block_scaled = false;

  double hbm_bytes = 0;
  double hbm_bytes_per_s = 0;
  // On-chip scratch memory: TPU VMEM, or GPU shared memory summed over SMs. 0 = not published in
  // the reference (see the preset's comment).
  double vmem_bytes = 0;

  // Scale-up links: ICI ports (TPU) or NVLink links (GPU), and the one-way bandwidth of one.
  int scale_up_ports = 0;
  double scale_up_link_bytes_per_s = 0;
  // Chip <-> host bandwidth, one way (PCIe, or NVLink-C2C on Grace systems).
  double pcie_bytes_per_s = 0;
  // Scale-out bandwidth per chip, one way: the chip's share of its host's DCN NICs (TPU) or its
  // own InfiniBand NIC (GPU).
  double scale_out_bytes_per_s = 0;
  // Latency of one scale-up hop (chip to chip on a torus, chip to switch on NVLink).
  sim::Time hop_latency = sim::Time::Zero();

  // Chips sharing one host (and its NICs); the host's shape on TPU tori (x, y), 1 on the
  // other axes.
  int chips_per_host = 1;
  std::vector<int> host_shape;

  friend bool operator==(const ChipSpec&, const ChipSpec&) = default;
};

// Returns the preset with this name: tpu-v4p, tpu-v5e, tpu-v5p, tpu-v6e, tpu7x, a100, h100, h200,
// b200, gb200. Fails with NotFound ("unknown chip 'h10' (did you mean 'h100'?); known: ...").
sim::StatusOr<ChipSpec> ChipPreset(std::string_view name);

// The preset names, in the order above.
const std::vector<std::string_view>& ChipPresetNames();

}  // namespace podsim::topology

#endif  // PODSIM_TOPOLOGY_CHIP_SPEC_H_
