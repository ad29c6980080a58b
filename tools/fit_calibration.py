#!/usr/bin/env python3
"""Fits podsim's compute-model constants once per chip family, from committed microbenchmarks only.

Usage: tools/fit_calibration.py [--json] [--data DIR]

Inputs (data/calibration/README.md says where every row comes from):
  data/calibration/gemm.csv       GEMM points: calibration.md G1.1-G1.3, measured.md V13, our H200.
  data/calibration/attention.csv  attention kernel points: calibration.md G2, our H200.
  data/calibration/kernels.csv    HBM-bound (non-GEMM) kernels of our H200 layer profile.
  data/calibration/power_cap.csv  one kernel timed until its board reaches the power cap.
Outputs, per family (a100, h100, b200, tpu-v5e): the fitted constants rounded to 3 significant
digits, the rows that set them, a per-row error table (predicted vs measured, computed with the
rounded constants), mean and max absolute error, and d(mean abs log error)/d(constant) by central
finite differences (not for the non-GEMM fractions: each is a closed-form ratio). Readable text by
default; with --json one JSON object with the same content.

GEMM model (workloads/compute_model.h), for `batch` independent [m,k] x [k,n] products:
  t = overhead + max(2*b*m*n*k / (peak * e), bytes / (hbm_bw * HBM_FRACTION))
  e = e_max * f(m, h_mn) * f(n, h_mn) * f(k, h_k),   f(x, h) = x / (x + h)
  bytes = 2 * b * (m*k + k*n + m*n)                    (16-bit A, B read once, C written once)
  fp8 rows (dtype fp8, fp8_e4m3: e4m3 x e4m3 -> bf16): peak = the chip's fp8 peak (FP8_PEAKS),
  bytes = b * (m*k + k*n) + 2 * b * m*n                (1-byte A and B, 2-byte C)
Fitted: e_max, h_mn, h_k, overhead, minimizing sum(log(t_predicted / t_measured)^2), per family:
  a100     isolated  V13 + MAMF (G1.2)
  h100     isolated  XLA sm_90 table (G1.1) + MAMF; sustained: our H200 rows (700 W cap)
           fp8       MAMF H100 and H200 fp8 best shapes: e_max only; h_mn, h_k, overhead
                     borrowed from h100/sustained (the fit compute_model.cc uses)
  b200     isolated  XLA sm_100_B200 table + MAMF B200 and GB200
           fp8       XLA sm_100_B200 fp8 table + MAMF B200 fp8: e_max, h_mn, h_k; overhead
                     borrowed from b200/anchored; MAMF GB200 fp8 compared only
  tpu-v5e  isolated  3 points: e_max and overhead only, half-points A100's (GEMM_FITS says why)
The 16-bit fits take bf16 and fp16 rows only, the fp8 fits fp8 rows only (FitSpec.dtype).
An isolated fit, or b200/fp8, whose e_max lands above MAMF's best kernel efficiency (against the
peak of the row's dtype) is also refitted with e_max fixed there ("anchored", "fp8-anchored";
anchored_spec). A half-point that fits below HALF_POINT_FLOOR is 0.

Attention model (a proposal; podsim today prices attention as attention_fraction x a GEMM):
  eff = a * f(S, s_half[direction, causal]) * g(D)       (fraction of the bf16 dense peak)
  g(D) = min(1, f(D, d_half) / f(128, d_half))           (1 at the usual head dim 128)
Fitted on log(eff_predicted / eff_measured), FLOPs by the FA convention (calibration.md G2), one
fit per kernel (ATTENTION_FITS says which rows and why):
  h100  fa3    FA3 (G2): a, s_fwd_nc, s_fwd_c, s_bwd_c, d_half; s_bwd_nc derived
        fa2    FA2, as PyTorch SDPA's flash backend runs it (our H200; causal only): a, s_fwd_c,
               s_bwd_c; d_half and the full/causal ratio s_fwd_nc / s_fwd_c borrowed from
               h100/fa3, the full-mask half-points derived from it
        cudnn  cuDNN fused attention (SDPA's cuDNN backend; our H200; causal only): as fa2
  b200  fa4    FA4 (G2.2): a only; half-points FA3's
a100 and tpu-v5e have no fittable rows (ATTENTION_NOT_FITTED).

Non-GEMM (HBM-bound) kernel model (workloads/hbm_kernel.h; fit h200/nongemm, family h100, i.e.
hopper): an op of kernel class c (softmax, dropout, layernorm, gelu and their .dx backwards) takes
  t = KERNEL_OVERHEAD_S + bytes / (hbm_bw * f_c)           a call
with bytes podsim's byte count of the op (NONGEMM_BYTES). Per class, in closed form, pooled over
the profiled shapes (our H200 layer, docs/measurements/h200_layer.md; every row at S = 2048):
  f_c = sum(bytes) / sum((total_time - calls * KERNEL_OVERHEAD_S) * hbm_bw)
a100, b200 and tpu-v5e have no kernel profile and keep HBM_FRACTION for these classes
(NONGEMM_NOT_FITTED).

Power cap (power_cap.csv, no fit): per series (one kernel, shape and chip timed back to back
until the board holds its power cap), the throughput of its `cap` window over its `boost` window,
the fraction of its off-cap speed a kernel keeps at the cap. compute_model.cc runs the blackwell
family's off-cap (isolated) curves at b200's ratio (kBlackwellAtCap).

Only the standard library: Nelder-Mead is written out below and run on the logarithms of the
parameters (all are positive; the log makes 1e-6 s overheads and 1e3-element half-points
comparable step sizes).
"""
import argparse
import csv
import json
import math
import pathlib
import sys
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "data" / "calibration"

# Chip presets, topology/chip_spec.cc: (bf16 dense peak FLOP/s, HBM B/s). h200 takes h100's
# compute (H200() starts from H100()); gb200 takes all of b200's (GB200() starts from B200()).
CHIPS = {
    "a100": (3.12e14, 2.0e12),     # A100(): 312 TFLOP/s, 2.0e12 B/s.
    "h100": (9.89e14, 3.35e12),    # H100(): 989 TFLOP/s, 3.35e12 B/s.
    "h200": (9.89e14, 4.8e12),     # H200(): H100 compute, 4.8e12 B/s.
    "b200": (2.25e15, 8.0e12),     # B200(): 2250 TFLOP/s, 8.0e12 B/s.
    "gb200": (2.25e15, 8.0e12),    # GB200(): B200's figures.
    "tpu-v5e": (1.97e14, 8.2e11),  # TpuV5e(): 197 TFLOP/s, 8.2e11 B/s.
}

# FP8 dense peaks (FLOP/s), topology/chip_spec.cc fp8_flops_per_s: H100() 1.979e15 (MFU table
# "1979"), B200() 4.5e15 (1.2 table); h200 takes h100's compute, gb200 b200's. A100 and TPU v5e
# have no fp8 peak (A100() sets 0; no fp8 rows for either).
FP8_PEAKS = {"h100": 1.979e15, "h200": 1.979e15, "b200": 4.5e15, "gb200": 4.5e15}

# HBM fraction, fixed, not fitted: workloads/compute_model.cc kHbmFraction, from
# docs/measurements/h200.md (large copies, reads and HBM-bound GEMMs reach 0.88-0.90 of the
# preset bandwidth). No reference measures a TPU's.
HBM_FRACTION = 0.90
# Per-call overhead of an HBM-bound kernel, fixed, not fitted: workloads/compute_model.cc
# kGpuKernelOverhead, from book case G7 (reference/formulas.md 4.3 "Small-op latency": an H100
# add of 65,536 fp32 elements measured at ~1.5 us, of which its HBM roofline is 0.26 us); every
# GPU family. Taken off each call's time before the non-GEMM fractions are fitted (h200/nongemm).
KERNEL_OVERHEAD_S = 1.25e-6
# bf16 and fp16 run at the same tensor-core / MXU peak on every chip here; 2 bytes per element.
SIXTEEN_BIT = ("bf16", "fp16")
BYTES_PER_ELEMENT = 2
# fp8 rows (gemm.csv dtype fp8, fp8_e4m3) are "f8e4m3fn x f8e4m3fn -> bf16": 1-byte A and B,
# a 2-byte C.
FP8_INPUT_BYTES = 1
FP8_OUTPUT_BYTES = 2
# A FitSpec's dtype selector -> which row dtypes it takes.
DTYPE_SELECTORS = {"16-bit": lambda dtype: dtype in SIXTEEN_BIT,
                   "fp8": lambda dtype: dtype.startswith("fp8")}
# The head dim at which g(D) = 1: every fitted attention row but issue #1438's has D = 128.
REFERENCE_HEAD_DIM = 128
# Sources whose time column is derived from their TF column (calibration.md G1.1: "Time (us) =
# 2*b*m*n*k / FLOP/s"); for the others the time, where given, is what was measured.
TIME_DERIVED_FROM_TFLOPS = ("G1.1",)
# FLOPs of a backward (and a forward + backward) pass over a forward one: calibration.md G2's FA
# convention ("bwd = 2.5x fwd"), as docs/measurements/h200.md's attention rows use it.
FA_DIRECTION_FACTOR = {"fwd": 1.0, "bwd": 2.5, "fwdbwd": 3.5}
ROUND_DIGITS = 3  # Significant digits of the reported constants.
SENSITIVITY_STEP = 1e-3  # Relative step of the finite differences.


