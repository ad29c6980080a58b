#include "workloads/compute_model.h"

#include <algorithm>
#include <utility>

#include "sim/check.h"

namespace podsim::workloads {

namespace {

// GPU family (every GPU preset, a100 ... gb200), matmul curve fitted once on reference/measured.md
// V13 (LLMCompass measured A100 fp16 GEMMs, all 18 rows, a100 preset peak 3.12e14 FLOP/s and
// 2.0e12 B/s) by tools/fit_compute_model.py: a Nelder-Mead least-squares fit of
// log(predicted / measured time) over four parameters -- the plateau, the two half-points and V13's
// per-call time below -- with the HBM fraction fixed at kGpuHbmFraction. Fitted values 0.908365,
// 21.431, 75.3926, 28.8535 us; rounded here. The fit reproduces every row within 4.5% (mean 1.9%);
// compute_model_test.cc checks the rounded constants against the rows (V13Calibration).
constexpr double kV13MatmulPeakFraction = 0.908;
constexpr double kGpuMnHalf = 21.4;
constexpr double kGpuKHalf = 75.4;
// The plateau a training or inference step sustains is lower than V13's: V13 times one GEMM at a
// time on a cool card at its boost clock, while a step keeps the tensor cores busy for seconds and
// runs at the board's power cap with the SM clock pulled down. Measured on our H200
// (docs/measurements/h200.md): large bf16 GEMMs sustain 0.70-0.75 of peak, median 0.705, at the
// 700 W cap with the SM clock at 1365-1620 of its 1980 MHz; a Megatron-style GPT layer forward and
// backward (materialized attention, LayerNorm, dropout; the 22B, 1.7B and 145.6B layer shapes of
// measured.md V1/V3, one tp rank) held the card at the cap too, SM clock median 1590 MHz over 15 s
// each (docs/measurements/h200_layer.md; its GEMMs reached 0.75-0.81 there, the clock recovering
// during the memory-bound kernels, while those kernels ran 1.5-1.8x slower than their HBM
// roofline). 0.72 x the V13 shape curve is 0.705 for large GEMMs, the back-to-back median. The
// A100's sustained plateau is not measured in the references (V13 is isolated GEMMs); the same
// fraction of peak is assumed for every GPU preset, and measured.md V1/V3 (docs/validation.md) are
// its validation, not its calibration.
constexpr double kGpuMatmulPeakFraction = 0.72;
// HBM: our H200 measurements (docs/measurements/h200.md, "HBM bandwidth"): large copies and reads
// reach 0.88-0.90 of the preset's 4.8e12 B/s, and so do the HBM-bound GEMMs (M = 64, 128 with
// N = K = 12288); a fused elementwise op 0.93. Book case G7 (H100 fp32 add of 1024^3 elements,
// 3.84 ms roofline, 4.1 ms measured: 0.937) and V13's HBM-bound A100 rows (0.95) are a little
// faster; 0.90 is the H200 copy, read and GEMM-streaming figure.
constexpr double kGpuHbmFraction = 0.90;
// What V13's harness adds to every call (timing around one eager PyTorch call): fitted with the
// curve. Not a kernel cost; only V13Calibration() carries it. (h200.md: one eager call costs 20-30
// us on H200 too, against ~4 us inside a CUDA graph.)
constexpr sim::Time kV13CallOverhead = sim::Time::Nanoseconds(28'900);
// Per-kernel overhead of an HBM-bound op: book case G7 (reference/formulas.md 4.3 "Small-op
// latency"), an H100 add of 65,536 fp32 elements measured at ~1.5 us, of which the HBM roofline
// at kGpuHbmFraction is 786,432 B / (3.35e12 x 0.90) = 0.26 us.
constexpr sim::Time kGpuKernelOverhead = sim::Time::Nanoseconds(1'250);
// Per-kernel overhead of a library GEMM (cuBLAS) or attention kernel: our H200's smallest GEMMs,
// replayed in a CUDA graph (docs/measurements/h200.md), take 3.8 and 4.3 us for M = 8192,
// N = K = 64 and 128, of which their HBM roofline at kGpuHbmFraction is 0.5 and 1.0 us.
constexpr sim::Time kGpuMatmulOverhead = sim::Time::Nanoseconds(3'300);
// Flash attention relative to a GEMM of the same size: on our H200 (docs/measurements/h200.md,
// "Attention") cuDNN's causal flash kernels reach 0.56-0.65 of peak forward and 0.46-0.52 forward +
// backward, against the sustained GEMM plateau of ~0.72: 0.78-0.90 forward, 0.64-0.72 forward +
// backward. 0.7 fits the forward + backward mix that a training step runs. FlashAttention-2 (Dao
// 2023, arXiv 2307.08691, abstract) reaches "50-73% of the theoretical maximum FLOPs/s" on A100,
// 0.7-1.0 of the same plateau. Used for TPUs too (an assumption: Pallas splash-attention kernels
// are not measured in the reference).
constexpr double kAttentionFraction = 0.7;

// TPU family, NOT calibrated on TPU measurements (neither measured.md nor docs/measurements has
// TPU kernel rows):
//   peak fraction: "TPUs can get closer to 95%" of peak (hardware.md 1.2, Ch1 footnote;
//     formulas.md 4.3 "GPU FLOPs ... TPU ~95%").
//   half-points: the GPU fit's, in units of a 128-wide tile (an assumption: A100 cuBLAS tiles are
//     128-256 wide), scaled to the MXU width: 128 on v4/v5, 256 on v6e ("128x128 systolic array
//     (v6e: 256x256)", hardware.md 1.1 "Chip internals"; formulas.md 4.4 "Dimensions must be >= 128
//     (256 on v6e)"). TPU7x is assumed 256 like v6e (hardware.md does not say).
//   HBM fraction: the GPU one (an assumption: the HBM protocol, not the core, sets it). No
//     reference measures a TPU's sustained HBM bandwidth (book case I13's "~365 us" is the book's
//     own roofline of ~600M bf16 parameters over 4 chips, 600e6 x 2 / 4 / 8.2e11 = 366 us, not a
//     measurement). The only TPU measurements, MaxText's v5e steps (measured.md V7), take longer
//     than podsim predicts, and more so with HBM at its full bandwidth (mean absolute error
//     10.5% -> 10.8%, docs/validation.md), so they do not support a faster TPU HBM.
//   overheads: 0 (an assumption: XLA compiles a step into one program, so ops pay no launch; the
//     MXU fill bubble is ~128-256 cycles, ~0.1 us, folded into the shape curve).
// The MaxText MFU rows (measured.md V7) are the check on these, once whole steps are simulated.
constexpr double kTpuMatmulPeakFraction = 0.95;
constexpr double kGpuReferenceTile = 128;

double Saturation(int64_t x, double half) {
  if (x <= 0 || half <= 0) return 1;
  const double value = static_cast<double>(x);
  return value / (value + half);
}

bool HasShape(const MatmulShape& shape) { return shape.m > 0 && shape.k > 0 && shape.n > 0; }

int MxuWidth(const topology::ChipSpec& chip) {
  return chip.name == "tpu-v6e" || chip.name == "tpu7x" ? 256 : 128;
}

ComputeEfficiency GpuEfficiency() {
  ComputeEfficiency efficiency;
  efficiency.family = "gpu";
  efficiency.matmul_peak_fraction = kGpuMatmulPeakFraction;
  efficiency.mn_half = kGpuMnHalf;
  efficiency.k_half = kGpuKHalf;
  efficiency.attention_fraction = kAttentionFraction;
  efficiency.hbm_fraction = kGpuHbmFraction;
  efficiency.kernel_overhead = kGpuKernelOverhead;
  efficiency.matmul_overhead = kGpuMatmulOverhead;
  return efficiency;
}

}  // namespace

ComputeEfficiency IdealRoofline() { return ComputeEfficiency{}; }

ComputeEfficiency DefaultComputeEfficiency(const topology::ChipSpec& chip) {
  ComputeEfficiency efficiency;
  switch (chip.family) {
    case topology::ChipFamily::kGpu:
      efficiency = GpuEfficiency();
      break;
    case topology::ChipFamily::kTpu: {
      const double scale = MxuWidth(chip) / kGpuReferenceTile;
      efficiency.family = "tpu";
      efficiency.matmul_peak_fraction = kTpuMatmulPeakFraction;
      efficiency.mn_half = kGpuMnHalf * scale;
      efficiency.k_half = kGpuKHalf * scale;
      efficiency.attention_fraction = kAttentionFraction;
      efficiency.hbm_fraction = kGpuHbmFraction;
      break;
    }
    case topology::ChipFamily::kGeneric:
      break;
  }
  return efficiency;
}

ComputeEfficiency V13Calibration() {
  ComputeEfficiency efficiency = GpuEfficiency();
  efficiency.family = "gpu-v13";
  efficiency.matmul_peak_fraction = kV13MatmulPeakFraction;
  efficiency.matmul_overhead = kV13CallOverhead;
  return efficiency;
}

double MatmulEfficiency(const MatmulShape& shape, const ComputeEfficiency& efficiency) {
  return efficiency.matmul_peak_fraction * Saturation(shape.m, efficiency.mn_half) *
         Saturation(shape.n, efficiency.mn_half) * Saturation(shape.k, efficiency.k_half);
}

ComputeModel::ComputeModel(const topology::ChipSpec& chip)
    : ComputeModel(chip, DefaultComputeEfficiency(chip)) {}

ComputeModel::ComputeModel(const topology::ChipSpec& chip, ComputeEfficiency efficiency)
    : efficiency_(std::move(efficiency)),
      peak_flops_per_s_(chip.bf16_flops_per_s),
      hbm_bytes_per_s_(chip.hbm_bytes_per_s) {
  PODSIM_CHECK(peak_flops_per_s_ > 0 && hbm_bytes_per_s_ > 0)
      << "chip '" << chip.name << "' has no bf16 peak or HBM bandwidth";
  const ComputeEfficiency& e = efficiency_;
  for (double fraction : {e.matmul_peak_fraction, e.attention_fraction, e.hbm_fraction}) {
    PODSIM_CHECK(fraction > 0 && fraction <= 1) << "efficiency fraction " << fraction;
  }
  PODSIM_CHECK(e.mn_half >= 0 && e.k_half >= 0) << "half-points " << e.mn_half << ", " << e.k_half;
  PODSIM_CHECK(e.kernel_overhead >= sim::Time::Zero() && e.matmul_overhead >= sim::Time::Zero())
      << "negative kernel overhead";
}

OpCost ComputeModel::Cost(const Op& op) const {
  PODSIM_CHECK(op.kind != OpKind::kCollective) << op.name << " is a collective, not a compute op";
  PODSIM_CHECK(op.flops >= 0 && op.hbm_read_bytes >= 0 && op.hbm_write_bytes >= 0)
      << op.name << ": negative FLOPs or bytes";
  OpCost cost;
  sim::Time overhead = efficiency_.kernel_overhead;
  switch (op.kind) {
    case OpKind::kMatmul:
      cost.efficiency = MatmulEfficiency(op.shape, efficiency_);
      overhead = efficiency_.matmul_overhead;
      break;
    case OpKind::kAttention:
      cost.efficiency = efficiency_.attention_fraction *
                        (HasShape(op.shape) ? MatmulEfficiency(op.shape, efficiency_)
                                            : efficiency_.matmul_peak_fraction);
      overhead = efficiency_.matmul_overhead;
      break;
    default:  // HBM-bound kinds (header comment).
      break;
  }
  if (cost.efficiency > 0 && op.flops > 0) {
    cost.compute_s = op.flops / (peak_flops_per_s_ * cost.efficiency);
  }
  cost.memory_s =
      (op.hbm_read_bytes + op.hbm_write_bytes) / (hbm_bytes_per_s_ * efficiency_.hbm_fraction);
  if (cost.compute_s > cost.memory_s) {
    cost.limiter = ComputeLimiter::kCompute;
  } else if (cost.memory_s > 0) {
    cost.limiter = ComputeLimiter::kMemory;
  }
  cost.duration = sim::Time::FromSecondsCeil(std::max(cost.compute_s, cost.memory_s)) + overhead;
  if (cost.duration > sim::Time::Zero()) {
    cost.achieved_flops_per_s = op.flops / cost.duration.ToSeconds();
  }
  return cost;
}

double ComputeModel::CriticalIntensity(double efficiency) const {
  return peak_flops_per_s_ * efficiency / (hbm_bytes_per_s_ * efficiency_.hbm_fraction);
}

sim::Time OpDuration(const Op& op, const topology::ChipSpec& chip,
                     const ComputeEfficiency& efficiency) {
  return ComputeModel(chip, efficiency).Duration(op);
}

}  // namespace podsim::workloads
