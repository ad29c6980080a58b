#!/usr/bin/env python3
"""Issue 17: every example of the README runs, and every training and inference one fits.

Runs each `./build/podsim train|infer|collective|topology|run` line of the README's code blocks
from the README's directory, train and infer with --require-fit (a layout that does not fit is
then an error), output files moved into a temporary directory. Sweeps (tens of seconds; the
sweep tests cover them) and replays of files written by other lines are left out.
Usage: readme_examples_test.py PODSIM README.md
"""

import os
import re
import shlex
import subprocess
import sys
import tempfile
import unittest

PODSIM = sys.argv[1] if len(sys.argv) > 1 else "./build/podsim"
README = sys.argv[2] if len(sys.argv) > 2 else "README.md"
OUTPUT_FLAGS = {"--trace", "--write-schedule", "--write-chakra", "--report"}
COMMANDS = ("train", "infer", "collective", "topology", "run")
FITTING = ("train", "infer")


def examples(text):
    """The train and infer command lines of the README's sh code blocks, comments removed."""
    lines, in_block = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            in_block = not in_block
            continue
        if not in_block or not line.startswith("./build/podsim "):
            continue
        command = re.sub(r"\s+#.*$", "", line).strip()
        words = shlex.split(command.split(" > ")[0])
        # The command is the first word that is not a global flag (-v).
        name = next((w for w in words[1:] if not w.startswith("-")), "")
        if name in COMMANDS and "..." not in words:
            lines.append((name, words))
    return lines


class ReadmeExamplesTest(unittest.TestCase):
    def test_every_example_runs_and_fits(self):
        with open(README, encoding="utf-8") as f:
            commands = examples(f.read())
        self.assertGreaterEqual(len(commands), 20, "the README's examples were not found")
        with tempfile.TemporaryDirectory() as out:
            for name, words in commands:
                args = [PODSIM] + words[1:]
                for i, word in enumerate(args[:-1]):
                    if word in OUTPUT_FLAGS:
                        args[i + 1] = os.path.join(out, os.path.basename(args[i + 1]))
                if name in FITTING:
                    args.append("--require-fit")
                run = subprocess.run(args, capture_output=True, text=True, timeout=300,
                                     check=False, cwd=os.path.dirname(os.path.abspath(README)))
                with self.subTest(command=" ".join(words)):
                    self.assertEqual(run.returncode, 0, run.stderr)
                    self.assertNotIn("podsim: warning", run.stderr)
                    self.assertNotIn("podsim: error", run.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