# ---------------------------------------------------------------------------------------------
# Data


@dataclass
class GemmPoint:
    """One row of gemm.csv. time_s is the measured time (derived from TF where the source gives
    only TF, or gives a time computed from TF)."""
    row_id: str
    source: str
    ref: str
    chip: str
    dtype: str
    batch: int
    m: int
    n: int
    k: int
    time_s: float
    flag: str
    note: str

    @property
    def flops(self):
        return 2.0 * self.batch * self.m * self.n * self.k

    def label(self):
        shape = f"{self.m}x{self.n}x{self.k}" + (f" b={self.batch}" if self.batch != 1 else "")
        return f"{self.row_id:15s} {self.source:9s} {self.chip:7s} {shape}"


@dataclass
class AttentionPoint:
    """One row of attention.csv with a known S, D and causal flag. eff is the measured TF/s over
    the chip's bf16 peak (FLOPs by the FA convention)."""
    row_id: str
    source: str
    ref: str
    chip: str
    kernel: str
    dtype: str
    seq: int
    head_dim: int
    causal: bool
    direction: str
    tflops: float
    flag: str
    note: str

    @property
    def eff(self):
        return self.tflops * 1e12 / CHIPS[self.chip][0]

    def label(self):
        kind = f"{self.direction} {'causal' if self.causal else 'full'}"
        origin = self.ref if self.source.startswith("G") else self.source
        return (f"{self.row_id:20s} {origin:22s} {self.chip:5s} {self.kernel:9s} "
                f"S={self.seq:<5d} D={self.head_dim:<3d} {kind}")


def fa_flops(batch, heads, seq, head_dim, causal, direction):
    """FLOPs of one attention call by calibration.md G2's FA convention: forward 4*B*H*S^2*D,
    halved when causal, times FA_DIRECTION_FACTOR[direction]."""
    forward = 4.0 * batch * heads * seq * seq * head_dim * (0.5 if causal else 1.0)
    return forward * FA_DIRECTION_FACTOR[direction]


def read_csv_rows(path):
    """Returns (line number, dict) for every data row of a CSV whose comment lines start with
    '#' and whose records are one line each. Line numbers are 1-based lines of the file, so row
    ids point into it."""
    with open(path, newline="") as handle:
        lines = handle.read().splitlines()
    numbered = [(i + 1, line) for i, line in enumerate(lines) if line and not line.startswith("#")]
    reader = csv.DictReader(line for _, line in numbered)
    rows = list(reader)
    return [(number, row) for (number, _), row in zip(numbered[1:], rows)]


def _int_or_none(text):
    return int(text) if text.strip() else None


def _float_or_none(text):
    return float(text) if text.strip() else None


def load_gemm(path):
    """All rows of gemm.csv that have a shape and a time or TF, as GemmPoints. Rows without a
    shape (a flag says so) are skipped: the model cannot price them."""
    points = []
    for number, row in read_csv_rows(path):
        dims = [_int_or_none(row[key]) for key in ("batch", "m", "n", "k")]
        if None in dims:
            continue
        batch, m, n, k = dims
        time_us, tflops = _float_or_none(row["time_us"]), _float_or_none(row["tflops"])
        flops = 2.0 * batch * m * n * k
        if tflops is not None and (time_us is None or row["source"] in TIME_DERIVED_FROM_TFLOPS):
            time_s = flops / (tflops * 1e12)
        elif time_us is not None:
            time_s = time_us * 1e-6
        else:
            continue
        points.append(GemmPoint(f"gemm.csv:{number}", row["source"], row["ref"], row["chip"],
                                row["dtype"], batch, m, n, k, time_s, row["flag"], row["note"]))
    return points


def load_attention(path):
    """All rows of attention.csv with a known S, D, causal flag and TF, as AttentionPoints
    (statement rows without a shape, and rows whose causal flag is unknown, are skipped)."""
    points = []
    for number, row in read_csv_rows(path):
        seq, head_dim = _int_or_none(row["S"]), _int_or_none(row["D"])
        tflops = _float_or_none(row["tflops"])
        if seq is None or head_dim is None or tflops is None or row["causal"] not in ("yes", "no"):
            continue
        points.append(AttentionPoint(f"attention.csv:{number}", row["source"], row["ref"],
                                     row["chip"], row["kernel"], row["dtype"], seq, head_dim,
                                     row["causal"] == "yes", row["direction"], tflops,
                                     row["flag"], row["note"]))
    return points


# ---------------------------------------------------------------------------------------------
# Models


def saturation(x, half):
    """f(x, h) = x / (x + h); 1 when h = 0 (the term is off), as compute_model.cc's Saturation."""
    return 1.0 if half <= 0 else x / (x + half)


def gemm_efficiency(params, m, n, k):
    """e(m, n, k) = e_max f(m, h_mn) f(n, h_mn) f(k, h_k), the fraction of peak the FLOPs get."""
    return (params["e_max"] * saturation(m, params["h_mn"]) * saturation(n, params["h_mn"]) *
            saturation(k, params["h_k"]))


def is_fp8(point):
    return point.dtype.startswith("fp8")


def peak_flops(point):
    """The dense peak a GemmPoint's FLOPs are measured against: its chip's fp8 peak for an fp8
    row (FP8_PEAKS), the bf16 one otherwise (CHIPS)."""
    return FP8_PEAKS[point.chip] if is_fp8(point) else CHIPS[point.chip][0]


def gemm_bytes(point):
    """HBM bytes of one GemmPoint: A and B read once, C written once; 2 bytes each for 16-bit
    rows, 1-byte A and B and a 2-byte (bf16) C for fp8 ones."""
    if is_fp8(point):
        return point.batch * (FP8_INPUT_BYTES * (point.m * point.k + point.k * point.n) +
                              FP8_OUTPUT_BYTES * point.m * point.n)
    return BYTES_PER_ELEMENT * point.batch * (
        point.m * point.k + point.k * point.n + point.m * point.n)


def gemm_time(params, point):
    """Predicted seconds for one GemmPoint on its chip (module docstring's GEMM model)."""
    hbm = CHIPS[point.chip][1]
    compute_s = point.flops / (peak_flops(point) *
                               gemm_efficiency(params, point.m, point.n, point.k))
    memory_s = gemm_bytes(point) / (hbm * HBM_FRACTION)
    return params["overhead_s"] + max(compute_s, memory_s)


def seq_half_name(direction, causal):
    """The name of the sequence half-point for (direction, causal), e.g. 's_bwd_c'."""
    return f"s_{direction}_{'c' if causal else 'nc'}"


def head_dim_factor(head_dim, d_half):
    """g(D) = min(1, f(D, d_half) / f(128, d_half)): slower below the reference head dim 128,
    capped at 1 above it (the FA3-paper charts show hdim 256 no faster than 128)."""
    return min(1.0, saturation(head_dim, d_half) / saturation(REFERENCE_HEAD_DIM, d_half))


def attention_efficiency(params, point):
    """Predicted fraction of the bf16 peak for one AttentionPoint (module docstring's model)."""
    half = params[seq_half_name(point.direction, point.causal)]
    # A backward plateau of its own where the fit has one (a_bwd), else one plateau a.
    plateau = params.get("a_bwd", params["a"]) if point.direction == "bwd" else params["a"]
    return plateau * saturation(point.seq, half) * head_dim_factor(point.head_dim,
                                                                   params["d_half"])


def gemm_log_error(params, point):
    return math.log(gemm_time(params, point) / point.time_s)


def attention_log_error(params, point):
    return math.log(attention_efficiency(params, point) / point.eff)


# ---------------------------------------------------------------------------------------------
# Fitting


def nelder_mead(f, x0, step=0.3, iterations=4000, tolerance=1e-12):
    """Minimizes f over R^n from x0 by Nelder-Mead (reflection 1, expansion 2, contraction 0.5,
    shrink 0.5). The initial simplex adds `step` to one coordinate at a time. Stops after
    `iterations` or when the simplex's values agree within `tolerance`. Returns (x, f(x))."""
    dim = len(x0)
    simplex = [list(x0)] + [[x + (step if j == i else 0.0) for j, x in enumerate(x0)]
                            for i in range(dim)]
    values = [f(p) for p in simplex]
    for _ in range(iterations):
        order = sorted(range(dim + 1), key=lambda i: values[i])
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if abs(values[-1] - values[0]) <= tolerance * (1 + abs(values[0])):
            break
        centroid = [sum(p[j] for p in simplex[:-1]) / dim for j in range(dim)]
        worst = simplex[-1]
        reflected = [2 * c - w for c, w in zip(centroid, worst)]
        f_reflected = f(reflected)
        if f_reflected < values[0]:
            expanded = [3 * c - 2 * w for c, w in zip(centroid, worst)]
            f_expanded = f(expanded)
            simplex[-1], values[-1] = ((expanded, f_expanded) if f_expanded < f_reflected
                                       else (reflected, f_reflected))
        elif f_reflected < values[-2]:
            simplex[-1], values[-1] = reflected, f_reflected
        else:
            contracted = [0.5 * (c + w) for c, w in zip(centroid, worst)]
            f_contracted = f(contracted)
            if f_contracted < values[-1]:
                simplex[-1], values[-1] = contracted, f_contracted
            else:
                best = simplex[0]
                for i in range(1, dim + 1):
                    simplex[i] = [0.5 * (b + x) for b, x in zip(best, simplex[i])]
                    values[i] = f(simplex[i])
    best = min(range(dim + 1), key=lambda i: values[i])
    return simplex[best], values[best]


