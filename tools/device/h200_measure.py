#!/usr/bin/env python3
"""Measures GEMM, HBM and attention figures on one NVIDIA GPU (written for the H200).

Usage: PYTHONUNBUFFERED=1 python3 tools/device/h200_measure.py OUTDIR

Needs python3 with PyTorch and a CUDA GPU; installs nothing. Writes into OUTDIR:
  results.json      everything below plus the environment (torch, CUDA, device, settings)
  gemm.csv          bf16/fp16 GEMM sweeps (docs/reference/measured.md V13 shapes) and
                    transformer shapes: time, TFLOP/s, fraction of podsim's H200 bf16 peak
  hbm.csv           device-to-device copy, read-only reduction, elementwise z + x*y
  attention.csv     scaled_dot_product_attention, causal, bf16, head_dim 128, fwd and fwd+bwd
  nvidia_smi_q.txt  `nvidia-smi -q` at the start, clocks/power/performance at the end
  smi_trace.csv     nvidia-smi clock/power/temperature samples every 250 ms during the run

Timing: CUDA events, warm-ups first, median of >= 10 timed repetitions. Small GEMMs are timed
as a CUDA graph of back-to-back launches over rotated input sets (so the inputs are not all
resident in L2 and Python launch overhead is excluded); the eager per-call time is reported too.
Inputs are random (never zeros). The card's clocks and power settings are left alone.

The peaks compared against are podsim's H200 preset (topology/chip_spec.cc, H200()).
"""
import contextlib
import csv
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import time
import traceback

# podsim's H200 preset (topology/chip_spec.cc: H200() inherits H100's bf16 rate).
PRESET = {"chip": "h200", "bf16_flops_per_s": 9.89e14, "hbm_bytes_per_s": 4.8e12}
SOFT_LIMIT_S = 200.0  # Skip optional work past this (the whole run should stay under ~4 min).

T0 = time.time()


def log(msg):
    print(f"[{time.time() - T0:6.1f}s] {msg}", flush=True)


def elapsed():
    return time.time() - T0


def smi(args, timeout=20):
    try:
        r = subprocess.run(["nvidia-smi"] + args, capture_output=True, text=True, timeout=timeout)
        return r.stdout + (("\n[stderr] " + r.stderr) if r.stderr.strip() else "")
    except Exception as e:  # noqa: BLE001 - record and go on
        return f"nvidia-smi {' '.join(args)} failed: {e!r}"


SMI_FIELDS = ("timestamp,pstate,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.draw,"
              "power.limit,temperature.gpu,utilization.gpu")


