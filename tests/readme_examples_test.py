#!/usr/bin/env python3
"""Issue 17: every training and inference example of the README fits in HBM.

Runs each `./build/podsim train|infer` line of the README's code blocks with --require-fit (a
layout that does not fit is then an error) and its output files moved into a temporary
directory. Usage: readme_examples_test.py PODSIM README.md
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
OUTPUT_FLAGS = {"--trace", "--write-schedule", "--write-chakra"}


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
        words = shlex.split(command)
        if len(words) > 1 and words[1] in ("train", "infer") and "..." not in words:
            lines.append(words)
    return lines


class ReadmeExamplesTest(unittest.TestCase):
    def test_every_training_and_inference_example_fits(self):
        with open(README, encoding="utf-8") as f:
            commands = examples(f.read())
        self.assertGreaterEqual(len(commands), 6, "the README's examples were not found")
        with tempfile.TemporaryDirectory() as out:
            for words in commands:
                args = [PODSIM] + words[1:]
                for i, word in enumerate(args[:-1]):
                    if word in OUTPUT_FLAGS:
                        args[i + 1] = os.path.join(out, os.path.basename(args[i + 1]))
                run = subprocess.run(args + ["--require-fit"], capture_output=True, text=True,
                                     timeout=300, check=False)
                with self.subTest(command=" ".join(words)):
                    self.assertEqual(run.returncode, 0, run.stderr)
                    self.assertEqual(run.stderr, "")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
