#!/usr/bin/env python3
"""Process-level mutation fuzzer for whole podsim commands.

Builds commands (topology, collective, train, replay, infer, sweep, run and the bare binary) from
valid templates (README.md's examples, scenario/examples/ and bench/scenarios/, schedules written
by `podsim train --write-schedule` and the example of docs/schedule.md), mutates them as a hostile
user would (empty and huge arguments, hostile numbers and units, huge systems and layouts, invalid
UTF-8 and newlines in arguments and files, truncated or corrupted scenario and schedule files,
misspelled and duplicated flags, odd output paths), runs each in a fresh temporary directory under
a wall-clock timeout and an address-space cap, and classifies what happened.

Outcome classes (docs: `--help`):
  ok, error, usage                 what podsim promises: rc 0; rc 1 with one "podsim: error:" line
                                   on stderr; rc 2 (usage)
  crash                            killed by a signal, rc 134/139, a sanitizer report, or an exit
                                   status podsim never uses
  hang                             ran past --timeout
  memory                           hit the --memory-mb cap (std::bad_alloc, SIGKILL) or the file
                                   size cap
  multi-line-stderr                rc 1 but stderr not one "podsim: error:" line, or it holds raw
                                   control characters or invalid UTF-8
  bad-json                         --json and rc 0 but stdout is not one JSON object (NaN and
                                   Infinity are not JSON); or rc 1 with anything on stdout
  inf-nan-output                   rc 0 and stdout shows inf / nan / $inf
  leftover-temp                    a *.tmp (or other unexpected) file left in the working
                                   directory, an output file left after rc != 0, or an output
                                   .json file that does not parse after rc 0
  clobbered-input                  an input file changed or vanished (e.g. --trace onto it)
  ignored-write-error              rc 0 although an output is a link to /dev/full (the fuzzer
                                   never names /dev/full itself: run as root, an atomic writer
                                   replaces the device node)
  stderr-on-ok                     informational, not a failure: rc 0 with text on stderr

Inputs are a pure function of (--seed, index): `--only I` reruns input I of a seed. Failing inputs
are written out under --out DIR/case-I/ (input files plus cmd.sh) and printed as copy-pasteable
shell lines. Exit status: 0 when no failure class is non-empty, 1 otherwise, 2 on bad usage.

  python3 tools/fuzz_commands.py --binary build/podsim --count 500 --jobs 2
  python3 tools/fuzz_commands.py --seed 7 --only 123 --show 1       # one input again
  python3 tools/fuzz_commands.py --count 300 --minimize             # shrink shown reproducers
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import dataclasses
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

OK_CLASSES = ("ok", "error", "usage")
# Reported with reproducers but not failures (podsim promises nothing about stderr on success).
INFO_CLASSES = ("stderr-on-ok",)
FAILURE_CLASSES = ("crash", "hang", "memory", "multi-line-stderr", "bad-json", "inf-nan-output",
                   "leftover-temp", "clobbered-input", "ignored-write-error")

# ----------------------------------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Case:
    """One input: an argv (bytes, without the binary) and the files of its working directory."""
    index: int
    argv: list[bytes]
    files: dict[str, bytes] = dataclasses.field(default_factory=dict)
    origin: str = ""  # template name and mutations, for the report
    # Output files the command was asked to write (relative to the working directory).
    outputs: list[str] = dataclasses.field(default_factory=list)
    # Symbolic links made in the working directory (name -> target).
    links: dict[str, str] = dataclasses.field(default_factory=dict)


def b(s: str | bytes) -> bytes:
    return s if isinstance(s, bytes) else s.encode("utf-8", "surrogateescape")


# Hostile numbers: empty, zero, negative, huge, tiny, non-finite, past int64 / uint64, units.
HOSTILE_NUMBERS = [
    "", "0", "-0", "-1", "1", "2", "3", "7", "1e308", "-1e308", "1e-300", "4.9e-324", "1e-320",
    "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "9223372036854775807", "9223372036854775808",
    "-9223372036854775808", "18446744073709551615", "18446744073709551616", "1e19", "1e15",
    "2147483647", "2147483648", "4294967296", "65536", "1000000", "1e9", "9" * 40, "4M", "4Mi",
    "4MiB", "4G", "4Gi", "1e15B", "1.5", "0.5", "0x10", "010", "1_000", " 4", "4 ", "+4", "4e",
    "e4", "1e", "-", "--", "4KiKi", "1.5Ki", "-4Ki", "4mb", "4 MiB", "1e-3", "16Ei", "1Pi",
    "9999999999Ti", "1,2", "4\n", "4\xff", "４",
]
# Values that pass validation but are big: they stress the simulation rather than the parser.
BIG_VALID_NUMBERS = ["1e15", "1Gi", "16Gi", "1Ti", "65536", "1048576", "1e12", "2147483647",
                     "4294967296", "9223372036854775807"]

SYSTEMS = [
    "tpu-v5e:16x16", "tpu-v5e:8x4", "tpu-v5e:4x4", "tpu-v5p:4x4x4", "tpu-v5p:4x4x8",
    "tpu-v5p:16x20x28", "tpu-v4p:4x4x4", "tpu7x:4x4x4", "tpu-v6e:8x8", "h100:8", "h100:16",
    "h100:64", "h100:1024", "a100:64", "b200:8", "h200:8", "gb200:72", "ring:8", "ring:64",
    "torus:4x4", "torus:4x4x4", "switch:16", "tpu-v5e:16x16,slices=2", "h100:64,oversub=2",
    "tpu-v5p:4x4x8,wrap=none", "ring:1024,bw=1e11,lat=5e-7",
]
HOSTILE_SYSTEMS = [
    "ring:100000000", "ring:0", "ring:1", "ring:2", "ring:-1", "ring:", "ring", ":", "",
    "torus:128x128x64", "torus:0x4", "torus:1x1x1", "torus:2x2x2x2", "torus:4x", "torus:x4",
    "torus:4x4,bw=0", "torus:4x4,bw=-1", "torus:4x4,bw=nan", "torus:4x4,lat=inf", "h100:65536",
    "h100:0", "h100:9", "h100:7", "h100:1", "h100:16,oversub=0", "h100:16,oversub=1e308",
    "h100:16,oversub=nan", "h100:16,oversub=-1", "tpu-v5e:16x16,slices=0",
    "tpu-v5e:16x16,slices=1000000", "tpu-v5e:4x4,wrap=bogus", "tpu-v5p:4x4x4,wrap=xz",
    "tpu-v5p:0x4x4", "tpu-v5p:16x20x28x2", "tpu-v5e:4x4x4", "gb200:73", "gb200:0",
    "switch:100000", "switch:1", "ring:8,bw=1e-300", "ring:8,lat=1e308", "ring:8,bw=1e308",
    "ring:8,lat=-1", "ring:8,lat=1e-300", "ring:8,bw=1e11,bw=2e11", "ring:8,,", "ring:8,foo=1",
    "ring:8,bw=", "RING:8", "ring:8\n", "ring:\xff", "ring:65536", "ring:16384", "ring:4096",
    "torus:1024x1024", "torus:64x64x64", "switch:65536", "h100:16384", "tpu-v5e:16x16,slices=64",
    "tpu-v5p:16x20x28,slices=16", "ring:8,bw=4.9e-324", "ring:8,lat=nan", "torus:3x5x7",
    "ring:18446744073709551616", "ring:9223372036854775807", "h100:2147483648",
    "tpu-v5e:65536x65536", "torus:65536x65536", "ring:8,bw=1e11,lat=5e-7,bw=1", "ring:８",
    "h100:8,oversub=2", "a100:4096", "tpu-v5p:16x20x28,wrap=none", "ring:3,bw=1e-30",
]
SYSTEM_KINDS = ["ring", "torus", "switch", "h100", "a100", "b200", "tpu-v5e", "tpu-v5p",
                "tpu-v4p", "tpu7x", "tpu-v6e", "gb200", "h200"]

MODELS = ["llama3-8b", "llama3-70b", "llama3-405b", "llama2-13b", "gpt3-175b"]
CUSTOM_BASE = [("layers", "4"), ("d_model", "768"), ("ffn", "3072"), ("heads", "12"),
               ("kv_heads", "12"), ("head_dim", "64"), ("vocab", "1000")]
CUSTOM_OPTIONAL = [("gated", "1"), ("tied", "1"), ("bias", "1"), ("norm", "layer"),
                   ("positions", "2048"), ("dropout", "1")]
HOSTILE_MODELS = [
    "custom:layers=262144,d_model=768,ffn=3072,heads=12,kv_heads=12,head_dim=64,vocab=1000",
    "custom:layers=16777216,d_model=16777216,ffn=16777216,heads=16777216,kv_heads=16777216,"
    "head_dim=16777216,vocab=16777216",
    "custom:", "custom", "custom:layers=4", "LLAMA3-8B", "llama3-8", "llama3-8b ", "gpt3-175b\xff",
    "", "llama3-8b\n", "custom:layers=4,layers=5,d_model=768,ffn=3072,heads=12,kv_heads=12,"
    "head_dim=64,vocab=1000",
]

LAYOUT_KEYS = ["dp", "fsdp", "tp", "pp", "sp", "microbatches", "schedule", "virtual_stages",
               "order", "kv_shard", "tp2"]
HOSTILE_LAYOUTS = [
    "pp=8,microbatches=65536", "pp=8,microbatches=1048576", "tp=0", "tp=-1",
    "dp=18446744073709551616", "tp=8,tp=8", "tp=", "=8", ",", "", "tp=8,,dp=2",
    "pp=2,schedule=interleaved,virtual_stages=1000000", "order=tp/tp/dp", "order=", "sp=1", "sp=2",
    "schedule=bogus", "microbatches=0", "tp=3", "fsdp=1e3", "tp=8\n", "kv_shard=batch",
    "tp2=4", "tp=8,pp=8,dp=16,microbatches=16,schedule=interleaved,virtual_stages=2",
    "pp=64,microbatches=65536", "dp=1,pp=1,tp=1,fsdp=1", "pp=8,microbatches=4294967296",
    "pp=8,schedule=gpipe,microbatches=65536", "fsdp=65536", "dp=2147483648", "tp=８",
    "order=tp/dp/fsdp/pp/sp/x", "pp=1,schedule=interleaved,virtual_stages=2", "tp=\xff",
]
OPS = ["all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast", "p2p"]
ALGORITHMS = ["ring", "bidi-ring", "line", "multi-axis", "tree", "halving-doubling",
              "recursive-doubling", "in-switch", "hierarchical", "direct", "chain", "p2p"]
OUTPUT_PATHS = [
    "out.json", "out.pftrace", "sub/none/x.json", ".", "", "x.pftrace\n", "x\xff.json",
    "full.json", "x.txt", "x.JSON", "y" * 300 + ".json", "trace", "x.pb", "x.textproto",
    "-", "..", "dir/", "a b.json",
]
SCHEDULE_OUTPUTS = ["s2.textproto", "s2.pb", "s2.binpb", "sub/none/s.pb", ".", "", "full.pb",
                    "s2\n.pb", "s2\xff.textproto", "z" * 300 + ".pb", "s2", "-"]

# Templates from README.md's examples (systems kept small enough to run in well under a second
# or two where the example allows it). Each is (name, argv).
TEMPLATES: list[tuple[str, list[str]]] = [
    ("bare", []),
    ("version", ["--version"]),
    ("topology-v5p", ["topology", "tpu-v5p:16x20x28"]),
    ("topology-h100-json", ["topology", "h100:1024", "--json"]),
    ("topology-dot", ["topology", "tpu-v5e:8x4", "--dot"]),
    ("topology-ring-json", ["topology", "ring:8,bw=1e11,lat=5e-7", "--json"]),
    ("collective-allgather", ["collective", "--system", "tpu-v5p:4x4x8", "--op", "all-gather",
                              "--bytes", "1GiB"]),
    ("collective-axes", ["collective", "--system", "tpu-v5e:16x16", "--op", "all-reduce",
                         "--bytes", "256MiB", "--axes", "x"]),
    ("collective-sweep", ["collective", "--system", "h100:8", "--op", "all-reduce",
                          "--sweep-bytes"]),
    ("collective-ring-json", ["collective", "--system", "ring:64,bw=1e11,lat=5e-7", "--op",
                              "all-reduce", "--bytes", "1MiB", "--algorithm", "ring", "--json"]),
    ("collective-p2p", ["collective", "--system", "tpu-v5p:4x4x4", "--op", "p2p", "--src",
                        "0,0,0", "--dst", "2,2,2", "--bytes", "1GB"]),
    ("collective-trace", ["collective", "--system", "h100:16", "--op", "all-reduce", "--bytes",
                          "64MiB", "--trace", "ar.pftrace"]),
    ("collective-ring8", ["collective", "--system", "ring:8", "--op", "all-reduce", "--bytes",
                          "1MiB", "--json"]),
    ("collective-broadcast", ["collective", "--system", "switch:16", "--op", "broadcast",
                              "--src", "3", "--bytes", "16MiB", "--ideal", "--json"]),
    ("collective-alltoall", ["collective", "--system", "torus:4x4", "--op", "all-to-all",
                             "--bytes", "64MiB", "--trace", "a2a.json", "--trace-chips", "0-3"]),
    ("train-default", ["train", "--system", "tpu-v5e:16x16", "--model", "llama3-8b", "--layout",
                       "fsdp=256", "--batch-tokens", "1Mi", "--seq", "4096"]),
    ("train-pipeline", ["train", "--system", "h100:64", "--model", "llama3-8b", "--layout",
                        "tp=8,pp=2,dp=4,microbatches=8", "--batch-tokens", "1Mi", "--seq",
                        "4096", "--json"]),
    ("train-interleaved", ["train", "--system", "h100:16", "--model", "gpt3-175b", "--layout",
                           "tp=8,pp=2,microbatches=4,schedule=interleaved,virtual_stages=2",
                           "--batch-tokens", "256Ki", "--seq", "2048", "--recompute",
                           "selective", "--json"]),
    ("train-order", ["train", "--system", "tpu-v5p:4x4x8", "--model", "llama3-8b", "--layout",
                     "dp=4,fsdp=4,tp=8,order=tp/dp/fsdp", "--batch-tokens", "1Mi", "--seq",
                     "4096"]),
    ("train-trace", ["train", "--system", "h100:8", "--model", "llama3-8b", "--layout", "tp=8",
                     "--batch-tokens", "64Ki", "--seq", "4096", "--attention", "materialized",
                     "--trace", "step.json"]),
    ("train-write-text", ["train", "--system", "tpu-v5e:4x4", "--model", "llama3-8b", "--layout",
                          "fsdp=16", "--batch-tokens", "256Ki", "--seq", "4096",
                          "--write-schedule", "step.textproto"]),
    ("train-write-pb", ["train", "--system", "h100:16", "--model", "llama3-8b", "--layout",
                        "tp=8,dp=2", "--batch-tokens", "128Ki", "--seq", "4096",
                        "--write-schedule", "step.pb", "--json"]),
    ("train-custom", ["train", "--system", "a100:64", "--model",
                      "custom:layers=4,d_model=768,ffn=3072,heads=12,kv_heads=12,head_dim=64,"
                      "vocab=1000", "--layout", "dp=64", "--batch-tokens", "256Ki", "--seq",
                      "1024", "--json"]),
    ("infer-decode", ["infer", "--system", "tpu-v5e:16x16", "--model", "llama3-70b", "--layout",
                      "tp=16,dp=16", "--phase", "decode", "--batch", "256", "--context", "8192"]),
    ("infer-trace", ["infer", "--system", "h100:8", "--model", "llama3-70b", "--layout", "tp=8",
                     "--phase", "decode", "--batch", "64", "--context", "4096", "--trace",
                     "decode.json"]),
    ("infer-disagg", ["infer", "--system", "tpu-v5e:4x4", "--model", "llama3-70b", "--layout",
                      "tp=16", "--batch", "32", "--prefill-len", "8192", "--decode-len", "512",
                      "--chip-hour-usd", "1.2", "--json"]),
    ("infer-batches", ["infer", "--system", "tpu-v5e:16x16", "--model", "llama3-70b", "--layout",
                       "tp=8,dp=32", "--phase", "decode", "--batch", "32,128,512", "--context",
                       "8192", "--weights", "int8"]),
    ("infer-prefill", ["infer", "--system", "h100:8", "--model", "llama3-8b", "--layout", "tp=8",
                       "--phase", "prefill", "--batch", "8", "--context", "2048", "--kv", "int8",
                       "--json"]),
    ("sweep-h100-8", ["sweep", "--system", "h100:8", "--model", "llama3-8b", "--batch-tokens",
                      "1Mi", "--seq", "4096", "--top", "5", "--jobs", "1"]),
    ("sweep-json", ["sweep", "--system", "h100:8", "--model", "llama3-8b", "--batch-tokens",
                    "256Ki", "--seq", "4096", "--json", "--jobs", "1"]),
    ("sweep-csv", ["sweep", "--system", "tpu-v5e:4x4", "--model", "llama3-8b", "--batch-tokens",
                   "256Ki", "--seq", "4096", "--csv", "--top", "3", "--jobs", "1"]),
]

# Flags per command (for insertion / misspelling), with the kind of value each takes.
FLAG_VALUES = {
    "--system": "system", "--op": "op", "--bytes": "number", "--axes": "axes",
    "--algorithm": "algorithm", "--src": "chip", "--dst": "chip", "--sweep-bytes": None,
    "--ideal": None, "--json": None, "--trace": "output", "--trace-chips": "chips",
    "--dump-scenario": None, "--model": "model", "--layout": "layout", "--batch": "batch",
    "--phase": "phase", "--prefill-len": "number", "--context": "number",
    "--decode-len": "number", "--weights": "dtype", "--kv": "dtype", "--chip-hour-usd": "number",
    "--batch-tokens": "number", "--seq": "number", "--jobs": "number", "--top": "number",
    "--exhaustive": None, "--csv": None, "--dot": None, "--recompute": "recompute",
    "--attention": "attention", "--write-schedule": "schedule-output", "--every-chip": None,
    "--flows": None, "--help": None, "--version": None,
}
FULL_OUTPUTS = ("full.json", "full.pb", "full.textproto")
COMMANDS = ["topology", "collective", "train", "replay", "infer", "sweep", "run"]

# Scenario files skipped as seeds: too slow unmutated (the 2-minute full-pod sweep).
SLOW_SCENARIOS = {"sweep_llama3_70b_tpu_v5p.textproto"}

# Schedules written by the binary at start-up (name, argv): small, one text and one binary each.
SCHEDULE_SEEDS = [
    ("sched-fsdp.textproto", ["train", "--system", "tpu-v5e:2x2", "--model",
                              "custom:layers=2,d_model=256,ffn=1024,heads=4,kv_heads=4,"
                              "head_dim=64,vocab=1000", "--layout", "fsdp=4", "--batch-tokens",
                              "16Ki", "--seq", "1024"]),
    ("sched-pp.pb", ["train", "--system", "h100:8", "--model",
                     "custom:layers=4,d_model=256,ffn=1024,heads=4,kv_heads=4,head_dim=64,"
                     "vocab=1000", "--layout", "tp=2,pp=2,dp=2,microbatches=4", "--batch-tokens",
                     "16Ki", "--seq", "1024"]),
    ("sched-pp.textproto", ["train", "--system", "h100:8", "--model",
                            "custom:layers=4,d_model=256,ffn=1024,heads=4,kv_heads=4,head_dim=64,"
                            "vocab=1000", "--layout", "tp=2,pp=2,dp=2,microbatches=4",
                            "--batch-tokens", "16Ki", "--seq", "1024"]),
    ("sched-fsdp.pb", ["train", "--system", "tpu-v5e:2x2", "--model",
                       "custom:layers=2,d_model=256,ffn=1024,heads=4,kv_heads=4,head_dim=64,"
                       "vocab=1000", "--layout", "fsdp=4", "--batch-tokens", "16Ki", "--seq",
                       "1024"]),
]


@dataclasses.dataclass
class Corpus:
    scenarios: list[tuple[str, bytes]]   # (file name, text)
    schedules: list[tuple[str, bytes]]   # (file name: .pb is binary, text otherwise)


def load_scenarios() -> list[tuple[str, bytes]]:
    found = []
    for folder in (REPO / "scenario" / "examples", REPO / "bench" / "scenarios"):
        for path in sorted(folder.glob("*.textproto")):
            if path.name not in SLOW_SCENARIOS:
                found.append((path.name, path.read_bytes()))
    if not found:  # Outside the repository: one scenario of each kind, by hand.
        found = [
            ("collective.textproto", b'system { preset: "ring:8" }\ncollective { op: ALL_REDUCE '
             b'bytes: 1048576 }\noutputs { json: true }\n'),
            ("topology.textproto", b'system { preset: "tpu-v5e:4x4" }\ntopology {}\n'),
        ]
    return found


def docs_schedule() -> bytes | None:
    try:
        text = (REPO / "docs" / "schedule.md").read_text()
    except OSError:
        return None
    m = re.search(r"```textproto\n(.*?)```", text, re.S)
    return m.group(1).encode() if m else None


def make_schedules(binary: str, timeout: float) -> list[tuple[str, bytes]]:
    """Schedules for replay: docs/schedule.md's example and a few written by the binary."""
    out = []
    doc = docs_schedule()
    if doc:
        out.append(("doc.textproto", doc))
    with tempfile.TemporaryDirectory(prefix="podsim-fuzz-seed-") as tmp:
        for name, argv in SCHEDULE_SEEDS:
            path = Path(tmp) / name
            try:
                subprocess.run([binary, *argv, "--write-schedule", str(path)], cwd=tmp,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               timeout=max(timeout, 30), check=False)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if path.is_file() and path.stat().st_size > 0:
                out.append((name, path.read_bytes()))
    return out


