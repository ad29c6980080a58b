#include "workloads/compute_model.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "sim/check.h"
#include "workloads/hbm_kernel.h"

namespace podsim::workloads {

namespace {

// Every constant below was fitted by tools/fit_calibration.py on data/calibration (gemm.csv and
// attention.csv, with their sources in data/calibration/README.md; "gemm.csv:N" is a line) and
// rounded to three digits; `python3 tools/fit_calibration.py` prints each fit, its rows, errors
// and sensitivities. compute_model_test.cc checks the constants against the rows.

// a100 GEMMs: fit a100/isolated -- V13 (LLMCompass, 18 A100 fp16 GEMMs, gemm.csv:85-102) and
// MAMF's two A100 SXM best shapes (gemm.csv:62, 75). Mean error 2.1%, max 6.1%. Isolated GEMMs:
// no reference measures an A100 held at its power cap, so the plateau is the isolated one.
constexpr double kA100MatmulPeakFraction = 0.912;  // Set by V13's largest rows (gemm.csv:91-94).
constexpr double kA100MnHalf = 20.0;               // V13's M sweep (gemm.csv:87-89).
constexpr double kA100KHalf = 76.4;                // V13's N = K sweep (gemm.csv:97-99).
// V13's harness cost per call (timing one eager PyTorch call), fitted with the curve (gemm.csv:95,
// 96 set it): not a kernel's cost; only V13Calibration() carries it.
constexpr sim::Time kV13CallOverhead = sim::Time::Nanoseconds(28'900);

// hopper GEMMs (h100, h200): fit h100/sustained -- our 76 H200 bf16/fp16 GEMMs replayed back to
// back in CUDA graphs with the board at its 700 W cap (gemm.csv:103-178, docs/measurements/
// h200.md), the condition a training step runs in; mean error 3.7%, max 13.4%. The isolated
// OpenXLA + MAMF fit of H100 (h100/anchored: plateau 0.834) is 15% faster at large shapes: the
// power cap, which these rows include. The fit turns the k term off (k_half 0) and leaves a small
// m/n one.
constexpr double kHopperMatmulPeakFraction = 0.710;
constexpr double kHopperMnHalf = 6.14;
constexpr double kHopperKHalf = 0;
// Per-kernel cost of a library GEMM inside a CUDA graph, fitted with the curve (set by the
// smallest rows: M = 8192, N = K = 64 and 128, and the M = 64 and 128 sweeps).
constexpr sim::Time kHopperMatmulOverhead = sim::Time::Nanoseconds(3'690);

// blackwell GEMMs (b200, gb200): fit b200/anchored -- OpenXLA's measured sm_100_B200 bf16 table
// (gemm.csv:24-42) with the plateau fixed at MAMF's B200 SXM best shape (gemm.csv:66, 1745 TF,
// less the fitted overhead): the free fit's plateau (0.929) is above anything a brute-force shape
// search reached. GB200's MAMF row (gemm.csv:68, 1822 TF) does not anchor it: MAMF counts that
// GPU's peak as 2500 TF, above the 2250 of the b200 preset that gb200 shares, so it ran at a
// higher power than a B200; the family predicts it 21% slow. Mean error 10.6%, max 31% (XLA's
// m = 256 rows, fewer output tiles than SMs). Isolated GEMMs, off the power cap: the family runs
// them at kBlackwellAtCap (below).
constexpr double kBlackwellMatmulPeakFraction = 0.823;
constexpr double kBlackwellMnHalf = 143;  // XLA's m and n sweeps (gemm.csv:29, 32, 33, 42).
constexpr double kBlackwellKHalf = 220;   // XLA's k sweep (gemm.csv:36-38).
// Fitted with the curve: the smallest rows (gemm.csv:24, 25: 256^3 and 512^3, 5.0-5.5 us) and
// XLA's m = 256 rows at ~10 us pull it above the smallest rows' time (+27% and +18% on those two).
constexpr sim::Time kBlackwellMatmulOverhead = sim::Time::Nanoseconds(6'200);

// hopper fp8 GEMMs: h100/fp8-sustained of tools/fit_calibration.py, derived, not fitted -- fit
// h100/fp8's plateau 0.749 (MAMF's fp8 best shapes on H100 SXM and H200, gemm.csv:69, 70, 0.709
// and 0.734 of the 1979 TF fp8 peak) times bf16's throughput ratio at 8192^3 of the sustained fit
// to the MAMF-anchored one, 0.862 (our H200 GEMMs back to back at the 700 W cap against MAMF's
// harness, so that MAMF's own clock state cancels), as the bf16 curve is the sustained one a
// training step runs at. An assumption: no fp8 row measures a Hopper GPU held at its cap, and the
// cap is taken to lower fp8's throughput as much as bf16's (fp8 may draw more power a clock, or
// MAMF's fp8 runs may already have been power-limited: about +-8%). The derating was looked for
// after a review of the G7.1 serving rows named its absence; its value comes from the GEMM
// microbenchmarks alone. Ramp and per-kernel overhead are the bf16 sustained fit's (an
// assumption too: two best shapes set only a plateau).
constexpr Fp8MatmulCurve kHopperFp8Matmul = {0.646, kHopperMnHalf, kHopperKHalf};
// blackwell fp8 GEMMs: fit b200/fp8-anchored -- OpenXLA's sm_100_B200 f8e4m3fn table (gemm.csv:
// 43-61) with the plateau fixed at MAMF's B200 fp8 best shape (gemm.csv:72, 3432 TF, less the bf16
// overhead): the free fit's 0.909 is above what a shape search reached. Mean error 7.2%, max 28%
// (XLA's 256^3 row, below the bf16 fit's per-kernel overhead, which is kept). Off the power cap,
// as the bf16 curve: the family runs it at kBlackwellAtCap.
constexpr Fp8MatmulCurve kBlackwellFp8Matmul = {0.807, 68.1, 324};

// A100 kernels inside a step: no reference times an A100 kernel without a harness; the hopper
// CUDA-graph cost is assumed (an assumption, not a fit).
constexpr sim::Time kA100MatmulOverhead = kHopperMatmulOverhead;

// tpu-v5e GEMMs: fit tpu-v5e/isolated -- XLA jnp.matmul of 1024^3, 4096^3 and 8192^3 bf16 on one
// v5e (gemm.csv:79-81, calibration.md G1.3); mean error 1.4%. Three cubes cannot set two
// half-points: they are A100's (kA100MnHalf, kA100KHalf, in 128-wide tile units, the MXU's
// width). The fitted 107 us per call is Python dispatch around one jitted call, not a cost XLA
// pays per op inside a compiled step: TPU ops pay no per-op overhead (an assumption; the MXU
// fill bubble of ~128-256 cycles is ~0.1 us).
constexpr double kTpuV5eMatmulPeakFraction = 0.971;
constexpr double kMxuReferenceWidth = 128;

// HBM: our H200 measurements (docs/measurements/h200.md, "HBM bandwidth"): large copies and reads
// reach 0.88-0.90 of the preset's 4.8e12 B/s, and so do the HBM-bound GEMMs (M = 64, 128 with
// N = K = 12288); a fused elementwise op 0.93. Book case G7 (H100 fp32 add of 1024^3 elements,
// 3.84 ms roofline, 4.1 ms measured: 0.937) and V13's HBM-bound A100 rows (0.95) are a little
// faster; QuACK's memory-bound kernels on H100 (calibration.md G3) reach ~0.90. Used for every
// family, TPUs included (an assumption: no reference measures a TPU's HBM bandwidth).
constexpr double kHbmFraction = 0.90;
// hopper HBM-bound kernel classes (hbm_kernel.h): fit h200/nongemm -- the kernels of our H200
// profile of a Megatron-style GPT layer in PyTorch eager at its 700 W cap (data/calibration/
// kernels.csv, from docs/measurements/h200_layer/): three shapes (Korthikanti's 22B and Megatron's
// 145.6B tp ranks, the 1.7B at tp=1), every row at sequence length 2048. Each is the fraction of
// the 4.8e12 B/s preset bandwidth at which podsim's byte count of the class's ops takes the
// measured kernel time, less kGpuKernelOverhead a call, pooled over the shapes; the fit prints the
// shapes' spread (at most 16%, layernorm). The softmax's rows are 2048 wide: no row measures
// another width, where a warp per row holds a different share of the row in registers. The family
// runs each class at the bytes/s it reached on the H200 (fraction x kH200HbmBytesPerS), capped at
// kHbmFraction of a chip's own bandwidth: an H100 has the H200's SMs with less HBM (an assumption:
// no H100 kernel profile).
// The h200 preset's HBM bandwidth (topology/chip_spec.cc), which the fractions below are of.
constexpr double kH200HbmBytesPerS = 4.8e12;
constexpr double kHopperSoftmaxFraction = 0.359;            // kernels.csv:5-7 (2.5x the roofline)
constexpr double kHopperSoftmaxBackwardFraction = 0.914;    // kernels.csv:8-10
constexpr double kHopperDropoutFraction = 0.593;            // kernels.csv:11-13 (Philox in-kernel)
constexpr double kHopperDropoutBackwardFraction = 0.897;    // kernels.csv:14-16
constexpr double kHopperLayerNormFraction = 0.449;          // kernels.csv:17-19
constexpr double kHopperLayerNormBackwardFraction = 0.527;  // kernels.csv:20-25 (two kernels)
constexpr double kHopperGeluFraction = 0.686;               // kernels.csv:26-28
constexpr double kHopperGeluBackwardFraction = 0.794;       // kernels.csv:29-31

// Per-kernel overhead of an HBM-bound op: book case G7 (reference/formulas.md 4.3 "Small-op
// latency"), an H100 add of 65,536 fp32 elements measured at ~1.5 us, of which the HBM roofline
// at kHbmFraction is 786,432 B / (3.35e12 x 0.90) = 0.26 us. Every GPU family.
constexpr sim::Time kGpuKernelOverhead = sim::Time::Nanoseconds(1'250);

// Flash attention on hopper: fit h100/fa3 -- FA3 on H100 with a known mask (attention.csv:
// tritonbench PR #1254 non-causal forward S = 1k-8k, PR #1267 causal forward and backward S =
// 1k-8k, flash-attention issue #1438's D = 64 rows, which alone set d_half). Mean error 5.1%,
// max 9.7%. No row measures a non-causal backward at more than one S: its half-point is derived as
// s_bwd_causal x s_fwd_full / s_fwd_causal.
constexpr AttentionCurve kHopperAttention = {0.744, 450, 863, 1520, 2920, 105};
// hopper FlashAttention-2 (PyTorch SDPA's flash backend, which vendors FA2's kernels): fit
// h100/fa2 -- our H200 `F.scaled_dot_product_attention` runs pinned to the flash backend, causal,
// D = 128, fwd and bwd at S = 1k-8k (attention.csv:125, 126, 137, 138, 149, 150); mean error 1.5%,
// max 3.2%. The published H100 FA2 rows have no known mask (flagged, not fitted). The head-dim
// half-point and the non-causal over causal ramp ratio are FA3's (an assumption).
constexpr AttentionCurve kHopperFa2Attention = {0.337, 124, 238, 467, 897, 105};
// hopper cuDNN fused attention (Transformer Engine's FusedAttention, SDPA's cuDNN backend): fit
// h100/cudnn -- our H200 SDPA runs on cuDNN's sm90 kernels, causal, D = 128, S = 1k-8k
// (attention.csv:122-153, the default and cudnn backends); mean error 2.9%, max 11%, with a
// plateau per direction: the forward's 0.672 (attention.csv:122, 128, 146, 152 set it), the
// backward's 0.456 (:129, 135, 147, 153). Head-dim half-point and non-causal ratio FA3's (an
// assumption: every row is causal at D = 128).
constexpr AttentionCurve kHopperCudnnAttention = {0.672, 218, 418, 33.3, 64, 105, 0.456};
// hopper attention at the power cap: the three curves above were measured mostly off it (our
// H200 SDPA runs at 1920-1980 MHz, some samples at 1530-1770, docs/measurements/h200.md;
// tritonbench's FA3 in short runs), while a training step holds the GPU at its 700 W cap, where
// our sustained GEMMs ran at 1365-1620 MHz. The family runs them at bf16's throughput ratio at
// 8192^3 of the sustained GEMM fit to the isolated one, 0.783 (tools/fit_calibration.py,
// "sustained (power cap) / isolated"; the e_max ratio, 0.741, compares asymptotes no measured
// GEMM reaches). Corroborated, not fitted: calibration.md G4's FA3 inside an H200 training step
// at 8K, 447 TFLOP/s, is about 0.78 of this curve off the cap, and our layer profile's clock
// under load (median 1590 of 1965 MHz) 0.81. An assumption: no attention kernel was timed alone
// at the cap. Found, as the fp8 derating, after the validation rows' review; the rows it made
// worse (G6.1's tp=8 rows, Megatron-Bridge's dense H100 rows, DeepSeek-V3) are in
// docs/validation.md. Serving's attention ops carry no shape and do not use these curves.
constexpr double kHopperAttentionAtCap = 0.783;
// blackwell: fit b200/fa4 -- FA4 on SM100 (flash-attention PR #2280, S = 8192, D = 128, forward
// and 2-CTA backward, causal and not): one S sets only the plateau; the ramp is FA3's (an
// assumption). Mean error 1.3%. Off the power cap: the family runs it at kBlackwellAtCap.
constexpr AttentionCurve kBlackwellAttention = {0.715, 450, 863, 1520, 2920, 105};
// blackwell at the power cap: the three curves above are taken as measured off it (XLA's table,
// MAMF's shape search and FA4's PR benchmark time short runs, a few ms a shape; an assumption:
// none states its clocks, and PR #2899 finds a B200 throttling after about 5 ms of sustained
// compute, so some may already sit partly at the cap, which this would count twice), while a
// training step is taken to hold a B200 at its 1000 W cap as it holds an H200 at its 700 W one
// (docs/measurements/h200_layer.md; no B200 step was measured). flashinfer PR #2899 timed FA4
// (bf16, B = 4, H = 16, S = 8192, D = 128) back to back on a B200: 1450 TF/s in the series'
// fastest window (iterations 10-19), 1237 once "fully throttled" (70-79); the PR says the SM
// clock drops from 1965 MHz to about 1580 and the power reaches about 1000 W
// (data/calibration/power_cap.csv; tools/fit_calibration.py, "power cap"). The ratio takes the
// fastest window as the boost (the first, 1425, would give 0.868). The family runs its GEMM (bf16
// and fp8) and attention plateaus at it; per-kernel overheads are not derated. Assumptions: one
// attention kernel's ratio stands for every tensor-core kernel (on hopper, our sustained GEMMs
// kept 0.862 of MAMF's best shapes, which the blackwell plateaus are anchored at too, while the
// clock fell to 0.81: near this 0.853), and gb200, whose cap is higher, loses as much. Left
// inconsistent: podsim's B200 over H200 attention ratio is 2.38x where calibration.md G2.2
// measures 1.88x, and FA4 inside a B200 training step at 8K ran at 834 TF/s (calibration.md G4),
// about 0.66 of PR #2280's forward and backward together, not 0.853: neither is fitted here.
// Looked for after the validation rows' review named the B200 rows' bias (podsim 25-71% fast);
// the value comes from the microbenchmark alone.
constexpr double kBlackwellAtCap = 0.853;  // power_cap.csv:8, 10 (1237 / 1450)
// a100: FA2's maintainer statement, "FA2 on A100 is already at around 70% theoretical max FLOPS"
// (flash-attention issue #1059; calibration.md G2.2; the FA2 blog's "up to 230 TFLOPs/s" is
// 0.737 of 312), as the plateau; the ramp is FA3's (an assumption: no A100 row has a shape).
constexpr AttentionCurve kA100Attention = {0.70, 450, 863, 1520, 2920, 105};
// Where attention is not calibrated (TPUs): the kernel at this fraction of the large-matmul
// plateau (an assumption: FA2's stated ~0.70 of peak on A100 is about 0.77 of that chip's GEMM
// plateau; 0.7 is kept, as before the per-family calibration).
constexpr double kUncalibratedAttentionFraction = 0.7;

// Compute under concurrent communication on GPUs: calibration.md G5.4, Lee et al., "Characterizing
// Compute-Communication Overlap in GPU-Accelerated Distributed Deep Learning" (arXiv 2507.03114):
// GPT and LLaMA kernels overlapped with their communication on A100, H100, MI250 and MI210 run on
// average 18.9% slower than without it (40.0% at most). NCCL's kernels occupy SMs (24 of H100's
// 132 in the forum measurement of G5.4, 18%) and HBM bandwidth. One figure for every GPU family
// and every kind of communication (an assumption: the measurement averages over both).
// TPUs: none (an assumption, not a measurement: ICI transfers run on DMA engines, not the
// TensorCores, and no reference measures the effect).
constexpr double kGpuOverlapSlowdown = 0.189;

double Saturation(int64_t x, double half) {
  if (x <= 0 || half <= 0) return 1;
  const double value = static_cast<double>(x);
  return value / (value + half);
}

// The GEMM curve of the header comment for one plateau and its half-points.
double SaturatingEfficiency(const MatmulShape& shape, double plateau, double mn_half,
                            double k_half) {
  return plateau * Saturation(shape.m, mn_half) * Saturation(shape.n, mn_half) *
         Saturation(shape.k, k_half);
}

bool HasShape(const MatmulShape& shape) { return shape.m > 0 && shape.k > 0 && shape.n > 0; }

int MxuWidth(const topology::ChipSpec& chip) {
  return chip.preset == "tpu-v6e" || chip.preset == "tpu7x" ? 256 : 128;
}

ComputeEfficiency Gpu(std::string family, double plateau, double mn_half, double k_half,
                      sim::Time matmul_overhead, const AttentionCurve& attention,
                      const Fp8MatmulCurve& fp8 = {}) {
  ComputeEfficiency efficiency;
  efficiency.family = std::move(family);
  efficiency.matmul_peak_fraction = plateau;
  efficiency.mn_half = mn_half;
  efficiency.k_half = k_half;
  efficiency.fp8 = fp8;
  efficiency.attention_fraction = kUncalibratedAttentionFraction;
  efficiency.attention = attention;
  efficiency.hbm_fraction = kHbmFraction;
  efficiency.kernel_overhead = kGpuKernelOverhead;
  efficiency.matmul_overhead = matmul_overhead;
  efficiency.overlap_slowdown = kGpuOverlapSlowdown;
  return efficiency;
}

// A curve measured off the power cap, at the cap (kHopperAttentionAtCap, kBlackwellAtCap).
AttentionCurve AtCap(AttentionCurve curve, double ratio) {
  curve.plateau *= ratio;
  curve.backward_plateau *= ratio;
  return curve;
}
Fp8MatmulCurve AtCap(Fp8MatmulCurve curve, double ratio) {
  curve.plateau *= ratio;
  return curve;
}

ComputeEfficiency A100() {
  return Gpu("a100", kA100MatmulPeakFraction, kA100MnHalf, kA100KHalf, kA100MatmulOverhead,
             kA100Attention);
}

}  // namespace

const AttentionCurve* ComputeEfficiency::AttentionCurveOf(std::string_view name) const {
  if (name.empty()) return &attention;
  for (const auto& [kernel, curve] : attention_kernels) {
    if (kernel == name) return &curve;
  }
  return nullptr;
}

double ComputeEfficiency::HbmBytesPerSOf(std::string_view name, double hbm_bytes_per_s) const {
  const double streaming = hbm_bytes_per_s * hbm_fraction;
  if (!name.empty()) {
    for (const auto& [kernel, rate] : hbm_kernel_bytes_per_s) {
      if (kernel == name) return std::min(rate, streaming);
    }
  }
  return streaming;
}

ComputeEfficiency IdealRoofline() { return ComputeEfficiency{}; }

std::string_view CalibrationSource(std::string_view family) {
  static const std::pair<std::string_view, std::string_view> kSources[] = {
      {"a100",
       "fit a100/isolated of tools/fit_calibration.py: V13 (LLMCompass) and MAMF's A100 rows, "
       "data/calibration/gemm.csv:62,75,85-102; attention from attention.csv"},
      {"hopper",
       "fit h100/sustained: 76 H200 GEMMs at the 700 W cap, data/calibration/gemm.csv:103-178 "
       "(docs/measurements/h200.md); FA3 attention fit h100/fa3 on attention.csv, run at the "
       "power cap (x 0.783, the sustained over isolated GEMM ratio, an assumption); fp8 GEMMs "
       "h100/fp8-sustained (MAMF's fp8 best shapes, gemm.csv:69-70, derated as bf16 at the cap, "
       "an assumption; bf16 ramp); softmax, dropout, LayerNorm and GeLU kernels fit "
       "h200/nongemm (our H200 layer profile, "
       "data/calibration/kernels.csv)"},
      {"blackwell",
       "fit b200/anchored: OpenXLA's sm_100 B200 table, data/calibration/gemm.csv:24-42, plateau "
       "at MAMF's B200 best shape (gemm.csv:66); FA4 attention fit b200/fa4 on attention.csv; "
       "fp8 GEMMs fit b200/fp8-anchored (OpenXLA's B200 fp8 table, gemm.csv:43-61, at MAMF's "
       "plateau, :72); all measured off the power cap and run at it (x 0.853, FA4's throughput "
       "at a B200's 1000 W cap over its boost, data/calibration/power_cap.csv; the same ratio "
       "for GEMMs and for gb200, an assumption)"},
      {"tpu-v5e",
       "fit tpu-v5e/isolated: XLA matmuls on one v5e, data/calibration/gemm.csv:79-81 "
       "(docs/reference/calibration.md G1.3); half-points and attention not calibrated"},
      {"tpu",
       "tpu-v5e's plateau with half-points scaled to the MXU width; not calibrated on this chip"},
      {"ideal", "none: the chip's roofline (peak FLOP/s and HBM bandwidth)"},
  };
  for (const auto& [name, source] : kSources) {
    if (name == family) return source;
  }
  return "";
}

ComputeEfficiency DefaultComputeEfficiency(const topology::ChipSpec& chip) {
  switch (chip.family) {
    case topology::ChipFamily::kGpu:
      if (chip.preset == "b200" || chip.preset == "gb200") {
        return Gpu("blackwell", kBlackwellMatmulPeakFraction * kBlackwellAtCap, kBlackwellMnHalf,
                   kBlackwellKHalf, kBlackwellMatmulOverhead,
                   AtCap(kBlackwellAttention, kBlackwellAtCap),
                   AtCap(kBlackwellFp8Matmul, kBlackwellAtCap));
      }
      if (chip.preset == "a100") return A100();
      {
        // h100, h200, and a GPU of no preset (a custom chip of family GPU).
        ComputeEfficiency hopper = Gpu(
            "hopper", kHopperMatmulPeakFraction, kHopperMnHalf, kHopperKHalf, kHopperMatmulOverhead,
            AtCap(kHopperAttention, kHopperAttentionAtCap), kHopperFp8Matmul);
        hopper.attention_kernels = {{"fa2", AtCap(kHopperFa2Attention, kHopperAttentionAtCap)},
                                    {"cudnn", AtCap(kHopperCudnnAttention, kHopperAttentionAtCap)}};
        const double h200 = kH200HbmBytesPerS;
        hopper.hbm_kernel_bytes_per_s = {
            {"softmax", kHopperSoftmaxFraction * h200},
            {"softmax.dx", kHopperSoftmaxBackwardFraction * h200},
            {"dropout", kHopperDropoutFraction * h200},
            {"dropout.dx", kHopperDropoutBackwardFraction * h200},
            {"layernorm", kHopperLayerNormFraction * h200},
            {"layernorm.dx", kHopperLayerNormBackwardFraction * h200},
            {"gelu", kHopperGeluFraction * h200},
            {"gelu.dx", kHopperGeluBackwardFraction * h200},
        };
        return hopper;
      }
    case topology::ChipFamily::kTpu: {
      const double scale = MxuWidth(chip) / kMxuReferenceWidth;
      ComputeEfficiency efficiency;
      efficiency.family = chip.preset == "tpu-v5e" ? "tpu-v5e" : "tpu";
      efficiency.matmul_peak_fraction = kTpuV5eMatmulPeakFraction;
      efficiency.mn_half = kA100MnHalf * scale;
      efficiency.k_half = kA100KHalf * scale;
      efficiency.attention_fraction = kUncalibratedAttentionFraction;
      efficiency.hbm_fraction = kHbmFraction;
      return efficiency;
    }
    case topology::ChipFamily::kGeneric:
      break;
  }
  return IdealRoofline();
}

ComputeEfficiency V13Calibration() {
  ComputeEfficiency efficiency = A100();
  efficiency.family = "a100-v13";
  efficiency.matmul_overhead = kV13CallOverhead;
  return efficiency;
}

double AttentionEfficiency(const AttentionCurve& curve, int64_t seq, int64_t head_dim, bool causal,
                           bool backward) {
  PODSIM_CHECK(curve.plateau > 0) << "attention curve not calibrated";
  const double s_half = backward
                            ? (causal ? curve.s_half_backward_causal : curve.s_half_backward_full)
                            : (causal ? curve.s_half_forward_causal : curve.s_half_forward_full);
  const double head =
      curve.d_half > 0
          ? std::min(1.0, Saturation(head_dim, curve.d_half) / Saturation(128, curve.d_half))
          : 1.0;
  const double plateau =
      backward && curve.backward_plateau > 0 ? curve.backward_plateau : curve.plateau;
  return plateau * Saturation(seq, s_half) * head;
}

double MatmulEfficiency(const MatmulShape& shape, const ComputeEfficiency& efficiency) {
  return SaturatingEfficiency(shape, efficiency.matmul_peak_fraction, efficiency.mn_half,
                              efficiency.k_half);
}

ComputeModel::ComputeModel(const topology::ChipSpec& chip)
    : ComputeModel(chip, DefaultComputeEfficiency(chip)) {}

ComputeModel::ComputeModel(const topology::ChipSpec& chip, ComputeEfficiency efficiency)
    : efficiency_(std::move(efficiency)),
      peak_flops_per_s_(chip.bf16_flops_per_s),
      fp8_flops_per_s_(chip.fp8_flops_per_s),
      hbm_bytes_per_s_(chip.hbm_bytes_per_s) {
  PODSIM_CHECK(peak_flops_per_s_ > 0 && hbm_bytes_per_s_ > 0)
      << "chip '" << chip.name << "' has no bf16 peak or HBM bandwidth";
  const ComputeEfficiency& e = efficiency_;
  for (double fraction : {e.matmul_peak_fraction, e.attention_fraction, e.hbm_fraction}) {
    PODSIM_CHECK(fraction > 0 && fraction <= 1) << "efficiency fraction " << fraction;
  }
  for (const auto& [kernel, rate] : e.hbm_kernel_bytes_per_s) {
    PODSIM_CHECK(IsHbmKernelClass(kernel) && rate > 0 && std::isfinite(rate))
        << "HBM kernel class " << kernel << " at " << rate << " B/s";
  }
  PODSIM_CHECK(e.mn_half >= 0 && e.k_half >= 0) << "half-points " << e.mn_half << ", " << e.k_half;
  const AttentionCurve& a = e.attention;
  PODSIM_CHECK(a.plateau >= 0 && a.plateau <= 1 && a.backward_plateau >= 0 &&
               a.backward_plateau <= 1 && a.s_half_forward_full >= 0 &&
               a.s_half_forward_causal >= 0 && a.s_half_backward_full >= 0 &&
               a.s_half_backward_causal >= 0 && a.d_half >= 0)
      << "attention curve out of range";
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
      if (op.fp8) {
        PODSIM_CHECK(fp8_flops_per_s_ > 0) << op.name << ": an fp8 matmul on a chip without fp8";
        const Fp8MatmulCurve& fp8 = efficiency_.fp8;
        cost.efficiency = fp8.plateau > 0
                              ? SaturatingEfficiency(op.shape, fp8.plateau, fp8.mn_half, fp8.k_half)
                              : MatmulEfficiency(op.shape, efficiency_);
      } else {
        cost.efficiency = MatmulEfficiency(op.shape, efficiency_);
      }
      overhead = efficiency_.matmul_overhead;
      break;
    case OpKind::kAttention:
      if (const AttentionCurve* curve = efficiency_.AttentionCurveOf(op.kernel);
          curve == nullptr || (curve->plateau > 0 && HasShape(op.shape))) {
        PODSIM_CHECK(curve != nullptr) << op.name << ": no curve for attention kernel '"
                                       << op.kernel << "' in family " << efficiency_.family;
        // Flash kernel shape (op.h): m = query tokens per sequence, k = head dimension.
        cost.efficiency = AttentionEfficiency(*curve, op.shape.m, op.shape.k, op.causal,
                                              op.phase == Phase::kBackwardInput);
      } else {
        // No calibrated curve: a fraction of the large-matmul plateau, whatever the shape (a
        // flash kernel's head dimension is not a GEMM's k).
        cost.efficiency = efficiency_.attention_fraction * efficiency_.matmul_peak_fraction;
      }
      overhead = efficiency_.matmul_overhead;
      break;
    default:  // HBM-bound kinds (header comment).
      break;
  }
  if (cost.efficiency > 0 && op.flops > 0) {
    const double peak = op.fp8 ? fp8_flops_per_s_ : peak_flops_per_s_;
    cost.compute_s = op.flops / (peak * cost.efficiency);
  }
  const bool hbm_bound = op.kind != OpKind::kMatmul && op.kind != OpKind::kAttention;
  const double hbm_rate = hbm_bound ? efficiency_.HbmBytesPerSOf(op.kernel, hbm_bytes_per_s_)
                                    : hbm_bytes_per_s_ * efficiency_.hbm_fraction;
  cost.memory_s = (op.hbm_read_bytes + op.hbm_write_bytes) / hbm_rate;
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
