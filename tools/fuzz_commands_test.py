#!/usr/bin/env python3
"""Self-test of tools/fuzz_commands.py: its runner and classifier on a fake podsim.

Usage: python3 tools/fuzz_commands_test.py [-v]   (no podsim needed; about 5 s)

The fake "binary" is a small Python script that misbehaves in one way per mode (the first
argument, or $FAKE_PODSIM_MODE for whole fuzzing runs): it hangs (with a child process), aborts,
segfaults, exits 134, prints a sanitizer report, two stderr lines, a libprotobuf line, a raw
control character, invalid UTF-8, bad or non-finite JSON, $inf, leaves a .tmp file or a partial
output behind, runs into the address-space cap, or overwrites its input. Each case checks the
class the fuzzer gives it, so a classifier that stops seeing a failure fails here. Further cases
check the shell quoting of reproducers, that inputs are a pure function of (seed, index), and the
fuzzer's exit status on a well-behaved and on a crashing fake.
"""
import io
import contextlib
import os
import pathlib
import stat
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import fuzz_commands as fc  # noqa: E402

FAKE = r'''#!PYTHON
import os, signal, subprocess, sys, time
mode = os.environ.get("FAKE_PODSIM_MODE") or (sys.argv[1] if len(sys.argv) > 1 else "ok")
if mode == "per-command":  # whole fuzzing runs: crash on 'collective', behave otherwise
    mode = "abort" if sys.argv[1:2] == ["collective"] else "error"
out, err = sys.stdout, sys.stderr
def fail(msg="podsim: error: bad input\n", rc=1):
    err.write(msg); err.flush(); sys.exit(rc)
if mode == "ok": print("step time 1.0 s"); sys.exit(0)
if mode == "json": print('{"time_s": 1.0}'); sys.exit(0)
if mode == "two-json": print('{"a": 1}\n{"b": 2}'); sys.exit(0)
if mode == "nan-json": print('{"time_s": NaN}'); sys.exit(0)
if mode == "list-json": print('[1, 2]'); sys.exit(0)
if mode == "inf": print("cost $inf per million tokens"); sys.exit(0)
if mode == "nan": print("MFU nan %"); sys.exit(0)
if mode == "quoted-inf": print('description: "ring:-inf, \\"nan\\" inside"'); sys.exit(0)
if mode == "quoted-then-inf": print('name: "x"\ntime inf s'); sys.exit(0)
if mode == "inference": print("inference step 1.0 s, info"); sys.exit(0)
if mode == "error": fail()
if mode == "usage": err.write("Usage: podsim ...\nRun with --help\n"); sys.exit(2)
if mode == "two-lines": fail("podsim: error: bad\nsecond line\n")
if mode == "libprotobuf":
    fail("[libprotobuf ERROR x.cc:1] invalid UTF-8\npodsim: error: cannot parse\n")
if mode == "control": fail("podsim: error: bad \x1b[31mred\n")
if mode == "not-utf8":
    err.flush(); os.write(2, b"podsim: error: name '\xff'\n"); sys.exit(1)
if mode == "no-prefix": fail("error: bad\n")
if mode == "stdout-on-error": print("partial report"); fail()
if mode == "hang":
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    time.sleep(60)
if mode == "abort": err.write("sim/time.cc:17: PODSIM_CHECK failed: x\n"); err.flush(); os.abort()
if mode == "segv": os.kill(os.getpid(), signal.SIGSEGV)
if mode == "rc134": sys.exit(134)
if mode == "rc3": sys.exit(3)
if mode == "asan":
    fail("=================================================================\n"
         "==1==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x1\n")
if mode == "ubsan":
    print("ok"); err.write("x.cc:3:5: runtime error: signed integer overflow\n"); sys.exit(0)
if mode == "memory":
    try:
        block = bytearray(8 << 30)  # 8 GiB: past any cap the test sets
    except MemoryError:
        err.write("terminate called after throwing an instance of 'std::bad_alloc'\n"
                  "  what():  std::bad_alloc\n"); err.flush(); os.abort()
    print("allocated: no cap"); sys.exit(0)
if mode == "tmp-left":
    open("out.json.tmp", "w").write("{"); fail()
if mode == "output-left":
    open(sys.argv[sys.argv.index("--trace") + 1], "w").write("{"); fail()
if mode == "partial-output":
    open(sys.argv[sys.argv.index("--trace") + 1], "w").write('{"traceEvents": ['); sys.exit(0)
if mode == "output-ok":
    open(sys.argv[sys.argv.index("--trace") + 1], "w").write('{"traceEvents": []}')
    print("ok"); sys.exit(0)
if mode == "clobber":
    open(sys.argv[2], "w").write(""); fail()
if mode == "replace-link":
    path = sys.argv[sys.argv.index("--trace") + 1]
    open(path + ".new", "w").write("{}"); os.rename(path + ".new", path); print("ok"); sys.exit(0)
if mode == "stray-file":
    open("core.dump", "w").write("x"); print("ok"); sys.exit(0)
fail("podsim: error: unknown mode\n")
'''


class FuzzCommandsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.fake = pathlib.Path(cls.tmp.name) / "fake-podsim"
        cls.fake.write_text(FAKE.replace("PYTHON", sys.executable, 1))
        cls.fake.chmod(cls.fake.stat().st_mode | stat.S_IXUSR)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_fake(self, *argv, files=None, timeout=5.0, memory_mb=1024):
        case = fc.Case(index=0, argv=[fc.b(a) for a in argv], files=files or {})
        case.outputs = fc.outputs_of(case.argv) + fc.scenario_outputs(case.files)
        res = fc.run_case(str(self.fake), case, timeout, memory_mb)
        base, failures = fc.classify(case, res)
        return base, [c for c, _ in failures], res

    def assertClass(self, expected, *argv, **kw):
        base, classes, res = self.run_fake(*argv, **kw)
        got = classes or [base]
        self.assertIn(expected, got, f"{argv}: got {got}, rc {res.rc}, stderr {res.stderr!r}")
        return got

    # The promised outcomes are not failures.
    def test_ok_error_usage(self):
        self.assertEqual(self.assertClass("ok", "ok"), ["ok"])
        self.assertEqual(self.assertClass("ok", "json", "--json"), ["ok"])
        self.assertEqual(self.assertClass("ok", "inference"), ["ok"])  # 'inf' inside a word
        self.assertEqual(self.assertClass("error", "error"), ["error"])
        self.assertEqual(self.assertClass("usage", "usage"), ["usage"])
        self.assertEqual(self.assertClass("ok", "output-ok", "--trace", "t.json"), ["ok"])

    def test_crash(self):
        self.assertClass("crash", "abort")
        self.assertClass("crash", "segv")
        self.assertClass("crash", "rc134")
        self.assertClass("crash", "rc3")
        self.assertClass("crash", "asan")
        self.assertClass("crash", "ubsan")

    def test_hang_kills_the_process_group(self):
        start = time.monotonic()
        base, classes, res = self.run_fake("hang", timeout=1.0)
        self.assertEqual(classes, ["hang"])
        self.assertTrue(res.timed_out)
        self.assertLess(time.monotonic() - start, 5)

    def test_memory_cap_applies(self):
        self.assertClass("memory", "memory", memory_mb=512)

    def test_stderr(self):
        for mode in ("two-lines", "libprotobuf", "control", "not-utf8", "no-prefix"):
            self.assertClass("multi-line-stderr", mode)
        base, classes, res = self.run_fake("two-lines", "$'a\nb'")
        problem = fc.stderr_problem(fc.Case(0, [b"a\nb"]), res.stderr)
        self.assertIn("newline", problem)

    def test_json(self):
        self.assertClass("bad-json", "two-json", "--json")
        self.assertClass("bad-json", "nan-json", "--json")
        self.assertClass("bad-json", "list-json", "--json")
        self.assertClass("bad-json", "ok", "--json")  # a text report where JSON was asked for
        self.assertClass("bad-json", "stdout-on-error")
        self.assertEqual(self.assertClass("ok", "ok", "--json", "--dump-scenario"), ["ok"])

    def test_inf_nan(self):
        self.assertClass("inf-nan-output", "inf")
        self.assertClass("inf-nan-output", "nan")
        # Echoed text in double quotes (a description under --dump-scenario) is not a number.
        self.assertEqual(self.assertClass("ok", "quoted-inf"), ["ok"])
        self.assertClass("inf-nan-output", "quoted-then-inf")

    def test_leftovers(self):
        self.assertClass("leftover-temp", "tmp-left")
        case = fc.Case(index=0, argv=[b"tmp-left"])
        details = dict(fc.classify(case, fc.run_case(str(self.fake), case, 5.0, 1024))[1])
        self.assertIn("temp file 'out.json.tmp'", details["leftover-temp"])
        self.assertClass("leftover-temp", "output-left", "--trace", "t.json")
        self.assertClass("leftover-temp", "partial-output", "--trace", "t.json")
        self.assertClass("leftover-temp", "stray-file")
        self.assertClass("clobbered-input", "clobber", "in.textproto",
                         files={"in.textproto": b"system: \"ring:8\"\n"})

    def test_write_error(self):
        case = fc.Case(index=0, argv=[b"replace-link", b"--trace", b"full.json"],
                       links={"full.json": "/dev/full"})
        case.outputs = ["full.json"]
        res = fc.run_case(str(self.fake), case, 5.0, 1024)
        self.assertEqual(res.links_replaced, ["full.json"])
        self.assertIn("ignored-write-error", dict(fc.classify(case, res)[1]))
        self.assertEqual(os.stat("/dev/full").st_rdev, os.makedev(1, 7))  # left alone
        corpus = fc.Corpus(scenarios=[], schedules=[])
        for i in range(300):  # generated inputs never name /dev/full itself
            c = fc.generate(i, 5, corpus)
            self.assertFalse(any(b"/dev/full" in a for a in c.argv), c.argv)

    def test_shell_quote_round_trips(self):
        for arg in [b"plain", b"", b"a b", b"it's", b"\xff\xfe", b"a\nb", b"\x1b[0m", b"$HOME",
                    b"back\\slash", b"\"q\"", "é".encode()]:
            line = "printf %s " + fc.shell_quote(arg)
            got = subprocess.run(["bash", "-c", line], capture_output=True, check=True).stdout
            self.assertEqual(got, arg, line)

    def test_generation_is_deterministic(self):
        corpus = fc.Corpus(scenarios=fc.load_scenarios()[:5],
                           schedules=[("doc.textproto", fc.docs_schedule() or b"system: \"x\"")])
        a = [fc.generate(i, 3, corpus) for i in range(200)]
        b = [fc.generate(i, 3, corpus) for i in range(200)]
        self.assertEqual([(c.argv, c.files) for c in a], [(c.argv, c.files) for c in b])
        other = [fc.generate(i, 4, corpus) for i in range(200)]
        self.assertNotEqual([c.argv for c in a], [c.argv for c in other])
        commands = {c.argv[0] for c in a if c.argv}
        for command in (b"topology", b"collective", b"train", b"replay", b"infer", b"sweep",
                        b"run"):
            self.assertIn(command, commands)

    def fuzz(self, mode, *extra):
        os.environ["FAKE_PODSIM_MODE"] = mode
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                rc = fc.main(["--binary", str(self.fake), "--count", "12", "--timeout", "5",
                              "--out", str(pathlib.Path(self.tmp.name) / "out"), *extra])
        finally:
            del os.environ["FAKE_PODSIM_MODE"]
        return rc, out.getvalue()

    def test_exit_status(self):
        rc, text = self.fuzz("error", "--jobs", "4")
        self.assertEqual(rc, 0, text)
        self.assertRegex(text, r"error\s+12\b")
        rc, text = self.fuzz("per-command", "--seed", "2", "--count", "40")
        self.assertEqual(rc, 1, text)
        self.assertRegex(text, r"crash\s+[1-9]")
        self.assertIn("fake-podsim collective", text)  # a copy-pasteable reproducer
        self.assertTrue(any((pathlib.Path(self.tmp.name) / "out").glob("case-*/cmd.sh")))


if __name__ == "__main__":
    unittest.main()