def smi_snapshot(label):
    out = smi(["--query-gpu=" + SMI_FIELDS, "--format=csv,noheader"]).strip()
    log(f"nvidia-smi [{label}]: {out}")
    return {"label": label, "t_s": round(elapsed(), 1), "fields": SMI_FIELDS, "value": out}


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)

    with open(os.path.join(outdir, "nvidia_smi_q.txt"), "w") as f:
        f.write("=== nvidia-smi -q (start) ===\n")
        f.write(smi(["-q"]))
    trace_file = open(os.path.join(outdir, "smi_trace.csv"), "w")
    tracer = None
    try:
        tracer = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=" + SMI_FIELDS, "--format=csv", "-lms", "250"],
            stdout=trace_file, stderr=subprocess.STDOUT)
    except Exception as e:  # noqa: BLE001
        log(f"smi trace not started: {e!r}")

    import torch
    import torch.nn.functional as F

    results = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "preset": PRESET,
        "env": {},
        "smi": [],
        "gemm": [],
        "hbm": [],
        "attention": [],
        "errors": [],
        "conventions": {
            "gemm_flops": "2*M*N*K; A (MxK) @ B (KxN) row-major ('nn') or A @ W.t() with W (NxK) "
                          "('nt', nn.Linear layout); torch.matmul default (fp32 accumulate)",
            "gemm_time": "ms_graph: CUDA graph of `inner` back-to-back GEMMs over `nsets` rotated "
                         "input sets, per GEMM, median of reps; ms_eager: events around one eager "
                         "call, median of reps",
            "hbm_bytes": "bytes read + bytes written by the op, each tensor once",
            "attention_flops": "forward causal = 4*B*H*T*T*D/2; backward = 2.5x forward; "
                               "fwd+bwd = 3.5x forward",
        },
    }
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(0)
    env = results["env"]
    env["torch"] = torch.__version__
    env["cuda"] = torch.version.cuda
    env["cudnn"] = torch.backends.cudnn.version()
    env["device_name"] = torch.cuda.get_device_name(0)
    env["capability"] = list(torch.cuda.get_device_capability(0))
    env["sm_count"] = props.multi_processor_count
    env["total_memory_bytes"] = props.total_memory
    env["l2_cache_bytes"] = getattr(props, "L2_cache_size", None)
    env["python"] = sys.version.split()[0]
    m = torch.backends.cuda.matmul
    for attr in ("allow_tf32", "allow_bf16_reduced_precision_reduction",
                 "allow_fp16_reduced_precision_reduction"):
        try:
            env["matmul_" + attr] = getattr(m, attr)
        except Exception as e:  # noqa: BLE001
            env["matmul_" + attr] = f"unreadable: {e!r}"
    log(f"env: {json.dumps(env)}")
    results["smi"].append(smi_snapshot("start"))

    def save():
        with open(os.path.join(outdir, "results.json"), "w") as f:
            json.dump(results, f, indent=1)
        for name in ("gemm", "hbm", "attention"):
            rows = results[name]
            if not rows:
                continue
            keys = []
            for r in rows:
                keys += [k for k in r if k not in keys]
            with open(os.path.join(outdir, name + ".csv"), "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=keys)
                w.writeheader()
                w.writerows(rows)

    def error(where, e):
        msg = f"{where}: {e!r}"
        log("ERROR " + msg)
        traceback.print_exc()
        results["errors"].append(msg)

    def time_events(fn, reps, warmup=3, inner=1):
        """Median/min/max ms per call of fn over `reps` event-timed groups of `inner` calls."""
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]
        for s, e in ev:
            s.record()
            for _ in range(inner):
                fn()
            e.record()
        torch.cuda.synchronize()
        t = [s.elapsed_time(e) / inner for s, e in ev]
        return statistics.median(t), min(t), max(t)

    def capture(body):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                body()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            body()
        torch.cuda.synchronize()
        return g

    # ---- sanity: bf16 GEMM agrees with an fp64 reference; graph capture works -------------
    use_graph = True
    try:
        a = torch.randn(512, 768, device=dev, dtype=torch.bfloat16)
        b = torch.randn(768, 1024, device=dev, dtype=torch.bfloat16)
        ref = a.double() @ b.double()
        rel = ((a @ b).double() - ref).norm() / ref.norm()
        env["sanity_bf16_gemm_rel_err"] = float(rel)
        log(f"sanity: bf16 GEMM rel err vs fp64 = {float(rel):.2e}")
        c = torch.empty(512, 1024, device=dev, dtype=torch.bfloat16)
        g = capture(lambda: torch.matmul(a, b, out=c))
        c.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        ok = bool(torch.isfinite(c).all()) and float(
            ((c.double() - ref).norm() / ref.norm())) < 1e-2
        log(f"sanity: graph-captured GEMM ok = {ok}")
        use_graph = ok
        del g, a, b, c, ref
    except Exception as e:  # noqa: BLE001
        error("sanity", e)
        use_graph = False
    env["gemm_timed_with_cuda_graph"] = use_graph

    # ---- GEMM -----------------------------------------------------------------------------
    def gemm(group, M, N, K, dtype, layout="nn", reps=15):
        dname = {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]
        esize = 2
        set_bytes = (M * K + K * N + M * N) * esize
        nsets = max(1, min(64, math.ceil(256 * 2**20 / set_bytes)))
        A = [torch.randn(M, K, device=dev, dtype=dtype) for _ in range(nsets)]
        if layout == "nn":
            B = [torch.randn(K, N, device=dev, dtype=dtype) for _ in range(nsets)]
        else:  # weights stored (N, K) as in nn.Linear; multiply by the transpose view
            B = [torch.randn(N, K, device=dev, dtype=dtype).t() for _ in range(nsets)]
        C = [torch.empty(M, N, device=dev, dtype=dtype) for _ in range(nsets)]
        one = lambda: torch.matmul(A[0], B[0], out=C[0])  # noqa: E731
        ms_eager, _, _ = time_events(one, reps=reps, warmup=3)
        inner = max(1, min(512, math.ceil(2.0 / max(ms_eager, 1e-4))))
        inner = max(inner, nsets) if inner > 1 else 1
        if use_graph:
            def body():
                for i in range(inner):
                    j = i % nsets
                    torch.matmul(A[j], B[j], out=C[j])
            g = capture(body)
            med, lo, hi = time_events(g.replay, reps=reps, warmup=2)
            med, lo, hi = med / inner, lo / inner, hi / inner
            del g
        else:
            cnt = [0]

            def rot():
                j = cnt[0] % nsets
                cnt[0] += 1
                torch.matmul(A[j], B[j], out=C[j])
            med, lo, hi = time_events(rot, reps=reps, warmup=2, inner=inner)
        if not bool(torch.isfinite(C[0]).all()):
            raise RuntimeError(f"non-finite GEMM output {M}x{N}x{K}")
        flops = 2.0 * M * N * K
        tf = flops / (med * 1e-3) / 1e12
        floor_ms = max(flops / PRESET["bf16_flops_per_s"],
                       set_bytes / PRESET["hbm_bytes_per_s"]) * 1e3
        row = {
            "group": group, "dtype": dname, "layout": layout, "M": M, "N": N, "K": K,
            "nsets": nsets, "inner": inner, "reps": reps,
            "ms_graph_median": round(med, 5), "ms_graph_min": round(lo, 5),
            "ms_graph_max": round(hi, 5), "ms_eager_median": round(ms_eager, 5),
            "tflops": round(tf, 1),
            "frac_preset_bf16_peak": round(tf * 1e12 / PRESET["bf16_flops_per_s"], 4),
            "roofline_ms": round(floor_ms, 5), "frac_of_roofline": round(floor_ms / med, 4),
        }
        log(f"GEMM {group:12s} {dname} {layout} M={M:6d} N={N:6d} K={K:6d}  "
            f"{med:9.4f} ms  {tf:7.1f} TF/s  {row['frac_preset_bf16_peak']:.3f} of peak  "
            f"(eager {ms_eager:.4f} ms, inner {inner}, sets {nsets})")
        results["gemm"].append(row)
        del A, B, C

    v13_m = [(m, 12288, 12288) for m in (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)]
    v13_n = [(8192, n, n) for n in (64, 128, 256, 512, 1024, 2048, 4096, 8192)]
    for dtype in (torch.bfloat16, torch.float16):
        for grp, shapes in (("v13_M_sweep", v13_m), ("v13_NK_sweep", v13_n)):
            for M, N, K in shapes:
                if dtype == torch.float16 and elapsed() > SOFT_LIMIT_S * 0.4:
                    break
                try:
                    gemm(grp, M, N, K, dtype)
                except Exception as e:  # noqa: BLE001
                    error(f"gemm {grp} {M}x{N}x{K}", e)
        save()
    results["smi"].append(smi_snapshot("after V13 sweeps"))

    tshapes = [(8192, 10240), (8192, 28672), (28672, 8192), (4096, 14336), (8192, 3584)]
    for layout in ("nn", "nt"):
        for M in (2048, 4096, 8192, 16384):
            for K, N in tshapes:
                if layout == "nt" and elapsed() > SOFT_LIMIT_S * 0.55:
                    break
                try:
                    gemm("transformer", M, N, K, torch.bfloat16, layout=layout)
                except Exception as e:  # noqa: BLE001
                    error(f"gemm transformer {layout} {M}x{N}x{K}", e)
        save()
    torch.cuda.empty_cache()
    results["smi"].append(smi_snapshot("after GEMM"))

    # ---- HBM ------------------------------------------------------------------------------
    def hbm(op, nbytes_per_tensor, fn, bytes_moved, reps=20, extra=None):
        ms, _, _ = time_events(fn, reps=3, warmup=2)
        inner = max(1, min(64, math.ceil(1.0 / max(ms, 1e-4))))
        med, lo, hi = time_events(fn, reps=reps, warmup=1, inner=inner)
        bw = bytes_moved / (med * 1e-3)
        row = {"op": op, "bytes_per_tensor": nbytes_per_tensor,
               "MiB_per_tensor": nbytes_per_tensor // 2**20, "bytes_moved": bytes_moved,
               "inner": inner, "reps": reps, "ms_median": round(med, 5), "ms_min": round(lo, 5),
               "ms_max": round(hi, 5), "GB_per_s": round(bw / 1e9, 1),
               "frac_preset_hbm": round(bw / PRESET["hbm_bytes_per_s"], 4)}
        if extra:
            row.update(extra)
        log(f"HBM {op:22s} {nbytes_per_tensor / 2**20:8.0f} MiB/tensor  {med:8.4f} ms  "
            f"{bw / 1e9:7.1f} GB/s  {row['frac_preset_hbm']:.3f} of preset")
        results["hbm"].append(row)

    bf16 = torch.bfloat16
    for mib in (64, 256, 1024, 2048, 4096, 8192):
        try:
            n = mib * 2**20 // 2
            src = torch.randn(n, device=dev, dtype=bf16)
            dst = torch.empty_like(src)
            hbm("copy (d2d copy_)", n * 2, lambda: dst.copy_(src), 2 * n * 2)
            del src, dst
        except Exception as e:  # noqa: BLE001
            error(f"hbm copy {mib} MiB", e)
    for mib in (256, 1024, 4096):
        try:
            n = mib * 2**20 // 2
            x = torch.randn(n, device=dev, dtype=bf16)
            hbm("read: torch.sum bf16", n * 2, lambda: torch.sum(x), n * 2)
            hbm("read: sum(dtype=fp32)", n * 2, lambda: x.sum(dtype=torch.float32), n * 2)
            del x
        except Exception as e:  # noqa: BLE001
            error(f"hbm read {mib} MiB", e)
    for mib in (256, 1024, 2048):
        try:
            n = mib * 2**20 // 2
            x, y, z = (torch.randn(n, device=dev, dtype=bf16) for _ in range(3))
            o = torch.empty_like(x)
            hbm("ew: addcmul z+x*y", n * 2, lambda: torch.addcmul(z, x, y, out=o), 4 * n * 2,
                extra={"note": "one fused kernel: 3 reads + 1 write"})
            hbm("ew: eager x*y+z", n * 2, lambda: x * y + z, 4 * n * 2,
                extra={"note": "two kernels; bytes counted as 3 reads + 1 write (logical); "
                               "actual traffic 6 tensors = 1.5x"})
            del x, y, z, o
        except Exception as e:  # noqa: BLE001
            error(f"hbm elementwise {mib} MiB", e)
    save()
    torch.cuda.empty_cache()
    results["smi"].append(smi_snapshot("after HBM"))

    # ---- attention ------------------------------------------------------------------------
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        backends = [("default", None), ("flash", [SDPBackend.FLASH_ATTENTION]),
                    ("cudnn", [SDPBackend.CUDNN_ATTENTION]),
                    ("efficient", [SDPBackend.EFFICIENT_ATTENTION])]
    except Exception as e:  # noqa: BLE001
        error("import sdpa_kernel", e)
        backends = [("default", None)]
    H, D, TOKENS = 32, 128, 32768
    for T in (2048, 4096, 8192):
        B = TOKENS // T
        try:
            q, k, v = (torch.randn(B, H, T, D, device=dev, dtype=bf16, requires_grad=True)
                       for _ in range(3))
            go = torch.randn(B, H, T, D, device=dev, dtype=bf16)
        except Exception as e:  # noqa: BLE001
            error(f"attention alloc T={T}", e)
            continue
        fwd_flops = 4.0 * B * H * T * T * D / 2
        for bname, bk in backends:
            if bname != "default" and elapsed() > SOFT_LIMIT_S:
                break
            ctx = (lambda: sdpa_kernel(bk)) if bk else contextlib.nullcontext
            try:
                with ctx():
                    def fwd():
                        with torch.no_grad():
                            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

                    def fwdbwd():
                        q.grad = k.grad = v.grad = None
                        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                        o.backward(go)
                    out = fwd()
                    if not bool(torch.isfinite(out).all()):
                        raise RuntimeError("non-finite attention output")
                    del out
                    f_med, f_lo, f_hi = time_events(fwd, reps=12, warmup=3)
                    fb_med, fb_lo, fb_hi = time_events(fwdbwd, reps=12, warmup=3)
                q.grad = k.grad = v.grad = None
                bwd_ms = fb_med - f_med
                row = {
                    "backend": bname, "B": B, "H": H, "T": T, "D": D, "causal": True,
                    "fwd_ms": round(f_med, 4), "fwd_ms_min": round(f_lo, 4),
                    "fwdbwd_ms": round(fb_med, 4), "fwdbwd_ms_min": round(fb_lo, 4),
                    "bwd_ms_by_difference": round(bwd_ms, 4),
                    "fwd_tflops": round(fwd_flops / (f_med * 1e-3) / 1e12, 1),
                    "fwdbwd_tflops": round(3.5 * fwd_flops / (fb_med * 1e-3) / 1e12, 1),
                    "bwd_tflops": round(2.5 * fwd_flops / (bwd_ms * 1e-3) / 1e12, 1)
                    if bwd_ms > 0 else None,
                }
                row["fwd_frac_preset_bf16_peak"] = round(
                    row["fwd_tflops"] * 1e12 / PRESET["bf16_flops_per_s"], 4)
                row["fwdbwd_frac_preset_bf16_peak"] = round(
                    row["fwdbwd_tflops"] * 1e12 / PRESET["bf16_flops_per_s"], 4)
                log(f"ATTN {bname:9s} B={B:2d} H={H} T={T:5d} D={D}: fwd {f_med:8.3f} ms "
                    f"{row['fwd_tflops']:6.1f} TF/s; fwd+bwd {fb_med:8.3f} ms "
                    f"{row['fwdbwd_tflops']:6.1f} TF/s; bwd {row['bwd_tflops']} TF/s")
                results["attention"].append(row)
            except Exception as e:  # noqa: BLE001
                q.grad = k.grad = v.grad = None
                error(f"attention {bname} T={T}", e)
        save()
        del q, k, v, go
        torch.cuda.empty_cache()

    # Which kernels the default SDPA backend ran (one fwd+bwd at T=4096).
    if elapsed() < SOFT_LIMIT_S:
        try:
            T = 4096
            B = TOKENS // T
            q, k, v = (torch.randn(B, H, T, D, device=dev, dtype=bf16, requires_grad=True)
                       for _ in range(3))
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                o.backward(torch.ones_like(o))
                torch.cuda.synchronize()
            names = []
            for ev in prof.events():
                if str(getattr(ev, "device_type", "")).endswith("CUDA") and ev.name not in names:
                    names.append(ev.name)
            env["sdpa_default_kernels_T4096"] = [n[:160] for n in names][:30]
            log(f"SDPA default kernels: {env['sdpa_default_kernels_T4096']}")
            del q, k, v, o
        except Exception as e:  # noqa: BLE001
            error("profile sdpa", e)

    results["smi"].append(smi_snapshot("end"))
    with open(os.path.join(outdir, "nvidia_smi_q.txt"), "a") as f:
        f.write("\n=== nvidia-smi -q -d CLOCK,POWER,PERFORMANCE,TEMPERATURE (end) ===\n")
        f.write(smi(["-q", "-d", "CLOCK,POWER,PERFORMANCE,TEMPERATURE"]))
    if tracer is not None:
        tracer.terminate()
        try:
            tracer.wait(timeout=5)
        except Exception:  # noqa: BLE001
            tracer.kill()
    trace_file.close()
    results["total_s"] = round(elapsed(), 1)
    save()

    # Short summary last (the run tool returns the tail of the output).
    print("\n==== SUMMARY ====")
    g = [r for r in results["gemm"] if r["dtype"] == "bf16"]
    if g:
        best = max(g, key=lambda r: r["tflops"])
        print(f"max bf16 GEMM {best['tflops']} TF/s ({best['frac_preset_bf16_peak']:.3f} of "
              f"{PRESET['bf16_flops_per_s'] / 1e12:.0f}) at {best['M']}x{best['N']}x{best['K']}")
        for r in g:
            if r["group"].startswith("v13"):
                print(f"  {r['group']:12s} {r['M']:6d} {r['N']:6d} {r['K']:6d} "
                      f"{r['ms_graph_median']:9.4f} ms {r['tflops']:7.1f} TF/s "
                      f"{r['frac_preset_bf16_peak']:.3f}")
    for r in results["hbm"]:
        print(f"  {r['op']:22s} {r['MiB_per_tensor']:6d} MiB {r['GB_per_s']:7.1f} GB/s "
              f"{r['frac_preset_hbm']:.3f}")
    for r in results["attention"]:
        print(f"  attn {r['backend']:9s} T={r['T']:5d} fwd {r['fwd_tflops']} TF/s "
              f"fwd+bwd {r['fwdbwd_tflops']} TF/s")
    print(f"errors: {len(results['errors'])}; total {results['total_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
