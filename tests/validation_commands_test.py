#!/usr/bin/env python3
"""Issue 14: every command docs/validation.md shows for a row is one podsim accepts.

The document's rows each name the podsim command that prints their value. Inference and
collective commands run whole (they take milliseconds to seconds); training commands are checked
with --dump-scenario, which parses and validates every flag without simulating (some are steps of
thousands of chips).
Usage: validation_commands_test.py PODSIM docs/validation.md
"""

import re
import shlex
import subprocess
import sys
import unittest

PODSIM = sys.argv[1] if len(sys.argv) > 1 else "./build/podsim"
DOC = sys.argv[2] if len(sys.argv) > 2 else "docs/validation.md"


def commands(text):
    """The distinct `podsim ...` commands of the document's table rows, in order."""
    found = []
    for line in text.splitlines():
        if not line.startswith("|"):
            continue
        for command in re.findall(r"`podsim ([^`]+)`", line):
            if command not in found:
                found.append(command)
    return found


class ValidationCommandsTest(unittest.TestCase):
    def test_every_row_command_is_accepted(self):
        with open(DOC, encoding="utf-8") as f:
            found = commands(f.read())
        self.assertGreaterEqual(len(found), 50, "the document's commands were not found")
        for command in found:
            words = shlex.split(command)
            args = [PODSIM] + words
            if words[0] == "train":
                args.append("--dump-scenario")
            run = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
            with self.subTest(command=command):
                self.assertEqual(run.returncode, 0, run.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