def least_squares_fit(log_error, points, free, fixed, start, upper=None, complete=None,
                      grid=(), restarts=6):
    """Fits the `free` parameters (names) minimizing sum(log_error(params, point)^2), the others
    held at `fixed`. Searches over log(parameter), from `start` and from every combination of
    START_FACTORS times the start of the parameters named in `grid` (the loss has local minima:
    a half-point can trade against the plateau), keeping the best. `upper` bounds some
    parameters (name -> max); `complete` (params -> params) adds derived ones before each
    evaluation. Each start restarts Nelder-Mead from its result until the loss stops falling.
    Returns (params dict of the free and fixed parameters, loss)."""
    upper = upper or {}
    complete = complete or dict

    def params_of(x):
        params = dict(fixed)
        params.update({name: math.exp(v) for name, v in zip(free, x)})
        return params

    def loss(x):
        params = params_of(x)
        if any(params[name] > bound for name, bound in upper.items()):
            return math.inf
        params = complete(params)
        return sum(log_error(params, p) ** 2 for p in points)

    best_x, best_value = None, math.inf
    for x in _starts(free, start, [name for name in grid if name in free]):
        value = math.inf
        for _ in range(restarts):
            x, new_value = nelder_mead(loss, x)
            converged = new_value >= value * (1 - 1e-9)
            value = min(value, new_value)
            if converged:
                break
        if value < best_value:
            best_x, best_value = x, value
    return params_of(best_x), best_value


# Multipliers of a gridded parameter's start value (least_squares_fit).
START_FACTORS = (0.1, 1.0, 10.0)


def _starts(free, start, grid):
    """Start points in log space: `start`, with each parameter in `grid` scaled by every
    combination of START_FACTORS."""
    combos = [()]
    for _ in grid:
        combos = [c + (f,) for c in combos for f in START_FACTORS]
    for combo in combos:
        scale = dict(zip(grid, combo))
        yield [math.log(start[name] * scale.get(name, 1.0)) for name in free]


def round_sig(value, digits=ROUND_DIGITS):
    """value rounded to `digits` significant digits."""
    if value == 0:
        return 0.0
    return round(value, digits - 1 - int(math.floor(math.log10(abs(value)))))


def mean_abs_log_error(log_error, params, points):
    return sum(abs(log_error(params, p)) for p in points) / len(points)


def sensitivities(log_error, params, points, names):
    """d(mean abs log error)/d(constant) for each name, by central differences with a relative
    step SENSITIVITY_STEP at `params` (one-sided, with an absolute step SENSITIVITY_STEP, for a
    constant at 0). Returns name -> (derivative, derivative x constant); the second is the change
    of the error per unit relative change of the constant."""
    result = {}
    for name in names:
        value = params[name]
        up, down = dict(params), dict(params)
        if value == 0:
            up[name] = SENSITIVITY_STEP
            derivative = (mean_abs_log_error(log_error, up, points) -
                          mean_abs_log_error(log_error, params, points)) / SENSITIVITY_STEP
        else:
            h = value * SENSITIVITY_STEP
            up[name], down[name] = value + h, value - h
            derivative = (mean_abs_log_error(log_error, up, points) -
                          mean_abs_log_error(log_error, down, points)) / (2 * h)
        result[name] = (derivative, derivative * value)
    return result


def dominant_rows(log_error, params, points, name, count=4):
    """The `count` rows whose prediction moves most with `name` (|d log prediction / d log
    constant|, by central differences): the rows that set that constant."""
    value = params[name]
    up, down = dict(params), dict(params)
    up[name], down[name] = value * (1 + SENSITIVITY_STEP), value * (1 - SENSITIVITY_STEP)
    leverage = [(abs(log_error(up, p) - log_error(down, p)) / (2 * SENSITIVITY_STEP), p)
                for p in points]
    leverage.sort(key=lambda item: -item[0])
    return [(p.row_id, round_sig(lev)) for lev, p in leverage[:count] if lev > 1e-6]


# ---------------------------------------------------------------------------------------------
# What is fitted per family


@dataclass
class FitSpec:
    """One fit: which rows (the family's chips and sources; for attention its kernels), which
    parameters are free, which are fixed (a value, or borrowed from an earlier fit's result) or
    derived, where the search starts, and why. `dtype` names a DTYPE_SELECTORS entry (16-bit
    rows unless "fp8"); `check_chips` are chips whose rows of the spec's sources and dtype are
    only compared. `anchor` asks for the plateau-anchored variant too (anchored_spec)."""
    family: str
    variant: str
    chips: tuple
    sources: tuple
    free: tuple
    start: dict
    why: str
    fixed: dict = field(default_factory=dict)      # name -> value
    fixed_notes: dict = field(default_factory=dict)  # name -> where the fixed value comes from
    borrowed: dict = field(default_factory=dict)   # name -> (fit key, its name or "x/y", scale)
    derived: dict = field(default_factory=dict)    # name -> (description, function of params)
    kernels: tuple = ()                            # attention: kernels fitted
    check_kernels: tuple = ()                      # attention: kernels only compared
    upper: dict = field(default_factory=dict)
    grid: tuple = ()                               # parameters started from several values
    anchor: bool = False
    dtype: str = "16-bit"                          # DTYPE_SELECTORS key
    check_chips: tuple = ()                        # chips only compared, never fitted

    @property
    def key(self):
        return f"{self.family}/{self.variant}"


# Search starts (not results): a plateau near MAMF's 0.8, half-points of tens of elements, XLA's
# ~5 us floor; the half-points are also started at 0.1x and 10x (GEMM_GRID).
GEMM_START = {"e_max": 0.8, "h_mn": 30.0, "h_k": 60.0, "overhead_s": 5e-6}
GEMM_PARAMS = ("e_max", "h_mn", "h_k", "overhead_s")
GEMM_GRID = ("h_mn", "h_k")
# A half-point fitted below one element (or token) is reported as 0, the term off, and the other
# parameters refitted with it there: f(x, 1) > 0.98 for every dimension (>= 64) in the data, so
# the rows cannot tell such a half-point from 0.
HALF_POINT_FLOOR = 1.0
HALF_POINTS = ("h_mn", "h_k", "s_fwd_nc", "s_fwd_c", "s_bwd_c", "d_half")
# A tile's width: cuBLAS/CUTLASS Hopper GEMM tiles are 128 (or 256) wide, the TPU v4/v5 MXU is
# 128x128 (hardware.md 1.1 "Chip internals"), so the GPU half-points carry over to TPU v5e at
# scale 128 / 128 = 1, the assumption compute_model.cc makes too (kGpuReferenceTile).
GPU_REFERENCE_TILE = 128
TPU_V5E_MXU = 128

