"""Checks that interop/testdata/generator/ is what write_generator_trace.py writes.

The C++ tests read the committed files; this keeps them and the script that documents them
from drifting apart.
"""

import filecmp
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent


class GeneratorFixtureTest(unittest.TestCase):
    def test_committed_files_are_the_scripts_output(self) -> None:
        with tempfile.TemporaryDirectory() as out:
            subprocess.run([sys.executable, str(HERE / "write_generator_trace.py"), out],
                           check=True)
            written = sorted(p.name for p in Path(out).iterdir())
            committed = sorted(p.name for p in (HERE / "generator").iterdir())
            self.assertEqual(written, committed)
            match, mismatch, errors = filecmp.cmpfiles(out, HERE / "generator", written,
                                                       shallow=False)
            self.assertEqual(mismatch + errors, [])


if __name__ == "__main__":
    unittest.main()
