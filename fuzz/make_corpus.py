#!/usr/bin/env python3
"""Regenerates fuzz/corpus/ and the dictionaries fuzz/*.dict (docs/fuzzing.md).

  fuzz/make_corpus.py [PODSIM_BINARY]

Seeds come from README.md and docs/*.md (SYSTEM strings, layouts), scenario/examples and
bench/scenarios (scenarios), docs/schedule.md (the example schedule) plus lists below. With a
podsim binary, a few small schedules written by `podsim train --write-schedule` are added; the
binary schedule corpus is the text one encoded with protoc. The dictionaries hold each grammar's
keywords; the scenario and schedule ones take every field and enum value name from the .proto
files. Existing seeds and dictionaries are replaced; regressions/ is never touched.
"""
import hashlib
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))

SYSTEMS = [
    # From system.h, system_test.cc and the error cases of the grammar.
    "tpu-v4p:4x4x4", "tpu-v5p:16x20x28", "tpu-v5p:4x4x8,wrap=none", "tpu-v5p:4x4x4,wrap=xz",
    "tpu-v5e:8x4", "tpu-v5e:16x16,slices=4", "tpu-v6e:16x16", "tpu7x:4x4x8", "tpu-v5e:2x2,wrap=y",
    "h100:8", "h200:8", "b200:8", "a100:1024", "h100:512,oversub=2", "gb200:72", "h100:4",
    "ring:8,bw=1e11,lat=1e-6", "ring:9", "ring:1", "torus:4x4", "torus:4x4x4,bw=9e10,lat=5e-7",
    "torus:4x4,wrap=y", "torus:3x5,wrap=none", "switch:16,bw=5e10", "switch:1",
    "h10:8", "tpu-v5p:16x20", "tpu-v5p:16x20xa", "tpu-v5e:8x0", "tpu-v5e:16x16,slice=4",
    "tpu-v5e:16x16,slices=0", "tpu-v5p:4x4x4,wrap=xw", "h100:12", "h100:many", "h100:8,oversb=2",
    "h100:16,oversub", "ring:8,bw=0", "ring:8,lat=5", "ring:8,bw=1e11,bw=2e11", "torus:4x4x4x4",
    "ring:0", "switch:99999999999", "torus:1024x1024x1024", "h100", ":8", "ring:",
]
BYTE_SIZES = [
    "1048576", "1e9", "64KiB", "1MiB", "16GiB", "1.5GB", "1000B", "1TB", "2TiB", "1KB", "512MB",
    "0", "-1", "1e400", "KiB", "B", "1 KiB", "0x10", "inf", "nan", "1.5e-3MiB",
]
MODELS = [
    "llama2-13b", "llama3-8b", "llama3-70b", "llama3-405b", "gpt3-175b", "llama3-7b",
    "custom:layers=64,d_model=4096,ffn=16384,heads=32,kv_heads=8,head_dim=256,vocab=32128,tied=1",
    "custom:layers=2,d_model=768,ffn=3072,heads=48,kv_heads=6,head_dim=16,vocab=1000",
    "custom:layers=2,d_model=100,ffn=384,heads=8,kv_heads=8,head_dim=16,vocab=1000,gated=0,"
    "bias=1,norm=layer,positions=2048,dropout=1",
    "custom:layers=1,d_model=1,ffn=1,heads=1,kv_heads=1,head_dim=1,vocab=1",
    "custom:layers=2,d_model=64,ffn=128,heads=3,kv_heads=2,head_dim=32,vocab=100",
    "custom:layers=2,d_model=64",
]
# Layouts beyond the docs': every key, and the error cases.
LAYOUTS = [
    "dp=2,fsdp=4,tp=8,pp=1", "dp=1,fsdp=2,tp=2,pp=2,sp=1,microbatches=4,schedule=gpipe",
    "pp=2,microbatches=4,schedule=interleaved,virtual_stages=3", "tp=2,order=tp/dp/fsdp/pp",
    "dp=2,pp=3,microbatches=6,schedule=1f1b", "tp=2,sp=1", "fsdp=8", "pp=6", "dp=0", "tp=x",
    "virtual_stages=2", "order=tp/tp", "dq=2", "dp=2,dp=3", "",
]
# A selector byte per layout seed (layout_fuzzer.cc): models 0-5, chip and batch modes.
LAYOUT_SELECTORS = [0x00, 0x05, 0x02, 0x13]