GEMM_FITS = [
    FitSpec("a100", "isolated", ("a100",), ("V13", "G1.2"), GEMM_PARAMS, GEMM_START,
            "V13's 18 A100 fp16 GEMMs (shape sweeps, one eager call each) and MAMF's two A100 "
            "SXM best shapes (plateau only). The overhead is V13's per-call harness cost, not a "
            "kernel's; the MAMF rows are too large to feel it.",
            upper={"e_max": 1.0}, grid=GEMM_GRID, anchor=True),
    FitSpec("h100", "isolated", ("h100", "h200"), ("G1.1", "G1.2", "G1.3"), GEMM_PARAMS,
            GEMM_START,
            "XLA's sm_90 bf16 table (19 shapes and its maximum) and MAMF's H100 SXM best shape: "
            "isolated GEMMs at boost clock. The Chillee gist row ran with vboost (flagged): "
            "compared only.",
            upper={"e_max": 1.0}, grid=GEMM_GRID, anchor=True),
    FitSpec("h100", "sustained", ("h200",), ("h200-ours",), GEMM_PARAMS, GEMM_START,
            "Our H200 GEMMs (58 bf16 + 18 fp16, CUDA-graph medians) at the 700 W cap, SM clock "
            "1365-1620 of 1980 MHz (docs/measurements/h200.md): what a training step sustains.",
            upper={"e_max": 1.0}, grid=GEMM_GRID),
    FitSpec("b200", "isolated", ("b200", "gb200"), ("G1.1", "G1.2"), GEMM_PARAMS, GEMM_START,
            "XLA's sm_100_B200 bf16 table (19 shapes) and MAMF's B200 SXM and GB200 bf16 best "
            "shapes, all against the presets' 2250 TF (MAMF's own GB200 peak is 2500).",
            upper={"e_max": 1.0}, grid=GEMM_GRID, anchor=True),
    FitSpec("tpu-v5e", "isolated", ("tpu-v5e",), ("G1.3",), ("e_max", "overhead_s"),
            GEMM_START,
            "Three points only (XLA jnp.matmul 1024^3, 4096^3, 8192^3), all cubes: too few for "
            "four parameters, and cubes cannot tell h_mn from h_k. e_max and the overhead are "
            "fitted (1024^3 sets the overhead: timeit around one call, Python dispatch "
            "included, a harness cost like V13's); the half-points are A100's (V13, M = 8192 "
            "sweeps: tile and k-loop effects) in tile units, x 128/128. Not H100's: XLA's "
            "m = 256 rows on H100 have fewer output tiles than SMs, an under-occupancy a TPU "
            "v5e's single TensorCore does not have, and that inflates H100's half-points.",
            borrowed={"h_mn": ("a100/isolated", "h_mn", TPU_V5E_MXU / GPU_REFERENCE_TILE),
                      "h_k": ("a100/isolated", "h_k", TPU_V5E_MXU / GPU_REFERENCE_TILE)},
            upper={"e_max": 1.0}),
    # FP8 (e4m3 inputs, bf16 output) against the fp8 peaks (FP8_PEAKS). After the 16-bit fits:
    # they borrow from the ones workloads/compute_model.cc uses (hopper h100/sustained,
    # blackwell b200/anchored). No H100 row of XLA's sm_90 fp8 column is in gemm.csv
    # (calibration.md: entries above the 1979 TF dense peak, not physical; README "Left out"),
    # and the sources here exclude G1.1 for h100 anyway.
    FitSpec("h100", "fp8", ("h100", "h200"), ("G1.2",), ("e_max",), GEMM_START,
            "MAMF's H100 SXM fp8_e4m3 and H200 fp8 best shapes (two rows, both large: they set "
            "only the plateau) against the 1979 TF fp8 preset. The shape ramp and overhead are "
            "assumed to be bf16's: borrowed from h100/sustained, the hopper fit "
            "workloads/compute_model.cc uses (no fp8 row at another shape; XLA's sm_90 fp8 column "
            "is not physical and is not in gemm.csv). The plateau is an isolated one (MAMF, "
            "default clocks): no fp8 row measures a Hopper GPU held at its power cap.",
            borrowed={"h_mn": ("h100/sustained", "h_mn", 1.0),
                      "h_k": ("h100/sustained", "h_k", 1.0),
                      "overhead_s": ("h100/sustained", "overhead_s", 1.0)},
            upper={"e_max": 1.0}, dtype="fp8"),
    FitSpec("b200", "fp8", ("b200",), ("G1.1", "G1.2"), ("e_max", "h_mn", "h_k"), GEMM_START,
            "XLA's sm_100_B200 fp8_e4m3 table (19 shapes, f8e4m3fn x f8e4m3fn -> bf16; time "
            "from TF/s as G1.1's bf16 rows) and MAMF's B200 SXM fp8 best shape, against the "
            "4500 TF fp8 preset. The overhead is assumed to be bf16's: borrowed from "
            "b200/anchored, the blackwell fit workloads/compute_model.cc uses (the fp8 table's "
            "smallest rows would otherwise trade it against h_mn). MAMF's GB200 fp8 row is "
            "compared only: MAMF counts that GPU's fp8 peak as 5000 TF, above the 4500 of the "
            "b200 preset gb200 shares.",
            borrowed={"overhead_s": ("b200/anchored", "overhead_s", 1.0)},
            upper={"e_max": 1.0}, grid=GEMM_GRID, anchor=True, dtype="fp8",
            check_chips=("gb200",)),
]

# Search starts (not results); the sequence half-points are also started at 0.1x and 10x.
ATTENTION_START = {"a": 0.7, "a_bwd": 0.7, "s_fwd_nc": 500.0, "s_fwd_c": 1000.0, "s_bwd_c": 3000.0,
                   "d_half": 100.0}
ATTENTION_GRID = ("s_fwd_nc", "s_fwd_c", "s_bwd_c")
SEQ_AND_HEAD_HALVES = ("s_fwd_nc", "s_fwd_c", "s_bwd_c", "d_half")


def _assumed_bwd_full_half(params):
    """s_bwd_nc: no fitted row measures non-causal backward at more than one S, so assume the
    causal-to-full ramp ratio of the forward pass holds for the backward one."""
    return params["s_bwd_c"] * params["s_fwd_nc"] / params["s_fwd_c"]


BWD_FULL_HALF = {"s_bwd_nc": ("s_bwd_c * s_fwd_nc / s_fwd_c (assumed: no rows measure "
                              "non-causal backward at more than one S)", _assumed_bwd_full_half)}


def _assumed_fwd_full_half(params):
    """s_fwd_nc of a kernel measured causal only: its s_fwd_c times h100/fa3's full/causal
    forward ratio (the borrowed nc_over_c)."""
    return params["s_fwd_c"] * params["nc_over_c"]


def _assumed_bwd_full_half_by_ratio(params):
    """s_bwd_nc of a kernel measured causal only: _assumed_bwd_full_half's rule, s_bwd_c *
    s_fwd_nc / s_fwd_c, written as s_bwd_c * nc_over_c (defined when s_fwd_c fits to 0)."""
    return params["s_bwd_c"] * params["nc_over_c"]


# Kernels whose rows are all causal (our H200 SDPA rows): the full-mask half-points follow from
# the causal ones by h100/fa3's ratio s_fwd_nc / s_fwd_c, borrowed as nc_over_c.
FULL_FROM_CAUSAL_HALVES = {
    "s_fwd_nc": ("s_fwd_c * nc_over_c (assumed: no fitted row is non-causal; h100/fa3's "
                 "full/causal forward ratio)", _assumed_fwd_full_half),
    "s_bwd_nc": ("s_bwd_c * nc_over_c = s_bwd_c * s_fwd_nc / s_fwd_c (h100/fa3's rule; no "
                 "fitted row is non-causal)", _assumed_bwd_full_half_by_ratio),
}
# What a causal-only Hopper kernel borrows from h100/fa3: the head-dim term (every such row has
# D = 128) and the full/causal ratio of the forward half-points.
FROM_FA3_FOR_CAUSAL_ONLY = {"d_half": ("h100/fa3", "d_half", 1.0),
                            "nc_over_c": ("h100/fa3", "s_fwd_nc/s_fwd_c", 1.0)}

ATTENTION_FITS = [
    FitSpec("h100", "fa3", ("h100", "h200"), ("G2.1", "G2.2"), ("a",) + SEQ_AND_HEAD_HALVES,
            ATTENTION_START,
            "FA3 rows with a known mask: tritonbench PR #1254 (non-causal fwd, S = 1k-8k), PR "
            "#1267 (causal fwd and bwd, S = 1k-8k; non-causal S = 2k; its non-causal S = 1k and "
            "4k rows are flagged), flash-attention issue #1438 (H100 and H200, D = 64: the only "
            "rows that set d_half). One plateau a for both directions (separate ones, 0.737 fwd "
            "and 0.775 bwd, fit no better: mean error 5.10% vs 5.11%); the ramp differs by "
            "direction and mask (one ramp for both directions: mean 15%, max 51%), so one s_half "
            "per (direction, mask) the rows cover.",
            kernels=("fa3",), check_kernels=("cudnn",), upper={"a": 1.0}, grid=ATTENTION_GRID,
            derived=BWD_FULL_HALF),
    FitSpec("h100", "fa2", ("h100", "h200"), ("G2.1", "G2.2", "h200-ours"),
            ("a", "s_fwd_c", "s_bwd_c"), ATTENTION_START,
            "PyTorch SDPA's flash backend (FlashAttention-2's CUDA kernels, written for Ampere's "
            "mma, not Hopper's wgmma) on our H200 (H100 compute): bf16, causal, D = 128, fwd and "
            "bwd (bwd by difference) at S = 2k, 4k, 8k; its fwd+bwd rows are not fitted (no such "
            "direction in the model). Kernel fa2 (the FA2 package on H100, whose kernels PyTorch "
            "vendors) would enter this fit too, but all its rows are flagged (FA3-paper chart "
            "transcriptions, mask not captured; a statement) and skipped: read as non-causal, "
            "one curve fits both kernels at D = 128 (mean error 3.8% fa2-pytorch, 2.5% fa2), "
            "while this fit predicts them 12.6% low on average. One plateau a for both "
            "directions (separate ones, 0.336 fwd and 0.338 bwd, fit no better: mean 1.47% vs "
            "1.46%). No row is non-causal or has D != 128, so d_half is FA3's and the full-mask "
            "half-points are the causal ones times FA3's s_fwd_nc / s_fwd_c (nc_over_c), "
            "borrowed from h100/fa3 (an assumption; FA3's s_fwd_nc of 450 itself would ramp "
            "FA2's full mask slower than its causal one, 238, and predicts the chart rows 24% "
            "low).",
            kernels=("fa2-pytorch", "fa2"), upper={"a": 1.0}, grid=ATTENTION_GRID,
            borrowed=FROM_FA3_FOR_CAUSAL_ONLY, derived=FULL_FROM_CAUSAL_HALVES),
    FitSpec("h100", "cudnn", ("h100", "h200"), ("G2.1", "G2.2", "h200-ours"),
            ("a", "a_bwd", "s_fwd_c", "s_bwd_c"), ATTENTION_START,
            "cuDNN's fused flash attention (PyTorch SDPA's cuDNN backend, and its default pick, "
            "profiled: cuDNN's sm90 kernels) on our H200 (H100 compute): bf16, causal, D = 128, "
            "fwd and bwd (bwd by difference) at S = 2k, 4k, 8k, two runs each (backend=default "
            "and backend=cudnn; their S = 8k bwd rows, attention.csv:147 and :153, are 19% "
            "apart). The H100 cudnn rows (FA3-paper chart transcriptions, tritonbench issue #141) "
            "are flagged and skipped. The forward rises to 0.65 of peak at S = 8k while the "
            "backward stays at 0.41-0.49, so each direction has its plateau, a forward and "
            "a_bwd backward (one plateau for both fits to mean 7.7%, max 28%: it lands between "
            "them). No row is non-causal or has D != 128: d_half and "
            "the full/causal half-point ratio nc_over_c are borrowed from h100/fa3, as for "
            "h100/fa2 (an assumption).",
            kernels=("cudnn",), upper={"a": 1.0}, grid=ATTENTION_GRID,
            borrowed=FROM_FA3_FOR_CAUSAL_ONLY, derived=FULL_FROM_CAUSAL_HALVES),
    FitSpec("b200", "fa4", ("b200", "gb200"), ("G2.2",), ("a",), ATTENTION_START,
            "flash-attention PR #2280 only: FA4 at one shape (S = 8192, D = 128), fwd and the "
            "faster (2CTA) bwd, causal and not. One S cannot set a ramp, so the half-points are "
            "FA3's on H100 (an assumption: no FA4 row at another S or D) and only the plateau a "
            "is fitted.",
            kernels=("fa4", "fa4-2cta"), check_kernels=("fa4-1cta",), upper={"a": 1.0},
            borrowed={name: ("h100/fa3", name, 1.0) for name in SEQ_AND_HEAD_HALVES},
            derived=BWD_FULL_HALF),
]

