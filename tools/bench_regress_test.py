#!/usr/bin/env python3
"""Tests that tools/bench_regress.py passes on the committed baseline and fails when it should.

Usage: tools/bench_regress_test.py BUILD_DIR (run by ctest as bench_regress_check).
Each case runs the checker on one cheap scenario (a 16-chip ring p2p, milliseconds even under
ASan) against a temporary copy of bench/baseline.json, unchanged or altered: a value moved beyond
its tolerance, a value moved within it, a string changed, the entry removed, an entry without a
scenario, a malformed file, a scenario podsim rejects, and a build directory without podsim.
"""
import copy
import json
import pathlib
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "bench_regress.py"
BASELINE = ROOT / "bench" / "baseline.json"
SCENARIO = "collective_ring_p2p_S3"  # Cheapest scenario; its time_s is 2e-06.
BUILD_DIR = "build"


class BenchRegressTest(unittest.TestCase):
    def setUp(self):
        self.baseline = json.loads(BASELINE.read_text())
        self.tmp = tempfile.TemporaryDirectory()
        self.path = pathlib.Path(self.tmp.name) / "baseline.json"

    def tearDown(self):
        self.tmp.cleanup()

    def check(self, baseline, *extra, build_dir=None):
        """Writes `baseline` (a dict, or raw text) to the temporary file and runs the checker on
        SCENARIO with it. Returns (exit code, stdout + stderr)."""
        text = baseline if isinstance(baseline, str) else json.dumps(baseline)
        self.path.write_text(text)
        proc = subprocess.run(
            [sys.executable, str(TOOL), build_dir or BUILD_DIR, "--filter", SCENARIO,
             "--baseline", str(self.path), *extra],
            capture_output=True, text=True)
        return proc.returncode, proc.stdout + proc.stderr

    def prediction(self, baseline, key):
        return baseline["scenarios"][SCENARIO]["predictions"][key]

    def test_committed_baseline_passes(self):
        code, out = self.check(self.baseline)
        self.assertEqual(code, 0, out)
        self.assertIn(f"ok       {SCENARIO}:", out)

    def test_value_beyond_tolerance_is_drift(self):
        perturbed = copy.deepcopy(self.baseline)
        pred = self.prediction(perturbed, "time_s")
        pred["value"] *= 1 + 10 * pred["rel_tol"]
        code, out = self.check(perturbed)
        self.assertEqual(code, 1, out)
        self.assertIn(f"DRIFT    {SCENARIO}: time_s: baseline {json.dumps(pred['value'])}", out)
        self.assertIn(f"(tolerance {pred['rel_tol']:g})", out)
        self.assertIn("FAILED", out)

    def test_value_within_tolerance_passes(self):
        perturbed = copy.deepcopy(self.baseline)
        pred = self.prediction(perturbed, "time_s")
        pred["value"] *= 1 + pred["rel_tol"] / 10
        code, out = self.check(perturbed)
        self.assertEqual(code, 0, out)

    def test_changed_string_is_drift(self):
        perturbed = copy.deepcopy(self.baseline)
        self.prediction(perturbed, "algorithm")["value"] = "ring"
        code, out = self.check(perturbed)
        self.assertEqual(code, 1, out)
        self.assertIn(f'DRIFT    {SCENARIO}: algorithm: baseline "ring", now "p2p"', out)

    def test_scenario_without_baseline_entry_fails(self):
        perturbed = copy.deepcopy(self.baseline)
        del perturbed["scenarios"][SCENARIO]
        code, out = self.check(perturbed)
        self.assertEqual(code, 1, out)
        self.assertIn(f"MISSING  {SCENARIO}: no baseline entry", out)

    def test_baseline_entry_without_scenario_fails(self):
        perturbed = copy.deepcopy(self.baseline)
        perturbed["scenarios"][SCENARIO + "_gone"] = perturbed["scenarios"][SCENARIO]
        code, out = self.check(perturbed)
        self.assertEqual(code, 1, out)
        self.assertIn(f"STALE    {SCENARIO}_gone: baseline entry without a scenario file", out)

    def test_update_restores_a_drifted_baseline(self):
        perturbed = copy.deepcopy(self.baseline)
        self.prediction(perturbed, "time_s")["value"] = 1.0
        code, out = self.check(perturbed, "--update")
        self.assertEqual(code, 0, out)
        updated = json.loads(self.path.read_text())
        self.assertEqual(updated["scenarios"][SCENARIO], self.baseline["scenarios"][SCENARIO])
        code, out = self.check(self.path.read_text())
        self.assertEqual(code, 0, out)

    def test_malformed_baseline_is_an_error(self):
        code, out = self.check("{not json")
        self.assertEqual(code, 1, out)
        self.assertIn("not a readable JSON file", out)
        broken = copy.deepcopy(self.baseline)
        del self.prediction(broken, "time_s")["rel_tol"]
        code, out = self.check(broken)
        self.assertEqual(code, 1, out)
        self.assertIn(f"scenarios.{SCENARIO}.predictions.time_s: malformed baseline", out)

    def test_scenario_podsim_rejects_is_an_error(self):
        folder = pathlib.Path(self.tmp.name) / "scenarios"
        folder.mkdir()
        (folder / f"{SCENARIO}.textproto").write_text(
            'system { preset: "ring:16" }\ncollective { op: ALL_REDUCE bites: 1 }\n')
        code, out = self.check(self.baseline, "--scenarios", str(folder))
        self.assertEqual(code, 1, out)
        self.assertIn(f"ERROR    {SCENARIO}: podsim exited 1", out)
        self.assertIn("unknown field 'bites' in Collective", out)  # podsim's stderr

    def test_missing_binary_is_an_error(self):
        code, out = self.check(self.baseline, build_dir=self.tmp.name)
        self.assertEqual(code, 1, out)
        self.assertIn("no podsim binary there", out)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        BUILD_DIR = sys.argv.pop(1)
    unittest.main()
