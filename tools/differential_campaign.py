#!/usr/bin/env python3
"""Random training steps on large GPU fat trees, the quotient (--exact) against every chip.

The differential test in CI (tests/issue_13_differential_test.cc) covers small fabrics, where the
brute-force reference is cheap. This campaign covers the 3-level fat trees (h100:2048 and up,
whose node digits rotate: collectives/fabric_symmetry.h) by sampling layouts (tp, pp, dp, fsdp,
their order, microbatches) of a small model and comparing `podsim train --exact` with
`--every-chip --flows`. Every case must agree to 1e-9 of the step. A run takes minutes:

  python3 tools/differential_campaign.py build/podsim --seed 7 --seconds 540

Exit status 1 when any case differs.
"""
import argparse
import json
import random
import subprocess
import sys
import time

MODEL = "custom:layers=8,d_model=512,ffn=2048,heads=8,kv_heads=8,head_dim=64,vocab=32000"
SYSTEMS = ("h100:2048", "h100:4096", "h100:2048,oversub=2")
# Quotients above this many chips make the reference too slow for the campaign's minutes.
MOST_CHIPS = 256


def train(podsim, system, layout, batch_tokens, extra):
    cmd = [podsim, "train", "--system", system, "--model", MODEL, "--layout", layout,
           "--batch-tokens", str(batch_tokens), "--seq", "1024", "--json", "--max-transfers",
           "2e8"] + extra
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    if run.returncode != 0:
        return None, run.stderr.strip()
    return json.loads(run.stdout), ""


def random_layout(rng):
    system = rng.choice(SYSTEMS)
    gpus = int(system.split(":")[1].split(",")[0])
    tp, pp = rng.choice([1, 2, 4, 8]), rng.choice([1, 2, 4, 8])
    fsdp = rng.choice([1, 2, 4, 8, 16, 32, 64, 128])
    rest = gpus // (tp * pp)
    if rest % fsdp:
        return None
    dp = rest // fsdp
    microbatches = rng.choice([2, 4]) if pp > 1 else 1
    order = "/".join(rng.sample(["dp", "fsdp", "tp", "pp"], 4))
    layout = f"dp={dp},fsdp={fsdp},tp={tp},pp={pp}"
    if pp > 1:
        layout += f",microbatches={microbatches}"
    return system, f"{layout},order={order}", dp * fsdp * microbatches * 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("podsim")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=600)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    deadline = time.time() + args.seconds
    cases = differ = 0
    while time.time() < deadline:
        drawn = random_layout(rng)
        if drawn is None:
            continue
        system, layout, batch_tokens = drawn
        quotient, error = train(args.podsim, system, layout, batch_tokens, ["--exact"])
        if quotient is None:
            print(f"skip {system} {layout}: {error}")
            continue
        chips = quotient["simulation"]["simulated_chips"]
        if chips > MOST_CHIPS:
            print(f"skip {system} {layout}: {chips} chips in the quotient")
            continue
        reference, error = train(args.podsim, system, layout, batch_tokens,
                                 ["--every-chip", "--flows"])
        if reference is None:
            # The reference may pass the work bound where the quotient does not: not a difference.
            refused = "work bound" in error
            print(f"{'skip' if refused else 'FAIL'} {system} {layout}: the reference: {error}")
            differ += 0 if refused else 1
            continue
        cases += 1
        a, b = quotient["step_time_s"], reference["step_time_s"]
        same = abs(a - b) <= 1e-9 * b + 2e-12
        differ += 0 if same else 1
        print(f"{'ok  ' if same else 'DIFF'} {system} {layout}: {a!r} s against {b!r} s "
              f"({chips} chips)", flush=True)
    print(f"{cases} cases, {differ} differ")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
