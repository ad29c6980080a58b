#!/usr/bin/env python3
"""Issue 17: `--report FILE.html` renders in a real browser, with no network and no console errors.

Writes the reports of train (with and without --every-chip), infer, collective (a size sweep) and
sweep,
opens each in headless Chromium with every host unresolvable, and checks that the page says it
rendered every chart (<body data-rendered="N">), that each chart is an SVG with marks, and that
the console saw nothing but the page's own "rendered" line. Also: a bad report name fails before
anything runs and leaves nothing, and the same command writes the same bytes.
Usage: report_test.py PODSIM [CHROMIUM]
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

PODSIM = sys.argv[1] if len(sys.argv) > 1 else "./build/podsim"
CHROMIUM = sys.argv[2] if len(sys.argv) > 2 else (shutil.which("chromium") or "")

MODEL = "custom:layers=2,d_model=1024,ffn=4096,heads=8,kv_heads=8,head_dim=128,vocab=32000"
CASES = {
    "train": (["train", "--system", "tpu-v5e:4x4", "--model", MODEL,
               "--layout", "fsdp=4,tp=4", "--batch-tokens", "64Ki", "--seq", "4096"], 5),
    "train_every_chip": (["train", "--system", "h100:16", "--model", MODEL,
                          "--layout", "tp=8,pp=2,microbatches=4", "--batch-tokens", "64Ki",
                          "--seq", "4096", "--every-chip"], 5),
    "infer": (["infer", "--system", "h100:8", "--model", MODEL, "--layout", "tp=8",
               "--phase", "decode", "--batch", "16", "--context", "2048"], 4),
    "collective": (["collective", "--system", "tpu-v5e:4x4", "--op", "all-reduce",
                    "-b", "1Mi", "-e", "256Mi", "-f", "4"], 2),
    "sweep": (["sweep", "--system", "h100:16", "--model", MODEL,
               "--batch-tokens", "64Ki", "--seq", "4096", "--top", "3"], 1),
}


def render(path):
    """The DOM after the page ran, and the console lines Chromium logged."""
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
         "--v=0", "--virtual-time-budget=20000", "--host-resolver-rules=MAP * ~NOTFOUND",
         "--dump-dom", "file://" + os.path.abspath(path)],
        capture_output=True, text=True, timeout=180)
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


class ReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.files = {}
        for name, (args, _) in CASES.items():
            path = os.path.join(cls.tmp, name + ".html")
            done = subprocess.run([PODSIM] + args + ["--report", path], capture_output=True,
                                  text=True, timeout=600)
            if done.returncode != 0:
                raise AssertionError(f"{name}: {done.stderr}")
            cls.files[name] = (path, done.stdout)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_output_names_the_report(self):
        for name, (path, stdout) in self.files.items():
            self.assertIn("report      " + path, stdout, name)

    def test_self_contained(self):
        for name, (path, _) in self.files.items():
            with open(path, encoding="utf-8") as f:
                html = f.read()
            self.assertNotRegex(html, r"<script[^>]+src=", name)
            self.assertNotIn("<link", html, name)

    @unittest.skipUnless(CHROMIUM, "chromium not installed (Debian: chromium)")
    def test_renders_every_chart_without_console_errors(self):
        for name, (path, _) in self.files.items():
            charts = CASES[name][1]
            with self.subTest(report=name):
                dom, console = render(path)
                body = re.search(r"<body[^>]*>", dom)
                self.assertIsNotNone(body, "no <body> in the rendered page")
                self.assertEqual(body.group(0), f'<body data-rendered="{charts}">')
                self.assertEqual(console and [c for c in console
                                              if f'"podsim report: rendered {charts} charts"'
                                              not in c], [])
                for i in range(charts):
                    section = dom.split(f'id="podsim-chart-{i}"', 1)[1]
                    section = section.split('id="podsim-chart-', 1)[0]
                    self.assertTrue("<svg" in section, f"{name} chart {i}: no SVG")
                    self.assertTrue(re.search(r"<path|<rect|<line", section),
                                    f"{name} chart {i}: no marks")

    def test_same_command_same_bytes(self):
        path, _ = self.files["collective"]
        again = os.path.join(self.tmp, "again.html")
        args = CASES["collective"][0]
        subprocess.run([PODSIM] + args + ["--report", again], check=True, capture_output=True)
        with open(path, "rb") as a, open(again, "rb") as b:
            # The command line shown differs only in the file name.
            self.assertEqual(a.read().replace(path.encode(), b"X"),
                             b.read().replace(again.encode(), b"X"))

    def test_bad_name_fails_before_running_and_writes_nothing(self):
        target = os.path.join(self.tmp, "report.txt")
        done = subprocess.run([PODSIM] + CASES["train"][0] + ["--report", target],
                              capture_output=True, text=True)
        self.assertEqual(done.returncode, 1)
        self.assertRegex(done.stderr, r"--report: report file '.*report.txt' must end in .html")
        self.assertFalse(os.path.exists(target))
        self.assertEqual(done.stdout, "")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