# Families with no fittable attention rows, and why.
ATTENTION_NOT_FITTED = {
    "a100": "not fittable: only statements without a shape, mask or direction (calibration.md "
            "G2.2: FA2 'up to 230 TFLOPs/s' = 0.737 of 312; 'around 70% theoretical max')",
    "tpu-v5e": "not fittable: no TPU attention kernel measurements (calibration.md G2: 'Not "
               "found: TPU splash/flash-attention throughput numbers')",
}
FAMILIES = ("a100", "h100", "b200", "tpu-v5e")
# A large square GEMM, at which the sustained/isolated ratio of efficiencies is also reported.
RATIO_SHAPE = (8192, 8192, 8192)


def dtype_selected(point, spec):
    """Whether a point's dtype is one spec.dtype selects (DTYPE_SELECTORS)."""
    return DTYPE_SELECTORS[spec.dtype](point.dtype)


def usable(point, spec):
    """Whether a point enters the fit `spec`: one of the family's chips and the spec's sources,
    of the spec's dtype (16-bit unless it says fp8), no flag, and (attention) one of the spec's
    kernels in a direction the model has."""
    if point.chip not in spec.chips or point.source not in spec.sources or point.flag:
        return False
    if not dtype_selected(point, spec):
        return False
    if isinstance(point, AttentionPoint):
        return point.kernel in spec.kernels and point.direction in ("fwd", "bwd")
    return True


def checked(point, spec):
    """Rows only compared with the fit `spec`: the family's chips (or spec.check_chips), the
    spec's dtype, not fitted because of a flag, because their chip is in spec.check_chips or
    (attention) because they are of a kernel in spec.check_kernels."""
    if (point.chip not in spec.chips + spec.check_chips or not dtype_selected(point, spec) or
            usable(point, spec)):
        return False
    if isinstance(point, AttentionPoint):
        return (point.direction in ("fwd", "bwd") and
                point.kernel in spec.kernels + spec.check_kernels)
    return point.source in spec.sources


def borrowed_value(result, other):
    """A constant of an earlier fit's result: its rounded `other`, or for "x/y" the ratio of its
    rounded x and y (h100/fa2 and h100/cudnn borrow h100/fa3's s_fwd_nc/s_fwd_c)."""
    rounded = result["rounded"]
    if "/" in other:
        numerator, denominator = other.split("/")
        return rounded[numerator] / rounded[denominator]
    return rounded[other]


def resolve_fixed(spec, results):
    """spec.fixed plus the borrowed values, read from earlier results (fit key -> result)."""
    fixed = dict(spec.fixed)
    for name, (key, other, scale) in spec.borrowed.items():
        fixed[name] = borrowed_value(results[key], other) * scale
    return fixed


def with_derived(spec, params):
    """params plus spec's derived parameters, computed from them."""
    params = dict(params)
    for name, (_, function) in spec.derived.items():
        params[name] = function(params)
    return params


def fit_with_floor(spec, rows, log_error, fixed):
    """least_squares_fit of spec's free parameters; a half-point that lands below
    HALF_POINT_FLOOR is fixed at 0 (term off) and the rest refitted. Returns (params, loss,
    names fixed at 0)."""
    free, fixed, zeroed = list(spec.free), dict(fixed), []
    while True:
        params, loss = least_squares_fit(log_error, rows, free, fixed, spec.start, spec.upper,
                                         complete=lambda p: with_derived(spec, p),
                                         grid=spec.grid)
        low = [n for n in free if n in HALF_POINTS and params[n] < HALF_POINT_FLOOR]
        if not low:
            return params, loss, zeroed
        for name in low:
            free.remove(name)
            fixed[name] = 0.0
            zeroed.append(name)


def run_fit(spec, points, log_error, results):
    """Fits one spec on its usable points and describes the result (JSON-ready): the raw and
    rounded constants, where each comes from, the per-row error table computed with the rounded
    constants, its mean and max, the sensitivities, and the rows only compared."""
    rows = [p for p in points if usable(p, spec)]
    if not rows:
        raise ValueError(f"{spec.key}: no usable rows")
    checks = [p for p in points if checked(p, spec)]
    fitted, loss, zeroed = fit_with_floor(spec, rows, log_error, resolve_fixed(spec, results))
    rounded = with_derived(spec, {name: round_sig(value) for name, value in fitted.items()})
    rounded = {name: round_sig(value) for name, value in rounded.items()}
    names = list(spec.free) + [n for n in fitted if n not in spec.free] + list(spec.derived)
    sens = sensitivities(log_error, rounded, rows, [n for n in names if n not in spec.derived])
    constants = {name: _constant_entry(spec, name, fitted, rounded, zeroed, sens, log_error, rows)
                 for name in names}
    return {
        "key": spec.key, "family": spec.family, "variant": spec.variant, "why": spec.why,
        "kind": "attention" if spec.kernels else "gemm",
        "fitted": fitted, "rounded": rounded, "constants": constants, "loss": loss,
        "rows": error_table(log_error, rounded, rows),
        "checks": error_table(log_error, rounded, checks),
        **error_summary(log_error, rounded, rows),
    }


def _constant_entry(spec, name, fitted, rounded, zeroed, sens, log_error, rows):
    """One constant's value, where it comes from and its sensitivity (run_fit)."""
    entry = {"value": rounded[name], "raw": fitted.get(name, rounded[name])}
    if name in zeroed:
        entry["how"] = f"fitted to 0 (below {HALF_POINT_FLOOR:g}: term off)"
    elif name in spec.free:
        entry["how"] = "fitted"
        entry["rows"] = dominant_rows(log_error, rounded, rows, name)
    elif name in spec.borrowed:
        key, other, scale = spec.borrowed[name]
        entry["how"] = f"borrowed: {key} {other} x {scale:g}"
    elif name in spec.derived:
        entry["how"] = "derived: " + spec.derived[name][0]
    else:
        entry["how"] = "fixed: " + spec.fixed_notes.get(name, "")
    if name in sens:
        entry["d_mean_abs_log_error"], entry["d_mean_abs_log_error_dlog"] = sens[name]
    return entry


def error_table(log_error, params, points):
    """Per-row prediction vs measurement (microseconds for GEMMs, fraction of peak for
    attention) and the relative error predicted / measured - 1."""
    table = []
    for p in points:
        measured = p.time_s * 1e6 if isinstance(p, GemmPoint) else p.eff
        error = math.exp(log_error(params, p)) - 1
        table.append({"row": p.row_id, "label": p.label(), "flag": p.flag,
                      "measured": measured, "predicted": measured * (1 + error), "error": error})
    return table


