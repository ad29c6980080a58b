// ComputeModel: how long one op takes on one chip's compute stream.
//
// The roofline with a shape-dependent efficiency (design.md "Models: Compute"):
//   duration = overhead + max(FLOPs / (peak x efficiency), HBM bytes / (HBM bw x hbm_fraction)),
// the max rounded up to a whole picosecond before the overhead is added; the overhead is
// matmul_overhead for kMatmul and kAttention (library kernels), kernel_overhead for the rest. Peak
// is the chip's bf16 dense peak (the op lists are bf16, precision.h); HBM bytes are the op's reads
// plus writes.
//   kMatmul       efficiency = MatmulEfficiency(shape): the saturating curve below. An fp8 matmul
//                 (op.fp8, fp8_training.h) runs at the chip's fp8 peak with the family's fp8
//                 curve (the same form, its own plateau and half-points), or, where the family
//                 has none, with the bf16 curve (an assumption the family's source states).
//   kAttention    with a calibrated AttentionCurve and an op shape (layer_ops.h sets one on the
//                 flash kernels): AttentionEfficiency below, on the curve of the op's named
//                 kernel (Op::kernel) or the family's flash kernel; otherwise attention_fraction x
//                 matmul_peak_fraction. REQUIRES: a named kernel the family has a curve for.
//   kNorm, kElementwise, kEmbedding, kLoss, kOptimizer: HBM-bound; their FLOPs run on the vector
//                 units (CUDA cores, VPU) in the shadow of the memory traffic and are not timed.
//                 Their bytes stream at the family's rate for the op's kernel class where it has
//                 one (Op::kernel, hbm_kernel.h: softmax, dropout, LayerNorm, GeLU; capped at
//                 hbm_fraction of the chip's bandwidth), at hbm_fraction otherwise.
//   kCollective   not a compute op (REQUIRES: never passed here).
//
// Matmul efficiency, for `batch` independent [m,k] x [k,n] products:
//   e(m, n, k) = matmul_peak_fraction * f(m, mn_half) * f(n, mn_half) * f(k, k_half),
//   f(x, h) = x / (x + h).
// f is a smooth stand-in for tile and wave quantization: for x well below h it falls as x / h
// (the fraction of a tile's rows or columns that does useful work, a k loop too short to hide the
// tile's prologue and epilogue), and it saturates at 1 for large x. M and N share one half-point
// (C = AB and C^T = B^T A^T are the same kernel). The curve uses the dimensions of one product:
// `batch` adds parallelism but not tile occupancy. A dimension of 0 (shape unknown) counts as 1.
// Efficiency rises monotonically in every dimension (or stays constant where a half-point is 0).
//
// Flash attention efficiency, of a kernel over sequences of S tokens with head dimension D:
//   e = plateau * S / (S + s_half[direction][mask]) * min(1, f(D, d_half) / f(128, d_half)),
// a fraction of the peak (not of a matmul's). Direction: forward (forward and recomputation
// phases) or backward (the backward-input phase); mask: causal or full.
//
// Defaults: one calibration per chip family (DefaultComputeEfficiency), fitted once by
// tools/fit_calibration.py on the microbenchmarks of data/calibration (GEMMs: OpenXLA's measured
// table, MAMF best shapes, LLMCompass V13, our H200 rows; attention: FA3 and FA4 kernel
// benchmarks), each constant naming its rows in compute_model.cc:
//   a100       GEMM curve from V13 + MAMF (isolated GEMMs: no sustained A100 measurement
//              exists in the references); attention plateau from FA2's stated ~70%, ramp
//              borrowed from FA3.
//   hopper     (h100, h200) GEMM curve from our sustained H200 rows (back to back at the 700 W
//              cap, as in a training step); attention from FA3 on H100 (FA2 and cuDNN from our
//              H200), measured off the cap and run at it: plateaus times bf16's sustained over
//              isolated GEMM throughput at 8192^3 (an assumption); fp8 GEMMs derated the same
//              way against MAMF's harness.
//   blackwell  (b200, gb200) GEMM curve from OpenXLA's B200 table anchored at MAMF's B200
//              plateau (isolated); attention plateau from FA4, ramp borrowed from FA3.
//   tpu-v5e    GEMM plateau from XLA matmuls on one v5e (three cubes; half-points A100's).
//   tpu        (v4p, v5p, v6e, tpu7x) NOT calibrated: v5e's fit with the half-points scaled to
//              the MXU width.
//   TPU attention is not calibrated anywhere (no kernel measurements): attention_fraction x
//   matmul efficiency. HBM fraction and the HBM-bound kernels' overhead are the GPU ones of
//   docs/measurements/h200.md and book case G7, for every family. Kernel classes (hbm_kernel.h)
//   only on hopper, from the kernels of our H200 layer profile (docs/measurements/h200_layer.md);
//   elsewhere they stream at hbm_fraction (not calibrated: no kernel profile of those chips).
//   ideal      (generic chips) the roofline: efficiencies of 1, no shape term, no overhead.

