#!/usr/bin/env python3
"""Times a Megatron-style GPT layer forward and backward on one GPU (written for the H200).

Usage: PYTHONUNBUFFERED=1 python3 tools/device/h200_layer_measure.py OUTDIR

The layer is Megatron-LM's of 2021-2022 in PyTorch eager: LayerNorm, QKV linear with bias, the
materialized attention (baddbmm, softmax, dropout, bmm), output linear, dropout + residual,
LayerNorm, GeLU MLP, dropout + residual; bf16; autograd for the backward. Three shapes, one tensor-
parallel rank of measured.md's Megatron/Korthikanti runs (no collectives). Each runs forward and
backward back to back for 15 s (sustained, as in training), timed per iteration with CUDA events;
one iteration is profiled per kernel. Writes into OUTDIR:
  layers.json        per shape: median/first/min forward and backward ms per layer, the series
  kernels_<shape>.csv  CUDA kernel time of one forward + backward iteration, by kernel
  smi_trace.csv      nvidia-smi clocks, power and throttle reasons every 200 ms
Needs python3 with PyTorch and a CUDA GPU; installs nothing; leaves clocks and power alone.
"""
import csv, json, math, os, subprocess, sys, time, traceback
import torch
import torch.nn.functional as F

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
T0 = time.time()
def log(m): print(f"[{time.time()-T0:6.1f}s] {m}", flush=True)

smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active",
                        "--format=csv", "-lms", "200"], stdout=open(os.path.join(OUT, "smi_trace.csv"), "w"), stderr=subprocess.STDOUT)
dev = torch.device("cuda")
DT = torch.bfloat16
torch.backends.cuda.matmul.allow_tf32 = False

class Layer(torch.nn.Module):
    def __init__(s, h, heads, hd, f):
        super().__init__()
        q = heads * hd
        s.heads, s.hd, s.q = heads, hd, q
        s.ln1 = torch.nn.LayerNorm(h, dtype=DT, device=dev)
        s.ln2 = torch.nn.LayerNorm(h, dtype=DT, device=dev)
        mk = lambda o, i: torch.nn.Parameter(torch.randn(o, i, dtype=DT, device=dev) * 0.02)
        mb = lambda o: torch.nn.Parameter(torch.zeros(o, dtype=DT, device=dev))
        s.wqkv, s.bqkv = mk(3 * q, h), mb(3 * q)
        s.wo, s.bo = mk(h, q), mb(h)
        s.wup, s.bup = mk(f, h), mb(f)
        s.wdn, s.bdn = mk(h, f), mb(h)
    def forward(s, x):  # x [s, b, h]
        S, B, H = x.shape
        y = s.ln1(x)
        qkv = F.linear(y, s.wqkv, s.bqkv).view(S, B * s.heads, 3 * s.hd)
        q, k, v = qkv.split(s.hd, dim=-1)
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)  # [bh, s, hd]
        buf = torch.empty(B * s.heads, S, S, dtype=DT, device=dev)
        scores = torch.baddbmm(buf, q, k.transpose(1, 2), beta=0.0, alpha=1.0 / math.sqrt(s.hd))
        probs = torch.softmax(scores, dim=-1)
        probs = F.dropout(probs, 0.1, True)
        ctx = torch.bmm(probs, v)  # [bh, s, hd]
        ctx = ctx.view(B, s.heads, S, s.hd).permute(2, 0, 1, 3).reshape(S, B, s.q)
        x = x + F.dropout(F.linear(ctx, s.wo, s.bo), 0.1, True)
        y = s.ln2(x)
        a = F.gelu(F.linear(y, s.wup, s.bup), approximate="tanh")
        return x + F.dropout(F.linear(a, s.wdn, s.bdn), 0.1, True)

def cfg_run(name, h, heads, hd, f, b, S, layers, iters, results):
    log(f"{name}: h={h} heads={heads} hd={hd} f={f} b={b} s={S} layers={layers}")
    model = torch.nn.ModuleList([Layer(h, heads, hd, f) for _ in range(layers)])
    x0 = torch.randn(S, b, h, dtype=DT, device=dev, requires_grad=True)
    def fwd():
        x = x0
        for l in model: x = l(x)
        return x
    g = torch.ones(S, b, h, dtype=DT, device=dev)
    def step():
        fwd().backward(g)
    for _ in range(3): step()
    torch.cuda.synchronize()
    # Sustained: fwd-only and fwd+bwd alternating blocks, per-iteration events.
    rows = []
    t_end = time.time() + iters
    while time.time() < t_end:
        e = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        e[0].record(); out = fwd(); e[1].record(); out.backward(g); e[2].record()
        torch.cuda.synchronize()
        rows.append((e[0].elapsed_time(e[1]), e[1].elapsed_time(e[2])))
        del out
    for p in model.parameters(): p.grad = None
    fw = sorted(r[0] for r in rows); bw = sorted(r[1] for r in rows)
    med = lambda v: v[len(v) // 2]
    res = {"name": name, "h": h, "heads": heads, "hd": hd, "f": f, "b": b, "s": S, "layers": layers,
           "iters": len(rows), "fwd_ms_per_layer_median": med(fw) / layers, "bwd_ms_per_layer_median": med(bw) / layers,
           "fwd_ms_per_layer_first": rows[0][0] / layers, "bwd_ms_per_layer_first": rows[0][1] / layers,
           "fwd_ms_per_layer_min": fw[0] / layers, "bwd_ms_per_layer_min": bw[0] / layers,
           "series": [(round(a / layers, 4), round(c / layers, 4)) for a, c in rows]}
    log(json.dumps({k: v for k, v in res.items() if k != "series"}))
    results.append(res)
    # Per-kernel profile of one fwd+bwd.
    try:
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step(); torch.cuda.synchronize()
        agg = {}
        for ev in prof.events():
            if ev.device_type == torch.autograd.DeviceType.CUDA:
                k = ev.name[:120]
                a = agg.setdefault(k, [0.0, 0])
                a[0] += ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time_total
                a[1] += 1
        with open(os.path.join(OUT, f"kernels_{name}.csv"), "w", newline="") as fh:
            w = csv.writer(fh); w.writerow(["kernel", "total_us", "count"])
            for k, (t, c) in sorted(agg.items(), key=lambda kv: -kv[1][0]): w.writerow([k, round(t, 2), c])
    except Exception:
        log("profile failed: " + traceback.format_exc())
    for p in model.parameters(): p.grad = None
    del model, x0, g
    torch.cuda.empty_cache()

results = []
env = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(0)}
log(json.dumps(env))
try:
    # Korthikanti 22B, one tensor-parallel rank of 8 (no all-reduce): h=6144, 8 heads of 96, ffn 3072, b=4.
    cfg_run("k22b_tp8", 6144, 8, 96, 3072, 4, 2048, 4, 15, results)
    # Megatron Table 1 1.7B (tp=1, micro-batch 16): h=2304, 24 heads of 96, ffn 9216.
    cfg_run("m1p7b", 2304, 24, 96, 9216, 16, 2048, 2, 15, results)
    # Megatron Table 1 145.6B rank (tp=8, micro-batch 2): h=12288, 12 heads of 128, ffn 6144.
    cfg_run("m145b_tp8", 12288, 12, 128, 6144, 2, 2048, 4, 15, results)
except Exception:
    log(traceback.format_exc())
json.dump({"env": env, "results": results}, open(os.path.join(OUT, "layers.json"), "w"), indent=1)
smi.terminate()
log("done")
