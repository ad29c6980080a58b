#!/usr/bin/env python3
"""Fits the GPU matmul efficiency curve of workloads/compute_model.cc to reference/measured.md V13.

Usage: tools/fit_compute_model.py
Plain Python (no numpy): a Nelder-Mead least-squares fit of the relative error (log of predicted
over measured time) of all 18 V13 rows (LLMCompass, measured A100 fp16 GEMM). It prints the fitted
constants, to be copied into workloads/compute_model.cc (rounded as there), and the error of every
row; workloads/compute_model_test.cc (ComputeModelTest.V13*) checks the same rows against the
constants in the .cc.

The model (workloads/compute_model.h):
  t = overhead + max(2mnk / (peak * e(m, n, k)), bytes / (hbm_bw * hbm_fraction))
  e(m, n, k) = e_max * f(m, h_mn) * f(n, h_mn) * f(k, h_k),   f(x, h) = x / (x + h)
  bytes = 2 * (m*k + k*n + m*n)   (fp16 A and B read once, C written once)
Four fitted parameters: e_max, h_mn, h_k and the per-call overhead (here the LLMCompass harness's,
~29 us, not a kernel's). hbm_fraction is not fitted: it is the GPU family's HBM fraction, 0.90,
from our H200 measurements (docs/measurements/h200.md: large copies, reads and HBM-bound GEMMs
reach 0.88-0.90 of the preset bandwidth); V13's two HBM-bound rows (M = 64, 128) alone would give
0.95. Chip numbers are the a100 preset's (topology/chip_spec.cc).
"""
import math

PEAK_FLOPS_PER_S = 3.12e14  # a100 preset bf16/fp16 dense peak.
HBM_BYTES_PER_S = 2.0e12  # a100 preset HBM bandwidth.
BYTES_PER_ELEMENT = 2  # fp16.
HBM_FRACTION = 0.90  # GPU family HBM fraction (docs/measurements/h200.md); fixed, not fitted.

# reference/measured.md V13: M, N, K, measured ms.
V13 = [
    (64, 12288, 12288, 0.1900),
    (128, 12288, 12288, 0.2003),
    (256, 12288, 12288, 0.3185),
    (512, 12288, 12288, 0.6118),
    (1024, 12288, 12288, 1.1990),
    (2048, 12288, 12288, 2.3586),
    (4096, 12288, 12288, 4.4576),
    (8192, 12288, 12288, 8.6216),
    (16384, 12288, 12288, 17.0307),
    (32768, 12288, 12288, 35.4407),
    (8192, 64, 64, 0.0296),
    (8192, 128, 128, 0.0310),
    (8192, 256, 256, 0.0356),
    (8192, 512, 512, 0.0471),
    (8192, 1024, 1024, 0.0927),
    (8192, 2048, 2048, 0.2818),
    (8192, 4096, 4096, 1.0210),
    (8192, 8192, 8192, 3.9614),
]

NAMES = ["e_max", "h_mn", "h_k", "overhead_s"]
START = [0.9, 50.0, 50.0, 30e-6]


def predict(params, m, n, k):
    e_max, h_mn, h_k, overhead_s = params
    efficiency = e_max * m / (m + h_mn) * n / (n + h_mn) * k / (k + h_k)
    compute_s = 2.0 * m * n * k / (PEAK_FLOPS_PER_S * efficiency)
    memory_s = BYTES_PER_ELEMENT * (m * k + k * n + m * n) / (HBM_BYTES_PER_S * HBM_FRACTION)
    return overhead_s + max(compute_s, memory_s)


def loss(params):
    if min(params) <= 0 or params[0] > 1:
        return math.inf
    return sum(math.log(predict(params, m, n, k) / (ms * 1e-3)) ** 2 for m, n, k, ms in V13)


def nelder_mead(f, x0, iterations=20000, step=0.3):
    """Textbook Nelder-Mead (reflection 1, expansion 2, contraction 0.5, shrink 0.5)."""
    dim = len(x0)
    points = [list(x0)] + [[x * (1 + step) if j == i else x for j, x in enumerate(x0)]
                           for i in range(dim)]
    values = [f(p) for p in points]
    for _ in range(iterations):
        order = sorted(range(dim + 1), key=lambda i: values[i])
        points = [points[i] for i in order]
        values = [values[i] for i in order]
        centroid = [sum(p[j] for p in points[:-1]) / dim for j in range(dim)]
        worst = points[-1]
        reflected = [c + (c - w) for c, w in zip(centroid, worst)]
        f_reflected = f(reflected)
        if f_reflected < values[0]:
            expanded = [c + 2 * (c - w) for c, w in zip(centroid, worst)]
            f_expanded = f(expanded)
            points[-1], values[-1] = ((expanded, f_expanded) if f_expanded < f_reflected else
                                      (reflected, f_reflected))
        elif f_reflected < values[-2]:
            points[-1], values[-1] = reflected, f_reflected
        else:
            contracted = [c + 0.5 * (w - c) for c, w in zip(centroid, worst)]
            f_contracted = f(contracted)
            if f_contracted < values[-1]:
                points[-1], values[-1] = contracted, f_contracted
            else:
                for i in range(1, dim + 1):
                    points[i] = [b + 0.5 * (x - b) for b, x in zip(points[0], points[i])]
                    values[i] = f(points[i])
    best = min(range(dim + 1), key=lambda i: values[i])
    return points[best], values[best]


def main():
    params, _ = nelder_mead(loss, START)
    # Restart from the result to make sure the simplex did not stall.
    params, value = nelder_mead(loss, params)
    print("fitted constants (V13, 18 rows, least squares on log time):")
    for name, value_ in zip(NAMES, params):
        print(f"  {name:13s} = {value_:.6g}")
    print(f"  sum of squared log errors = {value:.6g}")
    print(f"{'M':>6} {'N':>6} {'K':>6} {'measured ms':>12} {'fitted ms':>10} {'error':>7}")
    errors = []
    for m, n, k, ms in V13:
        fitted_ms = predict(params, m, n, k) * 1e3
        errors.append((fitted_ms - ms) / ms)
        print(f"{m:6d} {n:6d} {k:6d} {ms:12.4f} {fitted_ms:10.4f} {100 * errors[-1]:+6.1f}%")
    print(f"mean abs error {100 * sum(map(abs, errors)) / len(errors):.2f}%, "
          f"max {100 * max(map(abs, errors)):.2f}%")


if __name__ == "__main__":
    main()