def error_summary(log_error, params, points):
    """Mean and max absolute relative error over the points."""
    errors = [abs(math.exp(log_error(params, p)) - 1) for p in points]
    return {"count": len(errors), "mean_abs_error": sum(errors) / len(errors),
            "max_abs_error": max(errors)}


# Rows that bound the plateau: calibration.md G1.2, the best shape a brute-force search found.
ANCHOR_SOURCES = ("G1.2",)


def kernel_efficiency(point, overhead_s):
    """The fraction of its chip's peak for its dtype (peak_flops: bf16, or fp8 for fp8 rows) a
    GEMM row's FLOPs reached once a per-call `overhead_s` is taken off its time."""
    return point.flops / ((point.time_s - overhead_s) * peak_flops(point))


def anchored_spec(spec, result, points):
    """The plateau-anchored variant of an isolated GEMM fit, or None when it is not needed.
    Needed when the free fit's e_max is above the best kernel efficiency (time less the fitted
    overhead) of the fit's ANCHOR_SOURCES rows, MAMF's brute-force searches for the best shape:
    the shape terms then climb toward a plateau no shape reached, and GEMMs larger than the rows
    would be overpredicted. The variant fixes e_max at that efficiency and refits the rest; it is
    named "anchored" for an "isolated" fit, "<variant>-anchored" for another (b200/fp8-anchored).
    Only rows of the family's first chip anchor it: a GB200 GPU runs at a higher power and peak
    than the b200 preset it shares (MAMF's own GB200 peak is 2500 TF against the preset's 2250),
    so its row would put B200's plateau above what a B200 reached."""
    rows = [p for p in points if usable(p, spec) and p.source in ANCHOR_SOURCES
            and p.chip == spec.chips[0]]
    if not rows:
        return None
    overhead_s = result["rounded"]["overhead_s"]
    best = max(rows, key=lambda p: kernel_efficiency(p, overhead_s))
    ceiling = round_sig(kernel_efficiency(best, overhead_s))
    if result["rounded"]["e_max"] <= ceiling:
        return None
    shape = f"{best.m}x{best.n}x{best.k}" + (f" b={best.batch}" if best.batch != 1 else "")
    variant = "anchored" if spec.variant == "isolated" else f"{spec.variant}-anchored"
    return FitSpec(
        spec.family, variant, spec.chips, spec.sources,
        tuple(n for n in spec.free if n != "e_max"), spec.start,
        f"As {spec.key}, but e_max fixed at the best kernel efficiency of its MAMF rows ("
        f"{best.row_id}, {best.source} {best.chip} {shape}, time less {spec.key}'s overhead): "
        f"the free e_max ({result['rounded']['e_max']:.3g}) is above what a brute-force "
        f"search found, so GEMMs larger than the rows would be overpredicted.",
        fixed={**spec.fixed, "e_max": ceiling},
        fixed_notes={"e_max": f"best MAMF kernel efficiency ({best.row_id})"},
        borrowed=spec.borrowed, upper=spec.upper, grid=spec.grid, dtype=spec.dtype,
        check_chips=spec.check_chips)


SUSTAINED_FP8_WHY = (
    "Derived, not fitted: the fp8 plateau a Hopper GPU sustains at its power cap, h100/fp8's "
    "plateau (MAMF's best shapes) times bf16's throughput ratio at 8192^3 of the sustained fit "
    "to the MAMF-anchored one (our H200 at 700 W against MAMF's harness, so MAMF's own clock "
    "state cancels); ramp and overhead h100/sustained's, as h100/fp8's. An assumption: no fp8 row "
    "measures a Hopper GPU held at its cap, and the cap is taken to lower fp8's throughput as "
    "much as bf16's (fp8 may draw more power a clock, or MAMF's fp8 runs may already have been "
    "power-limited: about +-8%). The rows are MAMF's: the table shows that derating, not an "
    "error of a fit.")


def sustained_fp8(results, points):
    """h100/fp8-sustained (SUSTAINED_FP8_WHY), as run_fit describes a fit, from h100/fp8,
    h100/sustained and h100/anchored in `results`."""
    fp8 = results["h100/fp8"]
    sustained = results["h100/sustained"]["rounded"]
    ratio = sustained_ratio(results)["h100"]["anchored"]["e_at_8192_cubed"]
    rounded = {"e_max": round_sig(fp8["rounded"]["e_max"] * ratio),
               "h_mn": sustained["h_mn"], "h_k": sustained["h_k"],
               "overhead_s": sustained["overhead_s"]}
    spec = next(spec for spec in GEMM_FITS if spec.key == "h100/fp8")
    rows = [p for p in points if usable(p, spec)]
    sens = sensitivities(gemm_log_error, rounded, rows, list(rounded))
    how = {"e_max": (f"derived: h100/fp8 e_max {fp8['rounded']['e_max']:.3g} x h100/sustained "
                     f"over h100/anchored e at 8192^3 {ratio:.3f}"),
           "h_mn": "borrowed: h100/sustained h_mn x 1", "h_k": "borrowed: h100/sustained h_k x 1",
           "overhead_s": "borrowed: h100/sustained overhead_s x 1"}
    return {
        "key": "h100/fp8-sustained", "family": "h100", "variant": "fp8-sustained",
        "why": SUSTAINED_FP8_WHY,
        "kind": "gemm", "fitted": dict(rounded), "rounded": rounded,
        "constants": {name: {"value": value, "raw": value, "how": how[name],
                             "d_mean_abs_log_error": sens[name][0],
                             "d_mean_abs_log_error_dlog": sens[name][1]}
                      for name, value in rounded.items()},
        "loss": None,
        "rows": error_table(gemm_log_error, rounded, rows), "checks": [],
        **error_summary(gemm_log_error, rounded, rows),
    }


def sustained_ratio(results):
    """Per family: sustained / isolated e_max and e(RATIO_SHAPE), against each isolated variant,
    where a sustained fit exists; otherwise a string saying it is unmeasured."""
    ratios = {}
    for family in FAMILIES:
        sustained = results.get(f"{family}/sustained")
        if sustained is None:
            ratios[family] = "unmeasured: no sustained (power-capped) GEMM rows for this family"
            continue
        ratios[family] = {}
        for variant in ("isolated", "anchored"):
            isolated = results.get(f"{family}/{variant}")
            if isolated is None:
                continue
            e_iso = gemm_efficiency(isolated["rounded"], *RATIO_SHAPE)
            e_sus = gemm_efficiency(sustained["rounded"], *RATIO_SHAPE)
            ratios[family][variant] = {
                "e_max": sustained["rounded"]["e_max"] / isolated["rounded"]["e_max"],
                "e_at_8192_cubed": e_sus / e_iso,
                "e_at_8192_cubed_sustained": e_sus, "e_at_8192_cubed_isolated": e_iso}
    return ratios


# ---------------------------------------------------------------------------------------------
# Power cap: kernels timed until their board holds its cap


def load_power_cap(path):
    """power_cap.csv as series: (chip, ref, kernel, shape) -> {state: (row id, TF/s, SM MHz or
    None)}, in the file's order. A series must have one `boost` and one `cap` row."""
    series = {}
    for number, row in read_csv_rows(path):
        shape = "x".join(row[key] for key in ("B", "H", "S", "D"))
        key = (row["chip"], row["ref"], row["kernel"], shape)
        states = series.setdefault(key, {})
        if row["state"] in states:
            raise ValueError(f"power_cap.csv:{number}: a second {row['state']} row for {key}")
        states[row["state"]] = (f"power_cap.csv:{number}", float(row["tflops"]),
                                _float_or_none(row["sm_mhz"]))
    for key, states in series.items():
        if "boost" not in states or "cap" not in states:
            raise ValueError(f"power_cap.csv: series {key} needs a boost and a cap row")
    return series


def power_cap_ratios(series):
    """Per chip: the `cap` over `boost` throughput of its series (the rounded ratio is what
    compute_model.cc compiles), with the rows and, where both are stated, the SM clock ratio."""
    ratios = {}
    for (chip, ref, kernel, shape), states in series.items():
        boost_row, boost, boost_mhz = states["boost"]
        cap_row, cap, cap_mhz = states["cap"]
        entry = {"ref": ref, "kernel": kernel, "shape": shape, "boost_row": boost_row,
                 "cap_row": cap_row, "boost_tflops": boost, "cap_tflops": cap,
                 "ratio": cap / boost, "rounded": round_sig(cap / boost),
                 "clock_ratio": cap_mhz / boost_mhz if boost_mhz and cap_mhz else None}
        if chip in ratios:
            raise ValueError(f"power_cap.csv: two series for {chip}; say which one sets it")
        ratios[chip] = entry
    return ratios


# ---------------------------------------------------------------------------------------------
# Non-GEMM (HBM-bound) kernels: fit h200/nongemm


