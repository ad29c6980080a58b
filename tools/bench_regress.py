#!/usr/bin/env python3
"""Regression benchmarks: re-runs the canonical scenarios of bench/scenarios/ and compares podsim's
predictions with the committed baseline, bench/baseline.json (bench/README.md).

Usage: tools/bench_regress.py [BUILD_DIR] [--update] [--timing] [--repeats N] [--filter SUBSTR]
                              [--baseline PATH] [--scenarios DIR]

Default: runs `BUILD_DIR/podsim run FILE --json` (BUILD_DIR defaults to build) for every scenario,
prints one line per scenario (ok, or DRIFT with the key, baseline, now, relative change and
tolerance), fails (exit 1) on any drift, on a scenario without a baseline entry, on a baseline
entry without a scenario, and on a scenario podsim rejects. --timing also measures each scenario's
wall time (best of --repeats runs) and prints it against the baseline's; timing is reported, it
never fails the run. --update rewrites the baseline from this run (wall times too with --timing),
keeping each key's tolerance, with sorted keys so that its diff is reviewable; it exits 0.

Exit codes: 0 every prediction within tolerance (or baseline written), 1 drift or error,
2 usage. Standard library only.
"""
import argparse
import json
import math
import os
import pathlib
import platform
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "bench" / "scenarios"
BASELINE = ROOT / "bench" / "baseline.json"

# The baseline's first line, for whoever opens it.
ABOUT = ("Predictions of bench/scenarios/*.textproto and podsim's wall time on each; written by "
         "tools/bench_regress.py --update (bench/README.md). Commit it with the change that moves "
         "a prediction.")

# Relative tolerance given to a key when it first enters the baseline. The simulator is
# deterministic (the same binary prints the same bytes), so only a change of the model, or a
# different compiler's floating-point rounding, moves a prediction; 1e-6 lets the latter through.
DEFAULT_REL_TOL = 1e-6

# JSON keys (the last component of a path) that are not predictions: how much work the simulator
# did (a faster engine must not fail the check), prose written for people, and the validation
# record of the chip's family (docs/validation.md's summary, which tools/validation.py --check keeps
# current: it moves when predictions do, and they are checked here already). Everything else
# podsim prints with --json is compared: times, bandwidths, MFU, memory, fits, bottleneck,
# algorithm, layouts, topology counts, and the inputs echoed back.
NOT_PREDICTIONS = frozenset({
    "events", "flows", "transfers", "ops", "collectives", "overlapped_collectives",
    "rehearsals", "simulated_chips", "simulated_chip", "reason", "validation",
})


class BenchError(Exception):
    """An error that ends the run with its message and exit code 1."""


# ---------------------------------------------------------------------------------------------
# Running podsim


def podsim_path(build_dir):
    """Returns BUILD_DIR/podsim, or raises BenchError if it is not an executable file."""
    path = pathlib.Path(build_dir) / "podsim"
    if not path.is_file() or not os.access(path, os.X_OK):
        raise BenchError(f"{path}: no podsim binary there; build it first "
                         f"(cmake --build {build_dir}) or pass the build directory")
    return path


def shown(path):
    """path relative to the repository when it is inside it, else as given."""
    try:
        return path.relative_to(ROOT)
    except ValueError:
        return path