# ----------------------------------------------------------------------------------------------
# Mutations
# ----------------------------------------------------------------------------------------------


def hostile_number(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.6:
        return rng.choice(HOSTILE_NUMBERS)
    if r < 0.8:
        return rng.choice(BIG_VALID_NUMBERS)
    # A power of two near a boundary, or a random magnitude with a unit.
    if rng.random() < 0.5:
        e = rng.choice([31, 32, 53, 62, 63, 64, 65, 128, 1024])
        return str(2 ** e + rng.choice([-1, 0, 1]))
    units = ["", "K", "Ki", "M", "Mi", "G", "Gi", "T", "Ti", "P", "E", "e9", "e18", "e300", "KB",
             "MB", "GB", "B", "k", "kib"]
    return f"{rng.randint(1, 999)}{rng.choice(units)}"


def hostile_system(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.45:
        return rng.choice(HOSTILE_SYSTEMS)
    if r < 0.6:
        return rng.choice(SYSTEMS)
    kind = rng.choice(SYSTEM_KINDS)
    dims_n = {"ring": 1, "switch": 1, "h100": 1, "a100": 1, "b200": 1, "h200": 1, "gb200": 1,
              "tpu-v5e": 2, "tpu-v6e": 2, "torus": rng.choice([1, 2, 3, 4])}.get(kind, 3)
    pool = ["0", "1", "2", "3", "4", "8", "16", "17", "64", "128", "1024", "4096", "65536",
            "2147483648", "-4", "", "x", "1e3"]
    dims = "x".join(rng.choice(pool) for _ in range(dims_n))
    params = []
    for key in rng.sample(["bw", "lat", "slices", "wrap", "oversub", "foo"], rng.randint(0, 2)):
        if key == "wrap":
            params.append("wrap=" + rng.choice(["none", "all", "xz", "xyz", "", "bogus"]))
        else:
            params.append(f"{key}={hostile_number(rng)}")
    return ",".join([f"{kind}:{dims}", *params])


def hostile_model(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.25:
        return rng.choice(HOSTILE_MODELS)
    if r < 0.4:
        return rng.choice(MODELS)
    keys = list(CUSTOM_BASE) + rng.sample(CUSTOM_OPTIONAL, rng.randint(0, 3))
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(keys))
        op = rng.random()
        if op < 0.6:
            value = rng.choice([hostile_number(rng), "262144", "16777216", "16777217", "65536",
                                "1048576", "layer", "rms", "bogus"])
            keys[i] = (keys[i][0], value)
        elif op < 0.75:
            del keys[i]
        elif op < 0.9:
            keys.append(keys[i])
        else:
            keys.append((rng.choice(["foo", "Layers", "", "layers "]), "1"))
        if not keys:
            break
    return "custom:" + ",".join(f"{k}={v}" for k, v in keys)


def hostile_layout(rng: random.Random) -> str:
    if rng.random() < 0.4:
        return rng.choice(HOSTILE_LAYOUTS)
    parts = []
    for key in rng.sample(LAYOUT_KEYS, rng.randint(1, 4)):
        if key == "schedule":
            v = rng.choice(["gpipe", "1f1b", "interleaved", "", "bogus"])
        elif key == "order":
            v = "/".join(rng.sample(["tp", "dp", "fsdp", "pp", "sp", "x"], rng.randint(0, 4)))
        elif key == "kv_shard":
            v = rng.choice(["heads", "batch", ""])
        else:
            v = rng.choice([hostile_number(rng), "2", "4", "8", "16", "64", "65536", "1048576"])
        parts.append(f"{key}={v}")
    return ",".join(parts)


def value_for(kind: str | None, rng: random.Random) -> str:
    if kind == "system":
        return hostile_system(rng)
    if kind == "model":
        return hostile_model(rng)
    if kind == "layout":
        return hostile_layout(rng)
    if kind == "op":
        return rng.choice(OPS + ["", "all_reduce", "ALL-REDUCE", "allreduce", "bogus"])
    if kind == "algorithm":
        return rng.choice(ALGORITHMS + ["", "bogus", "Ring"])
    if kind == "axes":
        return rng.choice(["x", "y", "z", "x,y", "x,y,z", "x,x", "", "w", "node", "x,,y", "X"])
    if kind == "chip":
        return rng.choice(["0", "1", "-1", "999999", "0,0,0", "0,0", "3,3,3", "1e308", "x", "",
                           "0,0,0,0", "18446744073709551616", "2,2,2"])
    if kind == "chips":
        return rng.choice(["0-15,32", "all", "0-0", "5-2", "0-18446744073709551616", "", "-",
                           "0-99999999", "1,1,1", "x", "0--1", "63"])
    if kind == "batch":
        return rng.choice([hostile_number(rng), "32,128,512", "1,1,1", ",", "", "0",
                           ",".join(["1"] * 1000), "65536", "32,-1"])
    if kind == "phase":
        return rng.choice(["prefill", "decode", "", "Decode", "both"])
    if kind == "dtype":
        return rng.choice(["bf16", "int8", "int4", "fp8", "", "BF16"])
    if kind == "recompute":
        return rng.choice(["none", "selective", "full", "", "partial"])
    if kind == "attention":
        return rng.choice(["flash", "materialized", "", "sdpa"])
    if kind == "output":
        return rng.choice(OUTPUT_PATHS)
    if kind == "schedule-output":
        return rng.choice(SCHEDULE_OUTPUTS)
    return hostile_number(rng)


def flag_kind(token: bytes) -> str | None:
    return FLAG_VALUES.get(token.decode("utf-8", "replace"))


def is_flag_with_value(token: bytes) -> bool:
    return token.startswith(b"--") and FLAG_VALUES.get(token.decode("utf-8", "replace")) is not None


def value_positions(argv: list[bytes]) -> list[int]:
    """Indices of argv tokens that are values (of a flag, or positional)."""
    out = []
    for i, tok in enumerate(argv):
        if i == 0 and tok.decode("utf-8", "replace") in COMMANDS:
            continue
        if tok.startswith(b"--"):
            continue
        out.append(i)
    return out


def corrupt_bytes(rng: random.Random, value: bytes) -> bytes:
    """Invalid UTF-8, newlines, control characters spliced into a value."""
    junk = rng.choice([b"\xff", b"\n", b"\r\n", b"\t", b"\x1b[31m", b"\xc3", b"\xed\xa0\x80",
                       b"\x7f", b"\xe2\x80\xae", b"\xff\xfe", b"\n\n", b" ", b"\\n", b"%s%n",
                       b"\"", b"'", b"\x01"])
    pos = rng.randint(0, len(value))
    return value[:pos] + junk + value[pos:]


def misspell(rng: random.Random, flag: bytes) -> bytes:
    s = flag.decode("utf-8", "replace")
    body = s[2:]
    choice = rng.randrange(8)
    if choice == 0 and len(body) > 1:
        i = rng.randrange(len(body))
        body = body[:i] + body[i + 1:]
    elif choice == 1 and len(body) > 2:
        i = rng.randrange(len(body) - 1)
        body = body[:i] + body[i + 1] + body[i] + body[i + 2:]
    elif choice == 2:
        body = body.upper()
    elif choice == 3:
        return ("-" + body).encode()
    elif choice == 4:
        return ("---" + body).encode()
    elif choice == 5:
        body = body.replace("-", "_") if "-" in body else body + "s"
    elif choice == 6:
        body = body[: max(1, len(body) // 2)]  # a prefix
    else:
        return b"--" + body.encode() + b"\xff"
    return ("--" + body).encode()


def mutate_text_file(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """One mutation of a protobuf text file (scenario or schedule)."""
    choice = rng.randrange(17)
    lines = data.split(b"\n")
    if choice == 0:
        n = rng.randint(0, len(data))
        return data[:n], f"truncated@{n}"
    if choice == 1 and len(lines) > 1:
        i = rng.randrange(len(lines))
        return b"\n".join(lines[:i] + lines[i + 1:]), f"del-line{i}"
    if choice == 2:
        i = rng.randrange(len(lines))
        return b"\n".join(lines[:i + 1] + lines[i:]), f"dup-line{i}"
    if choice in (3, 4, 5):
        nums = list(re.finditer(rb"(?<![\w.])-?\d+(\.\d+)?([eE][-+]?\d+)?(?![\w.])", data))
        if nums:
            m = rng.choice(nums)
            v = rng.choice(["nan", "inf", "-inf", "1e308", "-1", "0", "18446744073709551616",
                            "9223372036854775808", "1e-300", "4294967296", "2147483648",
                            "65536", "1048576", "0x7fffffffffffffff", "1e19", "-0", "1.5",
                            "16777217", "262144", "99999999999999999999999999"])
            return data[:m.start()] + v.encode() + data[m.end():], f"num:{m.group().decode()}->{v}"
    if choice in (6, 7, 15):
        strs = list(re.finditer(rb'"([^"\\\n]*)"', data))
        if strs:
            m = rng.choice(strs)
            v = rng.choice([b"\xff", b"a\nb", b"", b"\\377\\376", b"\\n", b"x" * 5000,
                            b"\\x00", b"\\u00e9", b"ring:100000000", b"torus:128x128x64",
                            b"h100:65536", b"ring:8,bw=1e-300", b"caf\xc3", b"\x1b[0m",
                            b"pp=8,microbatches=65536", b"\\"])
            return data[:m.start(1)] + v + data[m.end(1):], f"str->{v[:20]!r}"
    if choice == 8:
        pos = rng.randint(0, len(data))
        junk = rng.choice([b"\xff", b"\x00", b"\n", b"}", b"{", b"\"", b"#", b":", b"\xff\xfe"])
        return data[:pos] + junk + data[pos:], f"insert{junk!r}@{pos}"
    if choice == 9:
        field = rng.choice([b"foo: 1\n", b"unknown_field { }\n", b"[ext]: 1\n",
                            b"outputs { trace: \"t.json\" }\n",
                            b"outputs { write_schedule: \"w.pb\" }\n",
                            b"outputs { trace: \"sub/none/t.pftrace\" }\n",
                            b"outputs { trace: \"full.json\" }\n", b"outputs { json: true }\n",
                            b"description: \"\xff\"\n"])
        return data + b"\n" + field, f"append:{field[:24]!r}"
    if choice == 10:
        enums = list(re.finditer(rb":\s*([A-Z][A-Z0-9_]+)\b", data))
        if enums:
            m = rng.choice(enums)
            v = rng.choice([b"BOGUS", b"0", b"99", b"-1", b"all_reduce", b""])
            return data[:m.start(1)] + v + data[m.end(1):], f"enum->{v!r}"
    if choice == 11:
        closes = [m.start() for m in re.finditer(rb"}", data)]
        if closes:
            pos = rng.choice(closes)
            return data[:pos] + data[pos + 1:], "drop-brace"
    if choice == 12:
        depth = rng.choice([50, 101, 1000, 100000])
        return data + b"\nsystem " + b"{ custom " * depth + b"}" * depth + b"\n", f"nest{depth}"
    if choice == 13:
        return b"", "empty"
    if choice == 14:
        # A repeated field many times: a long list.
        n = rng.choice([1000, 100000])
        return data + b"\n" + b"description: \"x\"\n" * n, f"repeat{n}"
    return data.replace(b"\n", b"\r\n"), "crlf"


def mutate_binary_file(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    choice = rng.randrange(8)
    if not data:
        return b"\xff" * rng.randint(1, 64), "junk"
    if choice == 0:
        n = rng.randint(0, len(data))
        return data[:n], f"truncated@{n}"
    if choice in (1, 2):
        buf = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(buf))
            buf[i] = rng.choice([0, 0xff, 0x7f, 0x80, buf[i] ^ (1 << rng.randrange(8))])
        return bytes(buf), "flip"
    if choice == 3:
        pos = rng.randint(0, len(data))
        junk = rng.choice([b"\xff" * 10, b"\x80" * 11, b"\x0a\xff\xff\xff\xff\x0f",
                           b"\x12\xff\xff\xff\xff\x07", b"\x00"])
        return data[:pos] + junk + data[pos:], f"insert@{pos}"
    if choice == 4:
        i = rng.randrange(len(data))
        j = min(len(data), i + rng.randint(1, 256))
        return data[:j] + data[i:j] * rng.randint(1, 50) + data[j:], "dup-chunk"
    if choice == 5:
        return data + data, "doubled"
    if choice == 6:
        # Field 1 (system) or 5 (tokens_per_step) appended with hostile content.
        extra = rng.choice([b"\x0a\x0fring:100000000\x00",
                            b"\x28\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
                            b"\x12\x04\x0a\x02dp\x10\xff\xff\xff\xff\x07",
                            b"\x0a\x10torus:128x128x64"])
        return data + extra, "append-field"
    return bytes(rng.randrange(256) for _ in range(rng.randint(1, 512))), "random"


def outputs_of(argv: list[bytes]) -> list[str]:
    out = []
    for i, tok in enumerate(argv[:-1]):
        if tok in (b"--trace", b"--write-schedule"):
            out.append(argv[i + 1].decode("utf-8", "surrogateescape"))
        for prefix in (b"--trace=", b"--write-schedule="):
            if tok.startswith(prefix):
                out.append(tok[len(prefix):].decode("utf-8", "surrogateescape"))
    if argv and argv[-1].startswith((b"--trace=", b"--write-schedule=")):
        out.append(argv[-1].split(b"=", 1)[1].decode("utf-8", "surrogateescape"))
    return out


def scenario_outputs(files: dict[str, bytes]) -> list[str]:
    out = []
    for data in files.values():
        for m in re.finditer(rb'\b(trace|write_schedule)\s*:\s*"([^"\\\n]*)"', data):
            out.append(m.group(2).decode("utf-8", "surrogateescape"))
    return out


# Relative weights of mutate_argv's 20 mutations (value replacements first; the flag-level ones,
# which mostly end in a usage error, rarer).
MUTATION_WEIGHTS = [10, 10, 10, 10, 5, 6, 3, 4, 2, 5, 5, 5, 1.5, 2, 1, 8, 3, 8, 1, 1.5]
SIM_FLAGS = ["--every-chip", "--flows", "--trace", "--trace-chips", "--json"]
COMMAND_FLAGS = {
    "topology": ["--json", "--dot", "--dump-scenario"],
    "collective": ["--system", "--op", "--bytes", "--axes", "--algorithm", "--src", "--dst",
                   "--sweep-bytes", "--ideal", "--json", "--trace", "--trace-chips",
                   "--dump-scenario"],
    "train": ["--system", "--model", "--layout", "--batch-tokens", "--seq", "--recompute",
              "--attention", "--write-schedule", "--dump-scenario", *SIM_FLAGS],
    "replay": SIM_FLAGS,
    "infer": ["--system", "--model", "--layout", "--batch", "--context", "--decode-len",
              "--weights", "--kv", "--chip-hour-usd", "--trace", "--trace-chips", "--json",
              "--dump-scenario", "--phase", "--prefill-len"],
    "sweep": ["--system", "--model", "--batch-tokens", "--seq", "--jobs", "--top", "--exhaustive",
              "--json", "--csv", "--dump-scenario"],
    "run": ["--json", "--trace", "--dump-scenario"],
}


def mutate_argv(rng: random.Random, argv: list[bytes], notes: list[str]) -> list[bytes]:
    argv = list(argv)
    choice = rng.choices(range(20), weights=MUTATION_WEIGHTS)[0]
    values = value_positions(argv)
    flags = [i for i, t in enumerate(argv) if t.startswith(b"--")]
    if choice <= 3 and values:
        # Replace a value with one hostile for its kind.
        i = rng.choice(values)
        kind = flag_kind(argv[i - 1]) if i > 0 else None
        if kind is None and argv and argv[0] == b"topology":
            kind = "system"
        argv[i] = b(value_for(kind or "number", rng))
        notes.append(f"value[{i}]")
    elif choice == 4 and values:
        argv[rng.choice(values)] = b""
        notes.append("empty-value")
    elif choice == 5 and values:
        i = rng.choice(values)
        argv[i] = corrupt_bytes(rng, argv[i])
        notes.append("corrupt-value")
    elif choice == 6 and flags:
        i = rng.choice(flags)
        argv[i] = misspell(rng, argv[i])
        notes.append("misspell")
    elif choice == 7 and flags:
        i = rng.choice(flags)
        dup = [argv[i]]
        if is_flag_with_value(argv[i]):
            dup.append(b(value_for(flag_kind(argv[i]), rng)) if rng.random() < 0.5 else
                       (argv[i + 1] if i + 1 < len(argv) else b""))
        argv += dup
        notes.append("duplicate-flag")
    elif choice == 8 and flags:
        i = rng.choice(flags)
        n = 2 if is_flag_with_value(argv[i]) and i + 1 < len(argv) else 1
        del argv[i:i + n]
        notes.append("drop-flag")
    elif choice in (9, 10):
        command = argv[0].decode("utf-8", "replace") if argv else ""
        own = COMMAND_FLAGS.get(command)
        flag = rng.choice(own if own and rng.random() < 0.8 else list(FLAG_VALUES))
        argv.append(flag.encode())
        if FLAG_VALUES[flag]:
            argv.append(b(value_for(FLAG_VALUES[flag], rng)))
        notes.append(f"add{flag}")
    elif choice == 11:
        argv += rng.choice([[b"--jobs", b"1024"], [b"--chip-hour-usd", b"1e308"],
                            [b"--jobs", b"0"], [b"--jobs", b"-1"], [b"--top", b"0"],
                            [b"--top", b"18446744073709551616"], [b"--chip-hour-usd", b"nan"],
                            [b"--chip-hour-usd", b"1e-300"], [b"--chip-hour-usd", b"-1"]])
        notes.append("add-known")
    elif choice == 12:
        argv.insert(rng.randint(1 if argv else 0, len(argv)), b"")
        notes.append("empty-positional")
    elif choice == 13 and flags:
        # --flag=value form, or a value glued on a flag.
        i = rng.choice(flags)
        if is_flag_with_value(argv[i]) and i + 1 < len(argv):
            argv[i:i + 2] = [argv[i] + b"=" + argv[i + 1]]
        else:
            argv[i] = argv[i] + b"=" + b(rng.choice(["true", "false", "1", "", "x"]))
        notes.append("equals-form")
    elif choice == 14 and argv:
        if argv[0].decode("utf-8", "replace") in COMMANDS:
            argv[0] = rng.choice(COMMANDS + ["", "Train", "trian", "help", "-"]).encode()
        notes.append("swap-command")
    elif choice == 15:
        # Output paths: trace / write-schedule into odd places.
        argv += rng.choice([[b"--trace", b(rng.choice(OUTPUT_PATHS))],
                            [b"--write-schedule", b(rng.choice(SCHEDULE_OUTPUTS))],
                            [b"--dump-scenario"], [b"--json"], [b"--every-chip"], [b"--flows"],
                            [b"--trace", b"same.json", b"--write-schedule", b"same.json"],
                            [b"--trace", b"a.json", b"--trace", b"b.json"]])
        notes.append("add-output")
    elif choice == 16 and values:
        i = rng.choice(values)
        argv[i] = argv[i] * rng.choice([2, 3, 50, 50, 2000])
        notes.append("repeat-value")
    elif choice == 17 and values:
        i = rng.choice(values)
        argv[i] = b(rng.choice(BIG_VALID_NUMBERS + HOSTILE_SYSTEMS[:12]))
        notes.append("big-value")
    elif choice == 18 and len(argv) > 1:
        del argv[rng.randrange(len(argv))]
        notes.append("drop-token")
    else:
        argv.append(b(rng.choice(["extra", "--", "-", "-x", "--json", "--help", "-h",
                                  "--no-such-flag", "--system"])))
        notes.append("append-token")
    return argv


def generate(index: int, seed: int, corpus: Corpus) -> Case:
    """Input `index` of `seed`: independent of every other index and of --count."""
    rng = random.Random(f"podsim-fuzz:{seed}:{index}")
    files: dict[str, bytes] = {}
    notes: list[str] = []
    r = rng.random()
    if r < 0.14 and corpus.scenarios:
        name, data = rng.choice(corpus.scenarios)
        origin = f"run:{name}"
        for _ in range(rng.choice([0, 1, 1, 1, 2, 3])):
            data, note = mutate_text_file(rng, data)
            notes.append(note)
        fname = rng.choice(["scenario.textproto"] * 6 + ["scenario.pb", "scenario", "s.txt",
                                                         "sc\xffn.textproto", "sc\nn.textproto"])
        files[fname] = data
        argv = [b"run", b(fname)]
        if rng.random() < 0.4:
            argv.append(rng.choice([b"--json", b"--json", b"--dump-scenario"]))
        if rng.random() < 0.15:
            argv += [b"--trace", b(rng.choice(OUTPUT_PATHS))]
        if rng.random() < 0.3:
            argv = mutate_argv(rng, argv, notes)
    elif r < 0.26 and corpus.schedules:
        name, data = rng.choice(corpus.schedules)
        origin = f"replay:{name}"
        binary = name.endswith(".pb")
        for _ in range(rng.choice([0, 1, 1, 1, 2])):
            data, note = (mutate_binary_file if binary else mutate_text_file)(rng, data)
            notes.append(note)
        ext = ".pb" if binary else ".textproto"
        if rng.random() < 0.1:
            ext = rng.choice([".pb", ".textproto", ".binpb", "", ".txt"])  # mismatched names
        fname = "s" + ext
        files[fname] = data
        argv = [b"replay", b(fname)]
        if rng.random() < 0.3:
            argv.append(b"--json")
        if rng.random() < 0.2:
            argv += [b"--trace", b(rng.choice(OUTPUT_PATHS + [fname]))]
        if rng.random() < 0.1:
            argv.append(rng.choice([b"--every-chip", b"--flows"]))
        if rng.random() < 0.05:
            argv[1] = rng.choice([b"missing.pb", b".", b"", b"/dev/null", b"/dev/zero"])
        if rng.random() < 0.3:
            argv = mutate_argv(rng, argv, notes)
    else:
        name, template = rng.choice(TEMPLATES)
        origin = name
        argv = [b(t) for t in template]
        for _ in range(rng.choice([1, 1, 1, 2, 2, 3, 4])):
            argv = mutate_argv(rng, argv, notes)
    case = Case(index=index, argv=argv, files=files,
                origin=origin + (" [" + ", ".join(notes) + "]" if notes else ""))
    case.outputs = outputs_of(argv) + scenario_outputs(files)
    # Outputs named full.* are links to /dev/full (never /dev/full itself: an atomic writer
    # running as root replaces the device node): the write cannot succeed.
    for o in case.outputs:
        if o in FULL_OUTPUTS:
            case.links[o] = "/dev/full"
    # An output that exists already: a failed run must leave it as it was.
    plain = [o for o in case.outputs if re.fullmatch(r"[\w.-]{1,200}", o)
             and o not in (".", "..") and o not in files and o not in case.links]
    if plain and rng.random() < 0.2:
        name = rng.choice(plain)
        files[name] = b"previous contents of " + b(name) + b"\n"
        case.origin += f" [existing {name}]"
    return case


# ----------------------------------------------------------------------------------------------
# Running and classifying
# ----------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Result:
    rc: int | None          # None when killed for the timeout
    timed_out: bool
    term_signal: int        # after a timeout: what ended it (SIGTERM, or SIGKILL past the grace)
    wall_s: float
    maxrss_kb: int
    stdout: bytes
    stderr: bytes
    # Files in the working directory after the run: relative path -> size, and changed inputs.
    files_after: dict[str, int]
    inputs_changed: list[str]
    output_json_bad: list[str]
    links_replaced: list[str] = dataclasses.field(default_factory=list)


STDOUT_CAP = 64 << 20
SANITIZER_MARKERS = (b"AddressSanitizer", b"LeakSanitizer", b"UndefinedBehaviorSanitizer",
                     b"ThreadSanitizer", b"MemorySanitizer", b"runtime error:",
                     b"==ERROR:", b"SUMMARY: ")
MEMORY_MARKERS = (b"std::bad_alloc", b"bad_alloc", b"Cannot allocate memory", b"out of memory",
                  b"allocation-size-too-big", b"allocator is out of memory", b"std::length_error",
                  b"MemoryError")


def _limits(memory_mb: int, file_mb: int):
    def apply():
        os.setsid()
        if memory_mb > 0:
            cap = memory_mb << 20
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        if file_mb > 0:
            cap = file_mb << 20
            resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def _terminate(pid: int, grace: float = 2.0):
    """Stops process group `pid`: SIGTERM, then SIGKILL after `grace` seconds. Returns the
    leader's (wait status, rusage)."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    end = time.monotonic() + grace
    while time.monotonic() < end:
        done, status, rusage = os.wait4(pid, os.WNOHANG)
        if done:
            return status, rusage
        time.sleep(0.01)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _, status, rusage = os.wait4(pid, 0)
    return status, rusage


def _read_capped(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read(STDOUT_CAP)


def run_case(binary: str, case: Case, timeout: float, memory_mb: int, file_mb: int = 2048,
             keep_dir: Path | None = None) -> Result:
    """Runs `case` in a fresh temporary directory (or `keep_dir`) and collects what it left."""
    root = Path(tempfile.mkdtemp(prefix="podsim-fuzz-"))
    try:
        work = keep_dir if keep_dir is not None else root / "work"
        work.mkdir(parents=True, exist_ok=True)
        for name, data in case.files.items():
            (work / os.fsdecode(b(name))).write_bytes(data)
        for name, target in case.links.items():
            os.symlink(target, work / name)
        before = {name: data for name, data in case.files.items()}
        out_path, err_path = root / "stdout", root / "stderr"
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        env["LC_ALL"] = "C.UTF-8"
        start = time.monotonic()
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen([os.fsencode(binary), *case.argv], cwd=work,
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                    preexec_fn=_limits(memory_mb, file_mb))
        deadline = start + timeout
        timed_out = False
        status = None
        rusage = None
        delay = 0.0005
        while True:
            pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                status, rusage = st, ru
                break
            now = time.monotonic()
            if now >= deadline:
                # SIGTERM first (podsim removes its partial output on it), SIGKILL after a grace.
                timed_out = True
                status, rusage = _terminate(proc.pid)
                break
            time.sleep(min(delay, deadline - now))
            delay = min(delay * 2, 0.02)
        wall = time.monotonic() - start
        rc = os.waitstatus_to_exitcode(status)
        proc.returncode = rc
        try:  # Anything the command left running in its process group.
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        files_after: dict[str, int] = {}
        for dirpath, dirnames, filenames in os.walk(work):
            for fn in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                full = Path(dirpath) / fn
                rel = os.fsdecode(full.relative_to(work))
                try:
                    files_after[rel] = full.lstat().st_size
                except OSError:
                    files_after[rel] = -1
        changed = []
        for name, data in before.items():
            p = work / os.fsdecode(b(name))
            try:
                if p.read_bytes() != data:
                    changed.append(name)
            except OSError:
                changed.append(name)
        links_replaced = [n for n in case.links if not os.path.islink(work / n)]
        bad_json = []
        if rc == 0 and not timed_out:
            for rel in files_after:
                if rel.endswith(".json") and rel not in before:
                    p = work / rel
                    try:
                        if p.stat().st_size <= (256 << 20):
                            json.loads(p.read_bytes())
                    except (OSError, ValueError):
                        bad_json.append(rel)
        return Result(rc=None if timed_out else rc, timed_out=timed_out,
                      wall_s=wall if not timed_out else min(wall, timeout),
                      term_signal=-rc if timed_out and rc < 0 else 0,
                      maxrss_kb=rusage.ru_maxrss if rusage else 0,
                      stdout=_read_capped(out_path), stderr=_read_capped(err_path),
                      files_after=files_after, inputs_changed=changed, output_json_bad=bad_json,
                      links_replaced=links_replaced)
    finally:
        shutil.rmtree(root, ignore_errors=True)


INF_NAN = re.compile(rb"(?<![A-Za-z0-9_])[-+]?(?:inf(?:inity)?|nan)(?![A-Za-z0-9_])|\$inf",
                     re.I)
# A double-quoted string on stdout is text podsim echoes (a scenario's description under
# --dump-scenario, a JSON string), not a number it printed: the inf/nan check skips it.
QUOTED = re.compile(rb'"(?:[^"\\\n]|\\.)*"')
CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")


def wants_json(case: Case) -> bool:
    argv = case.argv
    if any(t in (b"--help", b"-h", b"--version", b"--dump-scenario", b"--dot", b"--csv")
           for t in argv):
        return False
    if b"--json" in argv:
        return True
    if argv[:1] == [b"run"]:
        for data in case.files.values():
            if re.search(rb"\bjson\s*:\s*true\b", data) and not re.search(rb"\bcsv\s*:\s*true",
                                                                           data):
                return True
    return False


def one_json_object(stdout: bytes) -> str | None:
    """None when stdout is one JSON object (and nothing else); else what is wrong."""
    def no_constants(name):
        raise ValueError(f"non-JSON constant {name}")
    try:
        text = stdout.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"invalid UTF-8 at byte {e.start}"
    stripped = text.strip()
    if not stripped:
        return "empty stdout"
    try:
        decoder = json.JSONDecoder(parse_constant=no_constants)
        value, end = decoder.raw_decode(stripped)
    except ValueError as e:
        return f"not JSON: {e}"
    if stripped[end:].strip():
        return "more than one JSON value"
    if not isinstance(value, dict):
        return f"a JSON {type(value).__name__}, not an object"
    return None


def is_temp_name(rel: str) -> bool:
    base = os.path.basename(rel)
    # podsim's own temporaries are ".NAME.XXXXXX" (mkstemp) next to the output.
    return (".tmp" in base or base.endswith(("~", ".part", ".partial")) or base.startswith(".#")
            or re.fullmatch(r"\..+\.[A-Za-z0-9]{6}", base) is not None)


def input_has(case: Case, chars: bytes) -> bool:
    blobs = list(case.argv) + list(case.files.values()) + [b(n) for n in case.files]
    return any(c in blob for blob in blobs for c in [bytes([x]) for x in chars])


def stderr_problem(case: Case, err: bytes) -> str | None:
    """What is wrong with an rc-1 stderr (None: one "podsim: error:" line), by likely cause."""
    lines = err.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if any(line.startswith(b"[libprotobuf") for line in lines):
        return "a libprotobuf log line on stderr"
    if len(lines) > 1 and input_has(case, b"\n\r"):
        return "a newline from the input echoed raw (stderr has several lines)"
    if len(lines) != 1:
        return f"{len(lines)} lines on stderr"
    if not lines[0].startswith(b"podsim: error:"):
        return "the stderr line does not start 'podsim: error:'"
    m = CONTROL.search(lines[0])
    if m:
        return f"a raw control character {m.group()!r} on stderr"
    try:
        err.decode("utf-8")
    except UnicodeDecodeError:
        return "invalid UTF-8 echoed on stderr"
    if not err.endswith(b"\n"):
        return "the stderr line has no final newline"
    return None


def classify(case: Case, res: Result) -> tuple[str, list[tuple[str, str]]]:
    """(base outcome, [(failure class, detail)]) for one run."""
    failures: list[tuple[str, str]] = []
    rc = res.rc
    err = res.stderr
    if res.timed_out:
        how = ("; ignored SIGTERM, killed" if res.term_signal == signal.SIGKILL else
               "; exited on SIGTERM" if res.term_signal == signal.SIGTERM else "")
        failures.append(("hang", f"no exit after {res.wall_s:.1f} s{how}"))
        base = "hang"
    else:
        base = {0: "ok", 1: "error", 2: "usage"}.get(rc, f"rc={rc}")
        sanitizer = next((m for m in SANITIZER_MARKERS if m in err), None)
        memory = next((m for m in MEMORY_MARKERS if m in err), None)
        if rc in (-signal.SIGXFSZ, 128 + signal.SIGXFSZ):
            failures.append(("memory", "file size cap (SIGXFSZ)"))
        elif memory is not None and (rc not in (0, 1, 2) or sanitizer is not None):
            failures.append(("memory", f"rc {rc}, stderr has {memory.decode()}"))
        elif rc in (-signal.SIGKILL, 128 + signal.SIGKILL):
            failures.append(("memory", "SIGKILL (the kernel's OOM killer?)"))
        elif sanitizer is not None:
            failures.append(("crash", f"rc {rc}, sanitizer report ({sanitizer.decode()})"))
        elif rc < 0:
            failures.append(("crash", f"killed by {signal.Signals(-rc).name}"))
        elif rc in (134, 139) or rc not in (0, 1, 2):
            failures.append(("crash", f"exit status {rc}"))
    if not res.timed_out and rc == 1:
        problem = stderr_problem(case, err)
        if problem:
            failures.append(("multi-line-stderr", problem))
        if res.stdout:
            failures.append(("bad-json", f"rc 1 with {len(res.stdout)} bytes on stdout"))
    if not res.timed_out and rc == 0:
        if wants_json(case):
            problem = one_json_object(res.stdout)
            if problem:
                failures.append(("bad-json", problem))
        m = INF_NAN.search(QUOTED.sub(b'""', res.stdout))
        if m:
            failures.append(("inf-nan-output", f"stdout shows {m.group().decode('latin-1')!r}"))
        for name in case.links:
            if name in res.links_replaced:
                failures.append(("ignored-write-error", f"rc 0; replaced the link {name} -> "
                                 f"{case.links[name]} instead of writing through it"))
            else:
                failures.append(("ignored-write-error", f"rc 0 with output {name} -> "
                                 f"{case.links[name]}: the write error was ignored"))
        if err.strip() and not any(f[0] == "crash" for f in failures):
            failures.append(("stderr-on-ok", f"rc 0 with stderr: {first_line(err, 80)}"))
    # Files left in the working directory.
    inputs = set(case.files) | set(case.links)
    expected = {os.path.normpath(o) for o in case.outputs if o}
    left = []
    for rel in sorted(res.files_after):
        if rel in inputs:
            continue
        if rel in expected and rc == 0:
            continue
        if is_temp_name(rel):
            left.append(f"temp file {rel!r}")
        elif rel not in expected and not any(rel.startswith(e.rstrip("/") + "/")
                                             for e in expected):
            left.append(f"unexpected file {rel!r}")
        elif rc != 0 and not res.timed_out:
            left.append(f"output {rel!r} left after rc {rc}")
    for rel in res.output_json_bad:
        left.append(f"output {rel!r} is not valid JSON")
    if left:
        failures.append(("leftover-temp", "; ".join(left[:3])))
    # An input that is also an output may change when the command succeeds, never otherwise.
    changed = [n for n in res.inputs_changed if rc != 0 or os.path.normpath(n) not in expected]
    if changed:
        failures.append(("clobbered-input", "changed: " + ", ".join(changed)))
    return base, failures


# ----------------------------------------------------------------------------------------------
# Reporting
# ----------------------------------------------------------------------------------------------


def shell_quote(arg: bytes) -> str:
    """A bash word for `arg`: shlex.quote when printable UTF-8, else $'...' with escapes."""
    try:
        text = arg.decode("utf-8")
        if not CONTROL.search(arg) and "\n" not in text and "\r" not in text:
            return shlex.quote(text)
    except UnicodeDecodeError:
        pass
    out = []
    for byte in arg:
        c = chr(byte)
        if c in "\\'":
            out.append("\\" + c)
        elif 0x20 <= byte < 0x7f:
            out.append(c)
        else:
            out.append(f"\\x{byte:02x}")
    return "$'" + "".join(out) + "'"


def command_line(binary: str, case: Case) -> str:
    return " ".join([shlex.quote(binary)] + [shell_quote(a) for a in case.argv])


def first_line(data: bytes, width: int = 160) -> str:
    line = data.split(b"\n", 1)[0].decode("utf-8", "backslashreplace")
    return line if len(line) <= width else line[:width] + "..."


def signature(cls: str, detail: str, case: Case, res: Result) -> str:
    """A key grouping failures of one likely root cause: the failed check's location for a
    crash, the detail (numbers and quoted text blanked) and the command for the others."""
    def blank(text: str) -> str:
        text = re.sub(r"'[^']*'|\"[^\"]*\"", "'_'", text)
        return re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", text)
    command = case.argv[0].decode("utf-8", "replace") if case.argv else ""
    if cls == "crash":
        err = res.stderr.decode("utf-8", "replace")
        m = re.search(r"([\w./-]+:\d+):? (PODSIM_CHECK failed: [^\n]*?)(?: [a-z]+ of|$| \()",
                      err, re.M)
        if m:
            return f"{os.path.basename(m.group(1))}: {blank(m.group(2))[:120]}"
        m = re.search(r"terminate called after throwing an instance of '([^']+)'", err)
        if m:
            what = first_line(res.stderr.split(b"what():", 1)[-1])
            return f"uncaught {m.group(1)}: {blank(what)}"
        return f"{detail} | {blank(first_line(res.stderr))}"
    if cls in ("memory", "hang", "bad-json", "inf-nan-output", "leftover-temp",
               "clobbered-input", "ignored-write-error"):
        return f"{command}: {blank(detail)}"
    return blank(detail)


def write_reproducer(out_dir: Path, binary: str, case: Case, cls: str, memory_mb: int,
                     timeout: float) -> str:
    """Writes case-I/ (its files and cmd.sh) and returns the shell line that reruns it."""
    case_dir = out_dir / f"case-{case.index}"
    if case_dir.exists():
        shutil.rmtree(case_dir)
    case_dir.mkdir(parents=True)
    for name, data in case.files.items():
        (case_dir / os.fsdecode(b(name))).write_bytes(data)
    cmd = command_line(binary, case)
    for name, target in case.links.items():
        (case_dir / name).unlink(missing_ok=True)
        os.symlink(target, case_dir / name)
        cmd = f"ln -sfn {shlex.quote(target)} {shlex.quote(name)} && {cmd}"
    if cls == "memory":
        cmd = f"ulimit -v {memory_mb << 10} && {cmd}"
    if cls == "hang":
        cmd = f"timeout {max(int(timeout * 3), 30)} {cmd}"
    line = (f"(cd {shlex.quote(str(case_dir))} && {cmd})"
            if case.files or case.outputs or case.links else cmd)
    if len(line) > 1000:  # Too long to read: the script holds it.
        line = f"bash {shlex.quote(str(case_dir / 'cmd.sh'))}  # {len(cmd)}-character command"
    (case_dir / "cmd.sh").write_text("#!/bin/bash\n# " + case.origin.replace("\n", " ") +
                                     "\ncd \"$(dirname \"$0\")\" && " + cmd + "\n")
    return line


def minimize(binary: str, case: Case, cls: str, args, budget: int = 40) -> Case:
    """Greedy shrinking: drop tokens (a flag with its value, or one token), keep what still fails
    with `cls`. At most `budget` runs."""
    runs = 0
    current = case

    def still_fails(argv):
        nonlocal runs
        runs += 1
        trial = dataclasses.replace(current, argv=argv)
        trial.outputs = outputs_of(argv) + scenario_outputs(trial.files)
        res = run_case(binary, trial, args.timeout, args.memory_mb, args.file_mb)
        return trial if any(c == cls for c, _ in classify(trial, res)[1]) else None

    changed = True
    while changed and runs < budget:
        changed = False
        i = len(current.argv) - 1
        while i >= 0 and runs < budget:
            argv = current.argv
            spans = []
            if is_flag_with_value(argv[i]) and i + 1 < len(argv):
                spans.append((i, i + 2))
            spans.append((i, i + 1))
            for lo, hi in spans:
                if lo == 0 and argv[0].decode("utf-8", "replace") in COMMANDS:
                    continue
                trial = still_fails(argv[:lo] + argv[hi:])
                if trial is not None:
                    current = trial
                    changed = True
                    break
            i -= 1
    current.origin = case.origin + " (minimized)"
    return current


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    parser.add_argument("--binary", default="./build/podsim", help="podsim binary")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=500, help="inputs to run")
    parser.add_argument("--start", type=int, default=0, help="first input index")
    parser.add_argument("--only", type=int, action="append", help="run just input I (repeatable)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per run")
    parser.add_argument("--memory-mb", type=int, default=4096,
                        help="address-space cap per run (RLIMIT_AS); 0: none (ASan builds)")
    parser.add_argument("--file-mb", type=int, default=2048, help="file size cap (RLIMIT_FSIZE)")
    parser.add_argument("--jobs", type=int, default=1, help="parallel runs")
    parser.add_argument("--show", type=int, default=5, help="reproducers per failure class")
    parser.add_argument("--out", default=None,
                        help="where reproducers' files go (default: $TMPDIR/podsim-fuzz-seedS)")
    parser.add_argument("--minimize", action="store_true",
                        help="shrink each shown reproducer (greedy, <= 40 runs each)")
    parser.add_argument("--list", action="store_true", help="print the inputs, do not run them")
    parser.add_argument("--verbose", action="store_true", help="print every input's outcome")
    args = parser.parse_args(argv)

    binary = args.binary
    if os.sep in binary and not os.path.isabs(binary):
        binary = os.path.abspath(binary)
    if not args.list and not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        print(f"fuzz_commands: no executable binary at {binary}", file=sys.stderr)
        return 2
    out_dir = Path(args.out or Path(tempfile.gettempdir()) / f"podsim-fuzz-seed{args.seed}")
    out_dir = out_dir.resolve()

    schedules = [] if args.list else make_schedules(binary, args.timeout)
    corpus = Corpus(scenarios=load_scenarios(), schedules=schedules)
    indices = args.only or list(range(args.start, args.start + args.count))
    cases = [generate(i, args.seed, corpus) for i in indices]
    if args.list:
        for c in cases:
            print(f"{c.index:5d} {c.origin}\n      {command_line(binary, c)}")
        return 0

    st = os.stat(binary)
    modified = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(st.st_mtime))
    print(f"podsim fuzz: {binary} ({st.st_size} bytes, modified {modified}), seed {args.seed}, "
          f"{len(cases)} inputs, timeout {args.timeout:g} s, memory cap {args.memory_mb} MiB, "
          f"{args.jobs} job(s); corpus "
          f"{len(corpus.scenarios)} scenarios, {len(corpus.schedules)} schedules", flush=True)
    results: dict[int, tuple[Case, Result, str, list[tuple[str, str]]]] = {}
    lock = threading.Lock()
    skipped: list[int] = []
    started = time.monotonic()

    def work(case: Case):
        try:
            res = run_case(binary, case, args.timeout, args.memory_mb, args.file_mb)
        except OSError as e:  # The fuzzer's own trouble (a file it cannot create): skip it.
            print(f"fuzz_commands: input {case.index} not run: {e}", file=sys.stderr)
            with lock:
                skipped.append(case.index)
            return
        base, failures = classify(case, res)
        with lock:
            results[case.index] = (case, res, base, failures)
            done = len(results)
            if args.verbose:
                tag = ",".join(c for c, _ in failures) or base
                print(f"{case.index:5d} {tag:18s} rc={res.rc} {res.wall_s:6.2f}s "
                      f"{command_line(binary, case)[:200]}", flush=True)
            elif done % 50 == 0 or done + len(skipped) == len(cases):
                print(f"  {done}/{len(cases)} done, {time.monotonic() - started:.0f} s",
                      file=sys.stderr, flush=True)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for f in [pool.submit(work, c) for c in cases]:
            f.result()
    elapsed = time.monotonic() - started

    counts = collections.Counter()
    by_class: dict[str, list[tuple[Case, Result, str]]] = collections.defaultdict(list)
    for index in sorted(results):
        case, res, base, failures = results[index]
        real = [f for f in failures if f[0] not in INFO_CLASSES]
        for cls, detail in failures:
            counts[cls] += 1
            by_class[cls].append((case, res, detail))
        if not real:
            counts[base] += 1
    failing = sum(1 for _, _, _, f in results.values()
                  if any(c not in INFO_CLASSES for c, _ in f))

    print(f"\n{len(results)} inputs in {elapsed:.0f} s; {failing} failing "
          "(an input counts once in each failure class it hits)"
          + (f"; {len(skipped)} not run (fuzzer errors): {skipped[:10]}" if skipped else "")
          + "\n")
    print(f"{'class':22s} {'count':>6s} {'distinct':>8s}")
    groups_by_class = {}
    for cls in OK_CLASSES + FAILURE_CLASSES + INFO_CLASSES:
        groups = collections.OrderedDict()
        for case, res, detail in by_class.get(cls, []):
            groups.setdefault(signature(cls, detail, case, res), []).append((case, res, detail))
        groups_by_class[cls] = groups
        distinct = str(len(groups)) if cls not in OK_CLASSES else ""
        print(f"{cls:22s} {counts.get(cls, 0):6d} {distinct:>8s}")
    other = {k: v for k, v in counts.items()
             if k not in OK_CLASSES + FAILURE_CLASSES + INFO_CLASSES}
    for k, v in sorted(other.items()):
        print(f"{k:22s} {v:6d}")

    for cls in FAILURE_CLASSES + INFO_CLASSES:
        groups = groups_by_class[cls]
        if not groups:
            continue
        note = " (informational: not a failure)" if cls in INFO_CLASSES else ""
        print(f"\n== {cls}{note}: {counts[cls]} inputs, {len(groups)} distinct "
              f"(showing up to {args.show}, shortest of each kind)")
        # One per signature (shortest command first), most frequent signatures first.
        picks = []
        for sig, members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            members = sorted(members, key=lambda m: (len(command_line(binary, m[0])),
                                                     m[0].index))
            picks.append((sig, len(members), members[0]))
        for sig, n, (case, res, detail) in picks[:args.show]:
            if args.minimize:
                case = minimize(binary, case, cls, args)
                res = run_case(binary, case, args.timeout, args.memory_mb, args.file_mb)
                found = [d for c, d in classify(case, res)[1] if c == cls]
                detail = found[0] if found else detail
            line = write_reproducer(out_dir, binary, case, cls, args.memory_mb, args.timeout)
            rc = "timeout" if res.timed_out else res.rc
            print(f"- [{n}x] input {case.index} ({case.origin}): {detail}; rc {rc}, "
                  f"{res.wall_s:.2f} s, maxrss {res.maxrss_kb // 1024} MiB")
            if res.stderr:
                print(f"    stderr: {first_line(res.stderr)}")
            print(f"    {line}")
        if len(picks) > args.show:
            print(f"  ... {len(picks) - args.show} more distinct kinds "
                  f"(--show {len(picks)} to list them)")
    if failing:
        print(f"\nreproducer files: {out_dir}/case-I/ (cmd.sh); rerun one input: "
              f"python3 {sys.argv[0]} --binary {shlex.quote(binary)} --seed {args.seed} "
              "--only I")
    slow = sorted(results.values(), key=lambda r: -r[1].wall_s)[:3]
    print("slowest: " + "; ".join(f"input {c.index} {r.wall_s:.1f} s" for c, r, _, _ in slow))
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