def write(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    directory = CORPUS / target
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_bytes(data)


def seed_name(text, prefix=""):
    """A readable file name for a seed: its text, sanitized, plus a short hash."""
    slug = re.sub(r"[^A-Za-z0-9._=-]+", "_", text)[:60].strip("_") or "empty"
    digest = hashlib.sha1(text.encode() if isinstance(text, str) else text).hexdigest()[:8]
    return f"{prefix}{slug}-{digest}"


def doc_strings(pattern):
    found = []
    for doc in DOCS:
        for match in re.finditer(pattern, doc.read_text()):
            if match.group(0) not in found:
                found.append(match.group(0))
    return found


def compact_textproto(text):
    """Schedules as one line: the same message, a third smaller."""
    return re.sub(r"\n\s*", " ", text).strip() + "\n"


CHIPS = ["tpu-v4p", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu7x", "a100", "h100", "h200", "b200",
         "gb200"]
SYSTEM_WORDS = [c + ":" for c in CHIPS] + [
    "ring:", "torus:", "switch:", ",wrap=", ",slices=", ",bw=", ",lat=", ",oversub=", "none",
    "all", "xz", "xyz", "x", "4x4x4", "16x16", "1e11", "1e-6", "4096", "65536", "1048576",
    "1048577"]
BYTE_SIZE_WORDS = ["KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB", "TB", "B", "e", "e+", "e-", ".",
                   "-", "inf", "nan", "1e308", "0x"]
LAYOUT_WORDS = ["dp=", "fsdp=", "tp=", "pp=", ",sp=1", ",sp=0", ",microbatches=", ",schedule=",
                ",virtual_stages=", ",order=", "gpipe", "1f1b", "interleaved", "dp/fsdp/tp/pp",
                "tp/dp", "/", ",", "1048576", "1048577", "=1048576", "=65536", "=46341"]
MODEL_WORDS = ["custom:", "llama2-13b", "llama3-8b", "llama3-70b", "llama3-405b", "gpt3-175b",
               "layers=", ",d_model=", ",ffn=", ",heads=", ",kv_heads=", ",head_dim=", ",vocab=",
               ",gated=", ",tied=", ",bias=", ",norm=", "rms", "layer", ",positions=",
               ",dropout=", "16777216", "16777217", "=16777216", "=4096"]
TEXTPROTO_WORDS = ["{", "}", ": ", "[", "]", "\"", "#", "true", "false", "1e15", "-1", "nan",
                   "inf", "0x7fffffff", "9223372036854775807"]
SCHEDULE_WORDS = ["compute", "dp", "fsdp", "tp", "pp", "pp.recv", "x", "y", "z", "y:4", "node",
                  "forward", "backward-input", "tpu-v5e:2x2", "h100:8", "ring:4"]


def proto_names(path):
    """Field names and enum value names of a .proto file."""
    text = re.sub(r"//.*", "", path.read_text())
    fields = re.findall(r"^\s*(?:optional |repeated )?[\w.<>, ]+?\s(\w+)\s*=\s*\d+;", text, re.M)
    values = re.findall(r"^\s*([A-Z][A-Z0-9_]*)\s*=\s*\d+;", text, re.M)
    return list(dict.fromkeys(f for f in fields if not f.isupper())), list(dict.fromkeys(values))


def write_dict(target, words, comment):
    lines = [f"# {target}_fuzzer: {comment} (generated by fuzz/make_corpus.py)."]
    for word in dict.fromkeys(words):
        escaped = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else f"\\x{ord(c):02x}"
                          for c in word)
        lines.append(f'"{escaped}"')
    (ROOT / "fuzz" / f"{target}.dict").write_text("\n".join(lines) + "\n")


def varint(value):
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def write_dicts():
    write_dict("system", SYSTEM_WORDS, "SYSTEM grammar of topology/system.h")
    write_dict("byte_size", BYTE_SIZE_WORDS, "byte size suffixes of cli/byte_size.h")
    write_dict("layout", LAYOUT_WORDS, "layout keys of workloads/layout.h")
    write_dict("model", MODEL_WORDS, "MODEL grammar of workloads/model_spec.h")
    fields, values = proto_names(ROOT / "scenario" / "scenario.proto")
    write_dict("scenario", fields + [f + ": " for f in fields] + [f + " {" for f in fields] +
               values + TEXTPROTO_WORDS + SYSTEM_WORDS[:14] + MODEL_WORDS[:6] + ["text: \"dp="],
               "scenario.proto field and enum names")
    fields, values = proto_names(ROOT / "workloads" / "schedule.proto")
    write_dict("schedule_text", fields + [f + ": " for f in fields] + [f + " {" for f in fields] +
               values + TEXTPROTO_WORDS + SCHEDULE_WORDS, "schedule.proto field and enum names")
    # Binary: the tag bytes of Schedule's and Op's fields (field << 3 | wire type) and strings.
    tags = [varint((number << 3) | wire).decode("latin-1") for number, wire in
            [(1, 2), (2, 2), (3, 2), (4, 2), (5, 0), (6, 2), (7, 2),  # Schedule
             (2, 0), (4, 2), (5, 1), (6, 1), (7, 1), (8, 2), (9, 1), (10, 0), (11, 2), (12, 1),
             (13, 2), (14, 0), (15, 0), (16, 2), (17, 0), (18, 0)]]  # Op
    write_dict("schedule_binary", tags + ["\xa2\x01", "\xa9\x01", "\xff\xff\xff\xff\x0f",
                                          "\x00\x00\x00\x00\x00\x00\xf0\x7f"] +
               SCHEDULE_WORDS, "schedule.proto wire tags and names")