def run_scenario(podsim, scenario):
    """Runs one scenario with --json. Returns (parsed JSON output, wall seconds).

    Raises BenchError with podsim's stderr when it exits non-zero, or when its output is not one
    JSON object."""
    start = time.perf_counter()
    proc = subprocess.run([str(podsim), "run", str(scenario), "--json"], cwd=ROOT,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise BenchError(f"podsim exited {proc.returncode} on {shown(scenario)}:\n"
                         f"{proc.stderr.rstrip()}")
    try:
        output = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise BenchError(f"podsim's output on {shown(scenario)} is not JSON: {e}")
    if not isinstance(output, dict):
        raise BenchError(f"podsim's output on {shown(scenario)} is not a JSON object")
    return output, wall


def predictions(output, prefix=""):
    """Flattens podsim's JSON output into {path: leaf value}, skipping NOT_PREDICTIONS.

    Paths join object keys with '.' and list indices as [i]: "points[0].bottleneck.resource"."""
    flat = {}
    if isinstance(output, dict):
        for key, value in output.items():
            if key in NOT_PREDICTIONS:
                continue
            flat.update(predictions(value, f"{prefix}.{key}" if prefix else key))
    elif isinstance(output, list):
        for i, value in enumerate(output):
            flat.update(predictions(value, f"{prefix}[{i}]"))
    else:
        flat[prefix] = output
    return flat


# ---------------------------------------------------------------------------------------------
# The baseline


def load_baseline(path):
    """Reads and checks the baseline file. Returns its dict; a file that does not exist is an
    empty baseline. Raises BenchError naming the field at fault when it is malformed."""
    if not path.exists():
        return {"scenarios": {}}
    try:
        baseline = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise BenchError(f"{path}: not a readable JSON file: {e}")
    if not isinstance(baseline, dict) or not isinstance(baseline.get("scenarios"), dict):
        raise BenchError(f"{path}: malformed baseline: expected an object with a 'scenarios' "
                         f"object")
    for name, entry in baseline["scenarios"].items():
        where = f"{path}: scenarios.{name}"
        if not isinstance(entry, dict) or not isinstance(entry.get("predictions"), dict):
            raise BenchError(f"{where}: malformed baseline: expected an object with a "
                             f"'predictions' object")
        wall = entry.get("wall_s")
        if wall is not None and not is_number(wall):
            raise BenchError(f"{where}.wall_s: malformed baseline: must be a number or null")
        for key, pred in entry["predictions"].items():
            check_prediction(f"{where}.predictions.{key}", pred)
    return baseline


def check_prediction(where, pred):
    """Raises BenchError unless pred is {"value": v} (v a string, bool or null) or
    {"value": number, "rel_tol": number >= 0[, "abs_tol": number >= 0]}."""
    if not isinstance(pred, dict) or "value" not in pred:
        raise BenchError(f"{where}: malformed baseline: expected an object with a 'value'")
    extra = set(pred) - {"value", "rel_tol", "abs_tol"}
    if extra:
        raise BenchError(f"{where}: malformed baseline: unknown field(s) {', '.join(sorted(extra))}")
    if is_number(pred["value"]):
        if "rel_tol" not in pred:
            raise BenchError(f"{where}: malformed baseline: a number needs 'rel_tol'")
    elif "rel_tol" in pred or "abs_tol" in pred:
        raise BenchError(f"{where}: malformed baseline: tolerances apply to numbers only")
    for tol in ("rel_tol", "abs_tol"):
        if tol in pred and (not is_number(pred[tol]) or pred[tol] < 0):
            raise BenchError(f"{where}.{tol}: malformed baseline: must be a number >= 0")


def is_number(value):
    """True for JSON numbers (int or float, not bool), finite."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def new_entry(flat, old_entry, wall):
    """The baseline entry for one scenario's predictions `flat`: numbers keep the tolerances of
    old_entry's same key (DEFAULT_REL_TOL for a new key); wall is the wall time or None."""
    old = (old_entry or {}).get("predictions", {})
    preds = {}
    for key, value in flat.items():
        pred = {"value": value}
        if is_number(value):
            previous = old.get(key, {})
            pred["rel_tol"] = previous.get("rel_tol", DEFAULT_REL_TOL)
            if "abs_tol" in previous:
                pred["abs_tol"] = previous["abs_tol"]
        preds[key] = pred
    return {"predictions": preds, "wall_s": wall}


def write_baseline(path, baseline):
    """Writes the baseline with sorted keys and two-space indents: the same content always gives
    the same bytes. Floats print as Python's shortest round-trip form."""
    path.write_text(json.dumps(baseline, indent=2, sort_keys=True) + "\n")


def machine_description(build_dir):
    """One line naming the machine and build the wall times were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    build_type = "unknown"
    try:
        for line in (pathlib.Path(build_dir) / "CMakeCache.txt").read_text().splitlines():
            if line.startswith("CMAKE_BUILD_TYPE:"):
                build_type = line.split("=", 1)[1].strip() or "default"
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}; "
            f"{build_type} build")


# ---------------------------------------------------------------------------------------------
# Comparing


def drifts(flat, entry):
    """Compares one scenario's predictions with its baseline entry. Returns a list of
    (key, baseline, now, change, tolerance) for every key out of tolerance, missing from the run
    or missing from the baseline (the absent side is the string "(absent)"; change is the relative
    change of a number, else None)."""
    found = []
    base = entry["predictions"]
    for key in sorted(set(base) | set(flat)):
        if key not in flat:
            found.append((key, base[key]["value"], "(absent)", None, None))
        elif key not in base:
            found.append((key, "(absent)", flat[key], None, None))
        else:
            found.extend(compare(key, base[key], flat[key]))
    return found


def compare(key, pred, now):
    """Returns [] when `now` matches the baseline prediction `pred`, else one drift tuple.
    Numbers match when |now - base| <= max(rel_tol * |base|, abs_tol); anything else exactly."""
    base = pred["value"]
    if is_number(base) and is_number(now):
        rel_tol, abs_tol = pred["rel_tol"], pred.get("abs_tol", 0)
        if abs(now - base) <= max(rel_tol * abs(base), abs_tol):
            return []
        change = (now - base) / abs(base) if base != 0 else math.inf
        return [(key, base, now, change, rel_tol)]
    if type(base) is type(now) and base == now:
        return []
    return [(key, base, now, None, None)]


def drift_line(name, drift):
    """One DRIFT line: scenario, key, baseline, now, relative change, tolerance."""
    key, base, now, change, tol = drift
    line = f"DRIFT    {name}: {key}: baseline {json.dumps(base)}, now {json.dumps(now)}"
    if change is not None:
        line += f", change {change:+.3g} (tolerance {tol:g})"
    return line


def timing_line(name, wall, base_wall):
    """One timing line: best wall time against the baseline's, with the ratio."""
    line = f"time     {name}: {wall:.3f} s"
    if base_wall:
        line += f" (baseline {base_wall:.3f} s, x{wall / base_wall:.2f})"
    else:
        line += " (no baseline wall time)"
    return line


# ---------------------------------------------------------------------------------------------
# Main


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Re-run bench/scenarios and compare podsim's predictions with the baseline.")
    parser.add_argument("build_dir", nargs="?", default="build",
                        help="build directory holding podsim (default: build)")
    parser.add_argument("--update", action="store_true",
                        help="rewrite the baseline from this run (wall times too with --timing)")
    parser.add_argument("--timing", action="store_true",
                        help="measure each scenario's wall time (best of --repeats) and report it")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs per scenario with --timing (default 3)")
    parser.add_argument("--filter", default="",
                        help="only the scenarios whose name contains SUBSTR")
    parser.add_argument("--baseline", type=pathlib.Path, default=BASELINE,
                        help="baseline file (default: bench/baseline.json)")
    parser.add_argument("--scenarios", type=pathlib.Path, default=SCENARIOS,
                        help="scenario folder (default: bench/scenarios)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    return args


def scenario_files(folder, substring):
    """The scenario files of folder whose name (without .textproto) contains substring, by
    name."""
    files = {p.name[:-len(".textproto")]: p.resolve() for p in folder.glob("*.textproto")}
    return {name: files[name] for name in sorted(files) if substring in name}


def check_scenario(podsim, name, path, entry, args):
    """Runs one scenario (--repeats times with --timing), prints its lines and returns
    (passed, wall seconds of the first run, its new baseline entry); the entry is None when podsim
    failed on it."""
    try:
        output, wall = run_scenario(podsim, path)
        walls = [wall] + [run_scenario(podsim, path)[1]
                          for _ in range(args.repeats - 1 if args.timing else 0)]
    except BenchError as e:
        print(f"ERROR    {name}: {e}")
        return False, 0.0, None
    flat = predictions(output)
    if entry is None:
        print(f"MISSING  {name}: no baseline entry"
              + ("" if args.update else " (add it: tools/bench_regress.py --update)"))
        passed = False
    else:
        found = drifts(flat, entry)
        for drift in found:
            print(drift_line(name, drift))
        passed = not found
        if passed:
            print(f"ok       {name}: {len(flat)} predictions, {wall:.2f} s")
    if args.timing:
        print(timing_line(name, min(walls), (entry or {}).get("wall_s")))
    best = round(min(walls), 3) if args.timing else (entry or {}).get("wall_s")
    return passed, wall, new_entry(flat, entry, best)


def update_baseline(args, baseline, new_entries, stale):
    """Writes the baseline with new_entries replacing their scenarios' entries and the stale
    entries dropped; with --timing, records the machine the wall times were measured on."""
    baseline["about"] = ABOUT
    entries = baseline["scenarios"]
    for name in stale:
        del entries[name]
    entries.update(new_entries)
    if args.timing:
        baseline["timing"] = {"machine": machine_description(args.build_dir),
                              "repeats": args.repeats,
                              "how": "best wall time of `podsim run FILE --json`, seconds"}
    write_baseline(args.baseline, baseline)
    print(f"wrote {args.baseline}")


def main(argv):
    """Runs the check (or the update) and returns the exit code; raises BenchError."""
    args = parse_args(argv)
    podsim = podsim_path(args.build_dir)
    baseline = load_baseline(args.baseline)
    entries = baseline["scenarios"]
    scenarios = scenario_files(args.scenarios, args.filter)
    if not scenarios:
        raise BenchError(f"no scenario in {args.scenarios} matches --filter '{args.filter}'")

    failures = 0
    total_wall = 0.0
    new_entries = {}
    for name, path in scenarios.items():
        passed, wall, entry = check_scenario(podsim, name, path, entries.get(name), args)
        failures += not passed
        total_wall += wall
        if entry is not None:
            new_entries[name] = entry
    stale = sorted(n for n in entries if args.filter in n and n not in scenarios)
    for name in stale:
        print(f"STALE    {name}: baseline entry without a scenario file "
              f"({args.scenarios / name}.textproto)")
    failures += len(stale)
    print(f"{len(scenarios)} scenarios, prediction run {total_wall:.1f} s wall")

    if args.update:
        if len(new_entries) < len(scenarios):
            raise BenchError("not updating the baseline: a scenario failed to run")
        update_baseline(args, baseline, new_entries, stale)
        return 0
    if failures:
        print(f"FAILED: {failures} scenario(s) drifted, failed or lack a baseline; if the change is "
              f"intended, run tools/bench_regress.py --update and commit bench/baseline.json with it")
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BenchError as e:
        print(f"bench_regress: error: {e}", file=sys.stderr)
        sys.exit(1)
