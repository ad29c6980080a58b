#include "topology/chip_spec.h"

#include <optional>
#include <string>

#include "topology/names.h"

// Sources. "Ch2", "Ch12" etc. are chapters of "How to Scale Your Model" (Austin et al.), upstream
// text of 2026-07-13, as transcribed in docs/reference/hardware.md (section numbers below refer
// to that file). Where hardware.md lists two values, the comment names the one used and why.
// "GB" in the book is taken as 1e9 bytes.

namespace podsim::topology {

namespace {

constexpr double kGB = 1e9;
constexpr double kKB = 1e3;
constexpr double kMiB = 1024.0 * 1024.0;

// Per-hop ICI latency: "typically around 1us" (Ch2, hardware.md 1.1 "Per-hop ICI latency").
constexpr sim::Time kIciHopLatency = sim::Time::Microseconds(1);
// NVLink hop (GPU <-> NVSwitch): hardware.md gives no figure. podsim assumes 0.5 us per hop so a
// GPU -> switch -> GPU path costs ~1 us, the same order as one ICI hop; calibrate against
// nccl-tests' small-message latency before relying on latency-bound results.
constexpr sim::Time kNvLinkHopLatency = sim::Time::Nanoseconds(500);

// TPU PCIe: "typically around 1.6e10 bytes / second per TPU (3.2e10 for TPU v6e)" (hardware.md
// 1.1; the latest text, which supersedes the Feb-2025 1.5e10, see 0.1 Version drift).
constexpr double kTpuPcie = 1.6e10;
constexpr double kTpuV6ePcie = 3.2e10;

ChipSpec Tpu(std::string name, int ports, std::vector<int> host_shape) {
  ChipSpec chip;
  chip.name = std::move(name);
  chip.family = ChipFamily::kTpu;
  chip.source =
      "How to Scale Your Model Ch2 TPU and ICI tables, DCN and PCIe figures "
      "(docs/reference/hardware.md 1.1)";
  chip.scale_up_ports = ports;
  chip.hop_latency = kIciHopLatency;
  chip.pcie_bytes_per_s = kTpuPcie;
  chip.chips_per_host = 1;
  for (int extent : host_shape) chip.chips_per_host *= extent;
  chip.host_shape = std::move(host_shape);
  return chip;
}

ChipSpec TpuV4p() {
  // 3D torus, 6 neighbours; hosts are 2x2x1 (hardware.md 1.1 "Topology", "Host and tray").
  ChipSpec c = Tpu("tpu-v4p", 6, {2, 2, 1});
  c.bf16_flops_per_s = 2.75e14;          // 1.1 TPU chip table.
  c.int8_flops_per_s = 2.75e14;          // 1.1 TPU chip table (v4 has no faster int8 path).
  c.hbm_bytes = 32 * kGB;                // 1.1 table.
  c.hbm_bytes_per_s = 1.2e12;            // 1.1 table.
  c.vmem_bytes = 0;                      // Not given for v4 in hardware.md.
  c.scale_up_link_bytes_per_s = 4.5e10;  // 1.1 ICI table, one-way.
  // DCN: "6.25e9 bytes / second per TPU" (1.1, latest text; the Feb-2025 "2.5e10 per host" is the
  // same figure for a 4-chip host).
  c.scale_out_bytes_per_s = 6.25e9;
  return c;
}

ChipSpec TpuV5p() {
  ChipSpec c = Tpu("tpu-v5p", 6, {2, 2, 1});
  c.bf16_flops_per_s = 4.59e14;  // 1.1 table (Ch2 text rounds to 5e14).
  c.int8_flops_per_s = 9.18e14;  // 1.1 table.
  c.hbm_bytes = 96 * kGB;        // 1.1 table.
  c.hbm_bytes_per_s = 2.8e12;    // 1.1 table.
  c.vmem_bytes = 128 * kMiB;     // Ch12 table "TPU v5p VMEM = 128MB" (1.1 "VMEM"); read as MiB.
  // ICI 9e10 one-way per link: the ICI table and the latest text ("9e10 bytes/s per axis"); the
  // Google page's 100 GB/s (0.1 Version drift) is not used because the book's problems use 9e10.
  c.scale_up_link_bytes_per_s = 9.0e10;
  c.scale_out_bytes_per_s = 6.25e9;  // DCN per TPU, latest text (1.1).
  return c;
}

ChipSpec TpuV5e() {
  // 2D torus, 4 neighbours; hosts are 4x2 (1.1 "Topology", "Host and tray").
  ChipSpec c = Tpu("tpu-v5e", 4, {4, 2});
  c.bf16_flops_per_s = 1.97e14;  // 1.1 table.
  c.int8_flops_per_s = 3.94e14;  // 1.1 table.
  c.hbm_bytes = 16 * kGB;        // 1.1 table.
  // 8.2e11: the latest text (0.1 Version drift; the Feb-2025 text had 8.1e11).
  c.hbm_bytes_per_s = 8.2e11;
  c.vmem_bytes = 128 * kMiB;             // "128 MiB on TPU v5e" (1.1 "VMEM").
  c.scale_up_link_bytes_per_s = 4.5e10;  // 1.1 ICI table, one-way.
  c.scale_out_bytes_per_s = 3.125e9;     // DCN "3.125e9 for TPU v5e" (1.1).
  return c;
}

ChipSpec TpuV6e() {
  ChipSpec c = Tpu("tpu-v6e", 4, {4, 2});
  // 9.20e14: the Ch2 table; the MFU table's "918-920" range includes it.
  c.bf16_flops_per_s = 9.20e14;
  c.int8_flops_per_s = 1.84e15;          // 1.1 table.
  c.hbm_bytes = 32 * kGB;                // 1.1 table.
  c.hbm_bytes_per_s = 1.6e12;            // 1.1 table.
  c.vmem_bytes = 0;                      // Not given for v6e in hardware.md.
  c.scale_up_link_bytes_per_s = 9.0e10;  // 1.1 ICI table, one-way.
  c.pcie_bytes_per_s = kTpuV6ePcie;      // "3.2e10 for TPU v6e" (1.1).
  c.scale_out_bytes_per_s = 12.5e9;      // DCN "12.5e9 for TPU v6e and TPU7x" (1.1).
  return c;
}

ChipSpec Tpu7x() {
  // The text does not state TPU7x's torus dimension; its pod shape 4x4x576 implies 3D (1.1), so
  // 6 ports. Hosts are 2x2x1 (1.1 "Host and tray").
  ChipSpec c = Tpu("tpu7x", 6, {2, 2, 1});
  c.bf16_flops_per_s = 2.30e15;          // 1.1 table.
  c.int8_flops_per_s = 4.61e15;          // 1.1 table.
  c.hbm_bytes = 192 * kGB;               // 1.1 table.
  c.hbm_bytes_per_s = 7.4e12;            // 1.1 table.
  c.vmem_bytes = 0;                      // Not given for TPU7x in hardware.md.
  c.scale_up_link_bytes_per_s = 9.0e10;  // 1.1 ICI table, one-way.
  c.scale_out_bytes_per_s = 12.5e9;      // DCN (1.1).
  return c;
}

ChipSpec Gpu(std::string name, int nvlinks, double nvlink_bytes_per_s, int sms,
             double smem_per_sm) {
  ChipSpec chip;
  chip.name = std::move(name);
  chip.family = ChipFamily::kGpu;
  chip.source =
      "How to Scale Your Model Ch12 GPU, NVLink and node tables (docs/reference/hardware.md 1.2, "
      "1.3); PCIe from the PCI-SIG line rates";
  chip.scale_up_ports = nvlinks;
  chip.scale_up_link_bytes_per_s = nvlink_bytes_per_s;
  chip.vmem_bytes = sms * smem_per_sm;
  chip.hop_latency = kNvLinkHopLatency;
  chip.chips_per_host = 8;  // DGX/HGX nodes of 8 GPUs (1.3 NVLink table "Node size").
  return chip;
}

ChipSpec A100() {
  // NVLink 3.0: 12 ports of 25 GB/s each way, 300 GB/s per GPU (1.3 table). 108 SMs x 192 kB SMEM
  // (1.2 table).
  ChipSpec c = Gpu("a100", 12, 25 * kGB, 108, 192 * kKB);
  c.bf16_flops_per_s = 3.12e14;  // 312 TFLOP/s: spec value in the MFU table (1.2 rounds to 3.1e14).
  c.int8_flops_per_s = 6.24e14;  // 2x bf16; the 1.2 table's fp8/int8 column rounds to 6.2e14.
  c.fp8_flops_per_s = 0;         // Ampere has no fp8 tensor cores (1.2 lists int8 only for A100).
  c.hbm_bytes = 80 * kGB;        // 1.2 table.
  c.hbm_bytes_per_s = 2.0e12;    // 1.2 table.
  // PCIe 4.0 x16: 16 GT/s x 16 lanes x 128/130 = 31.5 GB/s each way (PCI-SIG; not in hardware.md).
  c.pcie_bytes_per_s = 31.5 * kGB;
  // DGX A100: 8 x 200 Gb/s HDR InfiniBand NICs, one per GPU = 25 GB/s (issue 3, DGX A100).
  c.scale_out_bytes_per_s = 25 * kGB;
  return c;
}

ChipSpec H100() {
  // NVLink 4.0: 18 links x 25 GB/s each way = 450 GB/s per GPU (1.3). 132 SMs x 256 kB (1.2).
  ChipSpec c = Gpu("h100", 18, 25 * kGB, 132, 256 * kKB);
  // 9.89e14: Ch1 and the MFU table (989); the 1.2 table rounds to 9.9e14. Dense, not the
  // 1.979e15 "with sparsity".
  c.bf16_flops_per_s = 9.89e14;
  c.fp8_flops_per_s = 1.979e15;  // MFU table "1979" (1.2 table rounds to 2.0e15).
  c.fp8_gemm_tn_only = true;     // chip_spec.h.
  c.int8_flops_per_s = 1.979e15;
  c.hbm_bytes = 80 * kGB;  // 1.2 table.
  // 3.35e12: the figure Ch1's problems use; the 1.2 table rounds to 3.4e12.
  c.hbm_bytes_per_s = 3.35e12;
  // PCIe 5.0 x16: 32 GT/s x 16 x 128/130 = 63 GB/s each way (PCI-SIG; not in hardware.md).
  c.pcie_bytes_per_s = 63 * kGB;
  // One 400 Gb/s CX7 NIC per GPU = 50 GB/s (1.3 "Scale-out").
  c.scale_out_bytes_per_s = 50 * kGB;
  return c;
}

ChipSpec H200() {
  ChipSpec c = H100();  // Same Hopper die, NVLink and NICs (1.2, 1.3).
  c.name = "h200";
  c.hbm_bytes = 141 * kGB;     // 1.2 table.
  c.hbm_bytes_per_s = 4.8e12;  // 1.2 table.
  return c;
}

ChipSpec B200() {
  // NVLink 5.0: 18 links x 50 GB/s each way = 900 GB/s per GPU (1.3). 148 SMs x 256 kB (1.2).
  ChipSpec c = Gpu("b200", 18, 50 * kGB, 148, 256 * kKB);
  c.bf16_flops_per_s = 2.25e15;   // Ch12 text "2250e12" (1.2; the table rounds to 2.3e15).
  c.fp8_flops_per_s = 4.5e15;     // 1.2 table.
  c.fp8_block_scaled = true;      // chip_spec.h.
  c.int8_flops_per_s = 4.5e15;    // 1.2 table (fp8/int8 column).
  c.hbm_bytes = 192 * kGB;        // 1.2 table.
  c.hbm_bytes_per_s = 8.0e12;     // 1.2 table and Ch12 text.
  c.pcie_bytes_per_s = 63 * kGB;  // PCIe 5.0 x16, as H100.
  // Node egress 400e9 over 8 GPUs = 50 GB/s per GPU (1.3 "Node Type" table).
  c.scale_out_bytes_per_s = 50 * kGB;
  return c;
}

ChipSpec GB200() {
  ChipSpec c = B200();  // "A GB200 is 2 B200 + 1 Grace CPU" (1.3); per-GPU figures as B200.
  c.name = "gb200";
  // "NVLink C2C makes CPU<->GPU bandwidth equal to GPU<->GPU bandwidth" (1.3): 900 GB/s each way.
  c.pcie_bytes_per_s = 900 * kGB;
  // NVL72 node egress 3.6e12 over 72 GPUs = 50 GB/s per GPU (1.3 "Node Type" table).
  c.scale_out_bytes_per_s = 50 * kGB;
  c.chips_per_host = 4;  // A compute tray holds 2 GB200 = 4 GPUs (2 B200 per GB200, 1.3).
  return c;
}

}  // namespace

const std::vector<std::string_view>& ChipPresetNames() {
  static const std::vector<std::string_view> kNames = {
      "tpu-v4p", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu7x", "a100", "h100", "h200", "b200", "gb200"};
  return kNames;
}

namespace {

// The preset named `name`, without its `preset` field; none for an unknown name.
std::optional<ChipSpec> PresetNamed(std::string_view name) {
  if (name == "tpu-v4p") return TpuV4p();
  if (name == "tpu-v5e") return TpuV5e();
  if (name == "tpu-v5p") return TpuV5p();
  if (name == "tpu-v6e") return TpuV6e();
  if (name == "tpu7x") return Tpu7x();
  if (name == "a100") return A100();
  if (name == "h100") return H100();
  if (name == "h200") return H200();
  if (name == "b200") return B200();
  if (name == "gb200") return GB200();
  return std::nullopt;
}

}  // namespace

sim::StatusOr<ChipSpec> ChipPreset(std::string_view name) {
  std::optional<ChipSpec> chip = PresetNamed(name);
  if (chip) {
    chip->preset = name;
    return *std::move(chip);
  }
  std::string known;
  for (std::string_view n : ChipPresetNames()) {
    if (!known.empty()) known += ", ";
    known += n;
  }
  return sim::Status::NotFound("unknown chip '" + std::string(name) + "'" +
                               DidYouMean(name, ChipPresetNames()) + "; known: " + known);
}

}  // namespace podsim::topology