@dataclass
class KernelPoint:
    """One kernel class at one shape of kernels.csv: the sum of its rows there (layernorm.dx has
    two kernels, so two rows; every other class one). calls and time_s are summed over one
    profiled forward + backward of `layers` layers."""
    lines: list          # 1-based kernels.csv line numbers of the rows summed
    kernels: list        # the CUDA kernels' names, one per row
    chip: str
    shape: str
    cls: str
    h: int
    heads: int
    ffn: int
    batch: int
    seq: int
    layers: int
    calls: int
    time_s: float

    @property
    def row_id(self):
        return "kernels.csv:" + ",".join(map(str, self.lines))

    def label(self):
        return f"{self.row_id:26s} {self.cls:13s} {self.shape}"


def load_kernels(path):
    """kernels.csv as KernelPoints, one per (class, shape), rows of a class at a shape summed, in
    the file's order."""
    points = {}
    for number, row in read_csv_rows(path):
        key = (row["chip"], row["class"], row["shape"])
        dims = {name: int(row[name]) for name in ("h", "heads", "ffn", "batch", "seq", "layers")}
        if key not in points:
            points[key] = KernelPoint([], [], row["chip"], row["shape"], row["class"], calls=0,
                                      time_s=0.0, **dims)
        point = points[key]
        if {name: getattr(point, name) for name in dims} != dims:
            raise ValueError(f"kernels.csv:{number}: {key} has another shape on another row")
        point.lines.append(number)
        point.kernels.append(row["kernel"])
        point.calls += int(row["calls"])
        point.time_s += float(row["total_us"]) * 1e-6
    return list(points.values())


# podsim's op byte counts, per layer, for each kernel class (bf16: BYTES_PER_ELEMENT = 2), as
# workloads/layer_ops.cc and workloads/layer_build.cc build a Megatron-style GPT layer's ops
# (Norm, ElementwiseBackward, AppendMaterializedCore and its backward). With T = seq * batch
# tokens, h = d_model, ffn the MLP width and P = batch * heads * seq^2 the attention-score
# elements of the layer (all seq^2 pairs: the mask is applied to them, not skipped):
#   softmax       4 P              the scores read, the probabilities written
#   softmax.dx    6 P              dY and the saved output in, dX out
#   dropout       5 (P + 2 T h)    the attention-probability dropout and the two hidden dropouts
#                                  (after the attention output and the MLP): bf16 in and out plus
#                                  a 1-byte mask (Korthikanti et al. 2022 sec. 4.1)
#   dropout.dx    5 (P + 2 T h)    dY and the mask in, dX out (PyTorch's masked_scale)
#   layernorm     2 (4 T h + 2*2 h)  two LayerNorms a layer (Norm): x in, y out, the gain and
#                                  bias read (norm_params = 2 h elements)
#   layernorm.dx  2 (10 T h + 2*2*2 h)  ElementwiseBackward of a Norm, two kernels: in, the
#                                  forward's reads (x, gain, bias) and write's size (dY), and
#                                  twice that write's size again (the gain and bias gradients'
#                                  kernel reads x and dY too); out, the forward's reads' size (dX
#                                  and the gain and bias gradients). The 2*2*2 h of the
#                                  parameters moves the fitted fraction by 1e-4 only.
#   gelu          4 T ffn          in and out
#   gelu.dx       6 T ffn          dY and the saved input in, dX out
NONGEMM_BYTES = {
    "softmax": lambda T, h, ffn, P: 4 * P,
    "softmax.dx": lambda T, h, ffn, P: 6 * P,
    "dropout": lambda T, h, ffn, P: 5 * (P + 2 * T * h),
    "dropout.dx": lambda T, h, ffn, P: 5 * (P + 2 * T * h),
    "layernorm": lambda T, h, ffn, P: 2 * (4 * T * h + 2 * BYTES_PER_ELEMENT * h),
    "layernorm.dx": lambda T, h, ffn, P: 2 * (10 * T * h + 2 * 2 * BYTES_PER_ELEMENT * h),
    "gelu": lambda T, h, ffn, P: 4 * T * ffn,
    "gelu.dx": lambda T, h, ffn, P: 6 * T * ffn,
}
NONGEMM_CLASSES = tuple(NONGEMM_BYTES)


def nongemm_bytes(point):
    """podsim's HBM bytes of a KernelPoint's class over its `layers` layers (NONGEMM_BYTES)."""
    tokens = point.seq * point.batch
    scores = point.batch * point.heads * point.seq * point.seq
    return point.layers * NONGEMM_BYTES[point.cls](tokens, point.h, point.ffn, scores)


def nongemm_time(fraction, point):
    """Predicted seconds of a KernelPoint: its calls' overhead plus its bytes at `fraction` of
    its chip's preset HBM bandwidth."""
    return point.calls * KERNEL_OVERHEAD_S + nongemm_bytes(point) / (CHIPS[point.chip][1] *
                                                                     fraction)


def nongemm_fraction(points):
    """The pooled fraction of the HBM bandwidth at which the points' bytes take their time less
    the per-call overhead: sum(bytes) / sum((time - calls * overhead) * hbm_bw)."""
    return (sum(nongemm_bytes(p) for p in points) /
            sum((p.time_s - p.calls * KERNEL_OVERHEAD_S) * CHIPS[p.chip][1] for p in points))


def line_ranges(lines):
    """'5-7', '20-25', '5,9': sorted line numbers with consecutive runs collapsed."""
    lines, runs = sorted(lines), []
    for line in lines:
        if runs and line == runs[-1][1] + 1:
            runs[-1][1] = line
        else:
            runs.append([line, line])
    return ",".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs)


NONGEMM_FIT = {
    "key": "h200/nongemm", "family": "h100", "variant": "nongemm", "chips": ("h200",),
    "why": "hopper's HBM-bound kernel classes (compute_model.cc kHopper*Fraction): the "
           "kernels of our H200 profile of a Megatron-style GPT layer, forward and backward, "
           "bf16, at the 700 W cap (docs/measurements/h200_layer.md, "
           "tools/device/h200_layer_measure.py): three shapes (k22b_tp8, m1p7b, m145b_tp8), "
           "every row at seq 2048, so the softmax rows are all 2048 wide. The kernels are "
           "PyTorch eager's (softmax_warp_forward, fused_dropout_kernel_vec with its Philox "
           "random numbers, vectorized_layer_norm_kernel, ...); Megatron-LM's fused "
           "scale-mask-softmax extends PyTorch's warp softmax, so the softmax classes are "
           "assumed to carry over to it. Per class c, f_c = sum(bytes) / sum((time - calls x "
           "1.25 us) x 4.8e12) over the shapes (layernorm.dx: its two kernels' rows summed per "
           "shape), bytes podsim's byte count of the class's ops (NONGEMM_BYTES). The other GPU "
           "families (a100, blackwell) and TPUs have no kernel profile and keep the HBM "
           "streaming fraction (0.9) for these classes.",
}
# Families with no kernel profile, and what their HBM-bound kernel classes use instead.
_NO_PROFILE = ("not fitted: no kernel profile of {what}; its softmax, dropout, layernorm and "
               "gelu kernels (and their .dx) keep the HBM streaming fraction {fraction:g} "
               "(kHbmFraction)")
NONGEMM_NOT_FITTED = {
    "a100": _NO_PROFILE.format(what="an A100", fraction=HBM_FRACTION),
    "b200": _NO_PROFILE.format(what="a Blackwell GPU (b200, gb200)", fraction=HBM_FRACTION),
    "tpu-v5e": _NO_PROFILE.format(what="a TPU", fraction=HBM_FRACTION),
}


def run_nongemm_fit(points):
    """Fits NONGEMM_FIT's fractions on the KernelPoints of its chips and describes the result
    as run_fit does (JSON-ready): raw and rounded fractions, the kernels.csv lines that set
    each, the per-(class, shape) error table computed with the rounded fractions (measured and
    predicted in microseconds), its mean and max. `count` is the number of kernels.csv rows."""
    points = [p for p in points if p.chip in NONGEMM_FIT["chips"]]
    by_class = {cls: [p for p in points if p.cls == cls] for cls in NONGEMM_CLASSES}
    missing = [cls for cls, mine in by_class.items() if not mine]
    if missing:
        raise ValueError(f"{NONGEMM_FIT['key']}: no rows for {', '.join(missing)}")
    fitted = {cls: nongemm_fraction(mine) for cls, mine in by_class.items()}
    rounded = {cls: round_sig(value) for cls, value in fitted.items()}
    table, constants = [], {}
    for cls, mine in by_class.items():
        rows = []
        for p in mine:
            measured, predicted = p.time_s * 1e6, nongemm_time(rounded[cls], p) * 1e6
            rows.append({"row": p.row_id, "label": p.label(), "flag": "", "class": cls,
                         "shape": p.shape, "kernels": p.kernels, "calls": p.calls,
                         "bytes": nongemm_bytes(p), "measured": measured,
                         "predicted": predicted, "error": predicted / measured - 1})
        table += rows
        lines = [line for p in mine for line in p.lines]
        errors = [r["error"] for r in rows]
        kernels = sorted({kernel for p in mine for kernel in p.kernels})
        constants[cls] = {
            "value": rounded[cls], "raw": fitted[cls],
            "lines": f"kernels.csv:{line_ranges(lines)}", "kernels": kernels,
            "how": (f"pooled over {len(mine)} shapes ({' + '.join(kernels)}); shapes' errors "
                    f"{100 * min(errors):+.1f}% to {100 * max(errors):+.1f}%"),
        }
    errors = [abs(r["error"]) for r in table]
    return {
        "key": NONGEMM_FIT["key"], "family": NONGEMM_FIT["family"],
        "variant": NONGEMM_FIT["variant"], "why": NONGEMM_FIT["why"], "kind": "nongemm",
        "fitted": fitted, "rounded": rounded, "constants": constants,
        "rows": table, "checks": [], "count": sum(len(p.lines) for p in points),
        "points": len(table), "mean_abs_error": sum(errors) / len(errors),
        "max_abs_error": max(errors),
    }