#ifndef PODSIM_WORKLOADS_COMPUTE_MODEL_H_
#define PODSIM_WORKLOADS_COMPUTE_MODEL_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/time.h"
#include "topology/chip_spec.h"
#include "workloads/op.h"

namespace podsim::workloads {

// An fp8 GEMM curve (header comment): plateau 0 means not calibrated.
struct Fp8MatmulCurve {
  double plateau = 0;
  double mn_half = 0;
  double k_half = 0;
};

// Flash attention's efficiency curve (header comment). plateau == 0: not calibrated.
struct AttentionCurve {
  double plateau = 0;
  double s_half_forward_full = 0;
  double s_half_forward_causal = 0;
  double s_half_backward_full = 0;
  double s_half_backward_causal = 0;
  double d_half = 0;  // 0 turns the head-dimension term off.
  // The backward kernels' own plateau where they have one (cuDNN's); 0: `plateau` for both.
  double backward_plateau = 0;
};

struct ComputeEfficiency {
  // Which calibration this is: "a100", "hopper", "blackwell", "tpu-v5e", "tpu", "ideal", or
  // anything a caller names.
  std::string family = "ideal";
  // Asymptotic fraction of the peak a large matmul reaches; in (0, 1].
  double matmul_peak_fraction = 1;
  // Half-points of the saturating curve, in elements; 0 turns the dimension's term off.
  double mn_half = 0;
  double k_half = 0;
  Fp8MatmulCurve fp8;
  // Attention kernel efficiency relative to the large-matmul plateau, where `attention` is not
  // calibrated or the op has no shape; in (0, 1].
  double attention_fraction = 1;
  AttentionCurve attention;
  // Other calibrated flash kernels of the family by name ("fa2", "cudnn"): an attention op naming
  // one (Op::kernel) is timed on its curve.
  std::vector<std::pair<std::string, AttentionCurve>> attention_kernels;
  // The curve of kernel `name` ("" : `attention`); nullptr when the family has none.
  const AttentionCurve* AttentionCurveOf(std::string_view name) const;
  // Fraction of the HBM bandwidth a streaming kernel sustains; in (0, 1].
  double hbm_fraction = 1;
  // The kernel classes (hbm_kernel.h) a profile times below the streaming rate: each class's
  // achieved bytes/s (> 0), which on a chip of the family is capped at hbm_fraction of its
  // bandwidth. Bytes/s, not a fraction: kernels this far below the roofline are held back by their
  // SMs (issue rate, loads in flight), which chips of one family share whatever their HBM. A class
  // absent here streams at hbm_fraction.
  std::vector<std::pair<std::string, double>> hbm_kernel_bytes_per_s;
  // The bytes/s at which an HBM-bound op of kernel `name` ("" for none) streams on a chip whose
  // HBM moves `hbm_bytes_per_s`.
  double HbmBytesPerSOf(std::string_view name, double hbm_bytes_per_s) const;
  // Fixed cost of one compute op (launch, prologue, tail), added to its roofline time:
  // matmul_overhead for kMatmul and kAttention (library GEMM and attention kernels),
  // kernel_overhead for the HBM-bound kinds.
  sim::Time kernel_overhead = sim::Time::Zero();
  sim::Time matmul_overhead = sim::Time::Zero();
  // Fraction by which compute slows while its chip communicates (collective and send kernels
  // take SMs and HBM bandwidth from the overlapped kernels); >= 0. The step simulator applies it
  // (step_simulator.h, time accounting).
  double overlap_slowdown = 0;
};

// The pure roofline: every fraction 1, no shape term, no overhead.
ComputeEfficiency IdealRoofline();

// The defaults for the chip's calibration family (header comment; sources in compute_model.cc).
// Uncalibrated TPU presets with a 256-wide MXU (tpu-v6e, tpu7x) get half-points twice those of
// the 128-wide ones.
ComputeEfficiency DefaultComputeEfficiency(const topology::ChipSpec& chip);

// Where a calibration family's constants come from: the fit of tools/fit_calibration.py and the
// rows of data/calibration it used ("" for a family podsim does not define).
std::string_view CalibrationSource(std::string_view family);

// The a100 family's curve with the per-call time of the harness that measured V13 (28.9 us, as
// matmul_overhead, fitted with the curve); it reproduces V13's rows on the a100 preset. For
// comparisons with those measurements only: a training step does not pay a harness per kernel.
ComputeEfficiency V13Calibration();

// Fraction of the peak a matmul of this shape reaches, in (0, matmul_peak_fraction].
double MatmulEfficiency(const MatmulShape& shape, const ComputeEfficiency& efficiency);

// Fraction of the peak a flash attention kernel over sequences of `seq` tokens with head
// dimension `head_dim` reaches, in (0, the direction's plateau]. REQUIRES: curve.plateau > 0.
double AttentionEfficiency(const AttentionCurve& curve, int64_t seq, int64_t head_dim, bool causal,
                           bool backward);

// What limits an op's roofline time: its FLOPs, its HBM traffic, or nothing (no FLOPs and no
// bytes: only the overhead remains).
enum class ComputeLimiter { kCompute, kMemory, kNone };

// The breakdown of one op's duration.
struct OpCost {
  sim::Time duration;     // What the compute stream is busy for.
  double compute_s = 0;   // FLOPs / (peak x efficiency); 0 for HBM-bound kinds.
  double memory_s = 0;    // HBM bytes / HbmBytesPerSOf(op.kernel, HBM bandwidth).
  double efficiency = 0;  // The peak fraction applied to the FLOPs; 0 for HBM-bound kinds.
  ComputeLimiter limiter = ComputeLimiter::kNone;
  double achieved_flops_per_s = 0;  // op.flops / duration.
};

// Times compute ops on one chip. Cheap to copy; holds no references.
class ComputeModel {
 public:
  // REQUIRES: chip.bf16_flops_per_s > 0 and chip.hbm_bytes_per_s > 0 (aborts otherwise); the
  // efficiency's fractions in (0, 1] and half-points >= 0.
  explicit ComputeModel(const topology::ChipSpec& chip);
  ComputeModel(const topology::ChipSpec& chip, ComputeEfficiency efficiency);

  // REQUIRES: op.kind != kCollective, op.flops and HBM bytes >= 0, and op.fp8 only on a chip
  // with an fp8 peak (aborts otherwise).
  OpCost Cost(const Op& op) const;
  sim::Time Duration(const Op& op) const { return Cost(op).duration; }

  // FLOPs per HBM byte above which an op whose FLOPs run at `efficiency` is compute-bound.
  double CriticalIntensity(double efficiency) const;

  const ComputeEfficiency& efficiency() const { return efficiency_; }
  double peak_flops_per_s() const { return peak_flops_per_s_; }
  double hbm_bytes_per_s() const { return hbm_bytes_per_s_; }

 private:
  ComputeEfficiency efficiency_;
  double peak_flops_per_s_;
  double fp8_flops_per_s_;
  double hbm_bytes_per_s_;
};

// ComputeModel(chip, efficiency).Duration(op).
sim::Time OpDuration(const Op& op, const topology::ChipSpec& chip,
                     const ComputeEfficiency& efficiency);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_COMPUTE_MODEL_H_
