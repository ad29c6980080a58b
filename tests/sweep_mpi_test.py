"""Issue 18: `mpirun -n K podsim sweep ...` prints byte for byte what `podsim sweep ...` prints.

Run by ctest in builds with -DPODSIM_WITH_MPI=ON (label mpi):
    sweep_mpi_test.py PODSIM MPIEXEC
Each sweep runs once alone and under mpirun with 2 and 3 ranks (oversubscribed on a 2-core
machine, and as root where CI runs: Open MPI then needs its two confirmations).
"""

import os
import subprocess
import sys
import unittest

PODSIM = sys.argv[1] if len(sys.argv) > 1 else "build/podsim"
MPIEXEC = sys.argv[2] if len(sys.argv) > 2 else "mpirun"

# Small enough for CI, large enough that waves, pruning and rehearsals all happen.
SWEEP = ["sweep", "--system", "h100:16", "--model",
         "custom:layers=8,d_model=1024,ffn=4096,heads=16,kv_heads=8,head_dim=64,vocab=4096",
         "--batch-tokens", "64Ki", "--seq", "1024", "--top", "4"]
# Every layout simulated (--exhaustive): a 4-layer model and a 16-sequence batch keep each of the
# three runs near 3 s (the sweep above takes 20 s exhaustive, when every step is exact).
SWEEP_SMALL = ["sweep", "--system", "h100:16", "--model",
               "custom:layers=4,d_model=1024,ffn=4096,heads=16,kv_heads=8,head_dim=64,vocab=4096",
               "--batch-tokens", "16Ki", "--seq", "1024", "--top", "4"]

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")


def run(command):
    done = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=600)
    return done.returncode, done.stdout, done.stderr


class SweepMpiTest(unittest.TestCase):
    def check(self, extra, sweep=SWEEP):
        code, alone, err = run([PODSIM] + sweep + extra)
        self.assertEqual(code, 0, err)
        self.assertIn("dp=", alone)  # Layouts were ranked.
        for ranks in ("2", "3"):
            code, spread, err = run([MPIEXEC, "--oversubscribe", "-n", ranks, PODSIM] + sweep +
                                    extra)
            self.assertEqual(code, 0, err)
            self.assertEqual(spread, alone, f"-n {ranks} {' '.join(extra)}")

    def test_text_report(self):
        self.check([])

    def test_json(self):
        self.check(["--json"])

    def test_csv_exhaustive(self):
        self.check(["--csv", "--exhaustive"], SWEEP_SMALL)

    def test_several_threads_per_rank(self):
        # Ranks with two threads each take their tasks round-robin rather than from the counter.
        self.check(["--jobs", "2"])

    def test_ranks_with_different_threads_agree(self):
        # One rank with one thread, one with two (as on unequal machines): they must agree on how
        # to share tasks, not hang.
        code, alone, err = run([PODSIM] + SWEEP)
        self.assertEqual(code, 0, err)
        code, spread, err = run([MPIEXEC, "--oversubscribe", "-n", "1", PODSIM] + SWEEP +
                                ["--jobs", "1", ":", "-n", "1", PODSIM] + SWEEP + ["--jobs", "2"])
        self.assertEqual(code, 0, err)
        self.assertEqual(spread, alone)

    def test_errors_after_mpi_started_are_printed_once(self):
        # No layout splits one sequence of 1026 tokens over the 32 chips of two v5e slices
        # (tp <= 4 heads, pp | 3; sequence shards in pairs of chunks do not divide 1026), and the
        # sweep searches no smaller slice of a multi-slice system.
        none = ["sweep", "--system", "tpu-v5e:4x4,slices=2", "--model",
                "custom:layers=3,d_model=256,ffn=512,heads=4,kv_heads=4,head_dim=64,vocab=512",
                "--batch-tokens", "1026", "--seq", "1026"]
        code, _, err = run([MPIEXEC, "--oversubscribe", "-n", "2", PODSIM] + none)
        self.assertEqual(code, 1)
        self.assertEqual(err.count("podsim: error: no layout"), 1, err)

    def test_other_commands_are_refused_once(self):
        code, out, err = run([MPIEXEC, "--oversubscribe", "-n", "2", PODSIM, "topology",
                              "h100:8"])
        self.assertNotEqual(code, 0)
        self.assertEqual(out, "")
        self.assertEqual(err.count("only sweep spreads over MPI ranks"), 1, err)

    def test_errors_are_printed_once(self):
        code, _, err = run([MPIEXEC, "--oversubscribe", "-n", "2", PODSIM] + SWEEP[:-2] +
                           ["--top", "0"])
        self.assertEqual(code, 1)
        self.assertEqual(err.count("podsim: error: --top: must be >= 1"), 1, err)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