def main():
    podsim = sys.argv[1] if len(sys.argv) > 1 else None
    for target in ["system", "byte_size", "layout", "model", "scenario", "schedule_text",
                   "schedule_binary"]:
        shutil.rmtree(CORPUS / target, ignore_errors=True)

    systems = SYSTEMS + doc_strings(
        r"\b(?:tpu-v[0-9a-z]+|tpu7x|a100|h100|h200|b200|gb200|ring|torus|switch):[0-9x]+"
        r"(?:,[a-z]+=[0-9a-z.e+-]+)*")
    for system in dict.fromkeys(systems):
        write("system", seed_name(system), system)
    for size in BYTE_SIZES:
        write("byte_size", seed_name(size), size)
    for model in MODELS:
        write("model", seed_name(model), model)
    layouts = LAYOUTS + doc_strings(r"\b(?:dp|fsdp|tp|pp)=[0-9]+(?:,[a-z_]+=[0-9a-z/]+)+")
    for i, layout in enumerate(dict.fromkeys(layouts)):
        selector = LAYOUT_SELECTORS[i % len(LAYOUT_SELECTORS)]
        write("layout", seed_name(layout, f"{selector:02x}-"), bytes([selector]) + layout.encode())

    for path in sorted((ROOT / "scenario" / "examples").glob("*.textproto")) + sorted(
            (ROOT / "bench" / "scenarios").glob("*.textproto")):
        write("scenario", path.name, path.read_bytes())

    schedules = {}
    example = re.search(r"```textproto\n(.*?)```", (ROOT / "docs" / "schedule.md").read_text(),
                        re.S)
    schedules["docs_schedule_example"] = example.group(1)
    schedules["tiny_one_chip"] = (
        'system: "ring:1" mesh { name: "dp" size: 1 } programs { name: "all" ops { name: "mm" '
        'kind: MATMUL stream: "compute" flops: 1e9 duration_s: 0.001 } }\n')
    schedules["send_recv_ring"] = (
        'system: "tpu-v5e:2x1" mesh { name: "pp" size: 2 } '
        'programs { name: "s0" where { key: "pp" value: 0 } ops { name: "send" kind: SEND '
        'stream: "pp" peer_axis: "pp" peer_offset: 1 tag: 7 bytes: 1024 } } '
        'programs { name: "s1" where { key: "pp" value: 1 } ops { name: "recv" kind: RECV '
        'stream: "pp.recv" peer_axis: "pp" peer_offset: -1 tag: 7 } }\n')
    schedules["placements_order"] = (
        'system: "tpu-v5p:2x2x2" mesh { name: "dp" size: 2 } mesh { name: "tp" size: 4 } '
        'placements { axis: "tp" pieces: "x" pieces: "y" } order: "dp" '
        'programs { name: "all" ops { name: "ar" kind: COLLECTIVE stream: "tp" '
        'collective: ALL_REDUCE axes: "tp" axes: "dp" bytes: 1e6 } } tokens_per_step: 4096\n')
    if podsim:
        model = "custom:layers=2,d_model=64,ffn=128,heads=2,kv_heads=1,head_dim=32,vocab=100"
        runs = {
            "train_dp2_tp2": ["--system", "tpu-v5e:2x2", "--layout", "dp=2,tp=2",
                              "--batch-tokens", "1024"],
            "train_pp2": ["--system", "tpu-v5e:2x1", "--layout", "pp=2", "--batch-tokens", "512"],
            "train_fsdp4_h100": ["--system", "h100:4", "--layout", "fsdp=4", "--batch-tokens",
                                 "2048"],
        }
        with tempfile.TemporaryDirectory() as tmp:
            for name, args in runs.items():
                out = pathlib.Path(tmp) / f"{name}.textproto"
                subprocess.run([podsim, "train", "--model", model, "--seq", "512", *args,
                                "--write-schedule", str(out)], check=True,
                               stdout=subprocess.DEVNULL)
                schedules[name] = out.read_text()
    for name, text in schedules.items():
        text = compact_textproto(text)
        write("schedule_text", f"{name}.textproto", text)
        encoded = subprocess.run(
            ["protoc", f"--proto_path={ROOT / 'workloads'}", "--encode=podsim.schedule.Schedule",
             "schedule.proto"], input=text.encode(), check=True, capture_output=True).stdout
        write("schedule_binary", f"{name}.pb", encoded)
    write_dicts()


if __name__ == "__main__":
    main()
