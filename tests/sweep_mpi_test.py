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

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")


def run(command):
    done = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=600)
    return done.returncode, done.stdout, done.stderr


class SweepMpiTest(unittest.TestCase):
    def check(self, extra):
        code, alone, err = run([PODSIM] + SWEEP + extra)
        self.assertEqual(code, 0, err)
        self.assertIn("rank", alone if not extra else "rank")
        for ranks in ("2", "3"):
            code, spread, err = run([MPIEXEC, "--oversubscribe", "-n", ranks, PODSIM] + SWEEP +
                                    extra)
            self.assertEqual(code, 0, err)
            self.assertEqual(spread, alone, f"-n {ranks} {' '.join(extra)}")

    def test_text_report(self):
        self.check([])

    def test_json(self):
        self.check(["--json"])

    def test_csv_exhaustive(self):
        self.check(["--csv", "--exhaustive"])

    def test_errors_are_printed_once(self):
        code, _, err = run([MPIEXEC, "--oversubscribe", "-n", "2", PODSIM] + SWEEP[:-2] +
                           ["--top", "0"])
        self.assertEqual(code, 1)
        self.assertEqual(err.count("podsim: error: --top: must be >= 1"), 1, err)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