def calibrate(data_dir=DATA_DIR):
    """Runs every fit on the CSVs in data_dir and returns the JSON-ready result: settings,
    per-family GEMM fits (isolated, anchored where needed, sustained where measured, fp8 where
    fp8 rows exist), attention fits (or why not) and non-GEMM kernel fits (or why not: under
    "nongemm", keyed by the profiled chip, h200/nongemm as {"h200": fit}), the
    sustained/isolated ratios, and the power-cap ratios of power_cap.csv's series."""
    gemm = load_gemm(pathlib.Path(data_dir) / "gemm.csv")
    attention = load_attention(pathlib.Path(data_dir) / "attention.csv")
    kernels = load_kernels(pathlib.Path(data_dir) / "kernels.csv")
    power_cap = load_power_cap(pathlib.Path(data_dir) / "power_cap.csv")
    results = {}
    for spec in GEMM_FITS:
        results[spec.key] = run_fit(spec, gemm, gemm_log_error, results)
        extra = anchored_spec(spec, results[spec.key], gemm) if spec.anchor else None
        if extra is not None:
            results[extra.key] = run_fit(extra, gemm, gemm_log_error, results)
    derived = sustained_fp8(results, gemm)
    results[derived["key"]] = derived
    for spec in ATTENTION_FITS:
        results[spec.key] = run_fit(spec, attention, attention_log_error, results)
    nongemm = run_nongemm_fit(kernels)
    results[nongemm["key"]] = nongemm
    families = {}
    for family in FAMILIES:
        mine = [r for r in results.values() if r["family"] == family]
        families[family] = {
            "gemm": {r["variant"]: r for r in mine if r["kind"] == "gemm"},
            "attention": ({r["variant"]: r for r in mine if r["kind"] == "attention"} or
                          ATTENTION_NOT_FITTED.get(family, "not fitted")),
            "nongemm": ({r["key"].split("/")[0]: r for r in mine if r["kind"] == "nongemm"} or
                        NONGEMM_NOT_FITTED.get(family, "not fitted")),
        }
    return {"settings": {"hbm_fraction": HBM_FRACTION, "kernel_overhead_s": KERNEL_OVERHEAD_S,
                         "chips": CHIPS, "fp8_peaks": FP8_PEAKS,
                         "round_digits": ROUND_DIGITS, "sensitivity_step": SENSITIVITY_STEP,
                         "half_point_floor": HALF_POINT_FLOOR},
            "families": families, "sustained_over_isolated": sustained_ratio(results),
            "power_cap": power_cap_ratios(power_cap)}


# ---------------------------------------------------------------------------------------------
# Text output


def _format_value(name, value):
    return f"{value * 1e6:.3g} us" if name.endswith("_s") else f"{value:.3g}"


def print_fit(result, out):
    """One fit as text: constants, their origin and sensitivity, the row table, the summary."""
    unit = "us" if result["kind"] == "gemm" else "fraction of peak"
    out.write(f"\n== {result['key']}: {result['count']} rows ==\n{result['why']}\n")
    out.write("constants (3 significant digits); E = mean abs log error over the rows, "
              "c = the constant:\n")
    for name, c in result["constants"].items():
        line = f"  {name:10s} = {_format_value(name, c['value']):9s} {c['how']}"
        if "d_mean_abs_log_error" in c:
            line += (f"; dE/dc = {c['d_mean_abs_log_error']:.3g}, "
                     f"c dE/dc = {c['d_mean_abs_log_error_dlog']:+.3g}")
        out.write(line + "\n")
        for row, leverage in c.get("rows", []):
            out.write(f"      set most by {row} (d log predicted / d log {name} = "
                      f"{leverage:.2f})\n")
    header = f"  {'row':86s} {'measured':>9s} {'predicted':>9s} {'error':>7s}  [{unit}]\n"
    out.write(header)
    for r in result["rows"]:
        out.write(_table_line(r))
    out.write(f"  mean abs error {100 * result['mean_abs_error']:.2f}%, "
              f"max {100 * result['max_abs_error']:.2f}% over {result['count']} rows\n")
    if result["checks"]:
        out.write("  not fitted, compared only:\n")
        for r in result["checks"]:
            # Unflagged compared rows: another kernel (attention) or a check_chips chip (GEMM).
            compared = "compared kernel" if result["kind"] == "attention" else "compared chip"
            out.write(_table_line(r, r["flag"] or compared))


def print_nongemm_fit(result, out):
    """A non-GEMM kernel fit as text: the fractions and the kernels.csv lines that set them, the
    per-(class, shape) table (microseconds), the summary."""
    out.write(f"\n== {result['key']}: {result['count']} rows ==\n{result['why']}\n")
    bandwidth = f"{CHIPS['h200'][1]:.3g}".replace("e+", "e")
    out.write(f"constants (3 significant digits): per kernel class, the fraction of the h200 "
              f"preset's {bandwidth} B/s, after {KERNEL_OVERHEAD_S * 1e6:g} us a "
              f"call; the kernels.csv lines that set it:\n")
    for name, c in result["constants"].items():
        out.write(f"  {name:12s} = {c['value']:<6.3g} {c['lines']:17s} {c['how']}\n")
    label = f"{'row(s)':26s} {'class':13s} shape"
    out.write(f"  {label:86s} {'measured':>9s} {'predicted':>9s} {'error':>7s}  [us]\n")
    for r in result["rows"]:
        out.write(_table_line(r))
    out.write(f"  mean abs error {100 * result['mean_abs_error']:.2f}%, "
              f"max {100 * result['max_abs_error']:.2f}% over {result['points']} class x shape "
              f"points ({result['count']} rows)\n")


def _table_line(row, why=""):
    text = (f"  {row['label']:86s} {row['measured']:9.4g} {row['predicted']:9.4g} "
            f"{100 * row['error']:+6.1f}%")
    return text + (f"  ({why})\n" if why else "\n")


def print_text(result, out=sys.stdout):
    """The whole calibration as readable text."""
    settings = result["settings"]
    out.write(f"podsim compute calibration from data/calibration; HBM fraction fixed at "
              f"{settings['hbm_fraction']}, HBM-bound kernel overhead at "
              f"{settings['kernel_overhead_s'] * 1e6:g} us a call; errors use the rounded "
              f"constants\n")
    for family, content in result["families"].items():
        out.write(f"\n######## family {family} ########\n")
        for fit in content["gemm"].values():
            print_fit(fit, out)
        if isinstance(content["attention"], str):
            out.write(f"\n== {family} attention: {content['attention']} ==\n")
        else:
            for fit in content["attention"].values():
                print_fit(fit, out)
        if isinstance(content["nongemm"], str):
            out.write(f"\n== {family} nongemm: {content['nongemm']} ==\n")
        else:
            for fit in content["nongemm"].values():
                print_nongemm_fit(fit, out)
    out.write(f"\nsustained (power cap) / isolated GEMM efficiency "
              f"(e at {'x'.join(map(str, RATIO_SHAPE))}):\n")
    for family, ratio in result["sustained_over_isolated"].items():
        if isinstance(ratio, str):
            out.write(f"  {family:8s} {ratio}\n")
            continue
        for variant, r in ratio.items():
            out.write(f"  {family:8s} vs {variant:8s}: e_max {r['e_max']:.3f}; e "
                      f"{r['e_at_8192_cubed']:.3f} ({r['e_at_8192_cubed_sustained']:.3f} / "
                      f"{r['e_at_8192_cubed_isolated']:.3f})\n")
    print_power_cap(result["power_cap"], out)


def print_power_cap(ratios, out):
    """The power-cap series as text: per chip, the kernel's throughput at the cap over off it."""
    out.write("\npower cap: a kernel's throughput at its board's cap / off it (power_cap.csv):\n")
    for chip, r in ratios.items():
        clock = (f"; SM clock {r['clock_ratio']:.3f} of off-cap" if r["clock_ratio"] else "")
        out.write(f"  {chip:8s} {r['rounded']:.3g} = {r['cap_tflops']:g} / {r['boost_tflops']:g} "
                  f"TF/s ({r['cap_row']} / {r['boost_row']}: {r['ref']} {r['kernel']} "
                  f"{r['shape']}){clock}\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--data", default=str(DATA_DIR), help="directory of the CSVs")
    args = parser.parse_args(argv)
    result = calibrate(args.data)
    if args.json:
        json.dump(result, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print_text(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
