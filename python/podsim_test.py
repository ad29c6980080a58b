"""The Python package against the podsim executable (issue 17 item 1, docs/python.md).

Run by ctest (label python) with PYTHONPATH=<build>/python:
    podsim_test.py PODSIM
Every result is compared with what the executable prints for the same flags; about 10 s.
"""

import json
import os
import pathlib
import pickle
import subprocess
import sys
import tempfile
import threading
import time
import unittest

# Run as a script, this folder comes first on sys.path, and its podsim/ (the sources, without
# the extension) would hide the built package that PYTHONPATH names.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]

import podsim  # noqa: E402  (after the path fix above)

PODSIM = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PODSIM", "build/podsim")

TRAIN = dict(system="h100:16", model="llama3-8b", layout="tp=8,dp=2", batch_tokens=32768,
             seq=4096)
TRAIN_FLAGS = ["--system", "h100:16", "--model", "llama3-8b", "--layout", "tp=8,dp=2",
               "--batch-tokens", "32768", "--seq", "4096"]
# About 2 s: 196 candidates, 16 simulated.
SWEEP = dict(system="h100:8", model="llama3-8b", batch_tokens="64Ki", seq=4096, top=3)
SWEEP_FLAGS = ["--system", "h100:8", "--model", "llama3-8b", "--batch-tokens", "64Ki", "--seq",
               "4096", "--top", "3"]
# About 1 s: every transfer of the step's collectives as flows.
SLOW_TRAIN = dict(system="tpu-v5e:16x16", model="llama3-8b", layout="fsdp=256",
                  batch_tokens="1Mi", seq=4096, every_chip=True, flows=True)


def with_flag(flags, flag, value):
    """`flags` with the value of `flag` replaced."""
    i = flags.index(flag)
    return flags[:i + 1] + [value] + flags[i + 2:]


def executable(*args):
    """(exit code, stdout, stderr) of the podsim executable."""
    done = subprocess.run([PODSIM, *args], capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def executable_json(*args):
    code, out, err = executable(*args, "--json")
    assert code == 0, err
    return json.loads(out)


def executable_error(*args):
    """The executable's stderr for a failing command, as podsim.Error words it."""
    code, _, err = executable(*args)
    assert code != 0
    return code, err.removesuffix("\n").removeprefix("podsim: error: ")


class ImportTest(unittest.TestCase):
    def test_the_built_package_is_imported(self):
        self.assertTrue(os.path.exists(podsim._podsim.__file__))
        self.assertNotEqual(os.path.dirname(os.path.dirname(podsim.__file__)), HERE)
        for name in ("System", "Model", "Layout", "train", "infer", "collective", "sweep",
                     "replay", "Error"):
            self.assertIn(name, podsim.__all__)
            self.assertTrue(hasattr(podsim, name), name)


class CommandTest(unittest.TestCase):
    def test_train_equals_the_cli_json(self):
        result = podsim.train(**TRAIN)
        self.assertIsInstance(result, podsim.TrainResult)
        self.assertEqual(result.to_dict(), executable_json("train", *TRAIN_FLAGS))
        self.assertEqual(result.step_time_s, result.to_dict()["step_time_s"])
        self.assertEqual(result.mfu, result["mfu"])
        self.assertEqual(result.breakdown.compute, result.to_dict()["breakdown"]["compute"])
        self.assertEqual(result.simulation.programs[0].name, "stage 0")
        self.assertIn("step_time_s=", repr(result))

    def test_specs_pass_their_strings(self):
        specs = dict(TRAIN, system=podsim.System("h100:16"), model=podsim.Model("llama3-8b"),
                     layout=podsim.Layout("tp=8,dp=2"))
        self.assertEqual(podsim.train(**specs), podsim.train(**TRAIN))

    def test_sweep(self):
        result = podsim.sweep(**SWEEP)
        self.assertIsInstance(result, podsim.SweepResult)
        self.assertEqual(result.to_dict(), executable_json("sweep", *SWEEP_FLAGS))
        self.assertEqual(len(result.layouts), 3)
        self.assertEqual(result.best, result.layouts[0])
        times = [entry.step_time_s for entry in result.layouts]
        self.assertEqual(times, sorted(times))

    def test_collective_with_a_list(self):
        result = podsim.collective(system="tpu-v5e:4x4", op="all-reduce", bytes="1MiB",
                                   axes=["x", "y"])
        self.assertIsInstance(result, podsim.CollectiveResult)
        self.assertEqual(result.to_dict(), executable_json(
            "collective", "--system", "tpu-v5e:4x4", "--op", "all-reduce", "--bytes", "1MiB",
            "--axes", "x,y"))
        self.assertGreater(result.busbw_Bps, 0)

    def test_infer_with_a_batch_list(self):
        result = podsim.infer(system="h100:8", model="llama3-8b", layout="tp=8", phase="decode",
                              batch=[1, 16], context=4096)
        self.assertIsInstance(result, podsim.InferResult)
        self.assertEqual(result.to_dict(), executable_json(
            "infer", "--system", "h100:8", "--model", "llama3-8b", "--layout", "tp=8",
            "--phase", "decode", "--batch", "1,16", "--context", "4096"))
        self.assertEqual([point.batch for point in result.points], [1, 16])

    def test_replay_of_a_written_schedule(self):
        with tempfile.TemporaryDirectory() as folder:
            schedule = pathlib.Path(folder) / "step.pb"
            trained = podsim.train(**TRAIN, write_schedule=schedule)
            replayed = podsim.replay(schedule)
            self.assertIsInstance(replayed, podsim.ReplayResult)
            self.assertEqual(replayed.to_dict(), executable_json("replay", str(schedule)))
        self.assertEqual(replayed.step_time_s, trained.step_time_s)

    def test_scenario_file(self):
        scenario = os.path.join(os.path.dirname(HERE), "scenario", "examples",
                                "infer_llama3_70b_tpu_v5e.textproto")
        result = podsim.run(scenario)
        self.assertIsInstance(result, podsim.ScenarioResult)
        self.assertEqual(result.to_dict(), executable_json("run", scenario))

    def test_bool_flags(self):
        default = podsim.train(**TRAIN)
        self.assertEqual(podsim.train(**TRAIN, every_chip=False), default)
        every_chip = podsim.train(**TRAIN, every_chip=True)
        self.assertEqual(every_chip.to_dict(),
                         executable_json("train", *TRAIN_FLAGS, "--every-chip"))
        self.assertEqual(every_chip.simulation.simulated_chips, 16)
        self.assertEqual(default.simulation.simulated_chips, 1)

    def test_text_outputs(self):
        scenario = podsim.train(**TRAIN, dump_scenario=True)
        self.assertEqual(scenario, executable("train", *TRAIN_FLAGS, "--dump-scenario")[1])
        self.assertNotIn("json", scenario)  # --json is not added to what it writes down.
        self.assertTrue(podsim.topology("h100:8", dot=True).startswith('graph "h100:8"'))
        self.assertIn("--batch-tokens", podsim.usage("train"))

    def test_raw_command_line_prints_what_the_executable_prints(self):
        args = ["topology", "tpu-v5e:4x4"]
        result = podsim.cli(args)
        self.assertEqual((result.exit_code, result.stdout, result.stderr), executable(*args))


class WarningTest(unittest.TestCase):
    def test_a_layout_that_does_not_fit_warns_or_raises(self):
        unfit = dict(TRAIN, batch_tokens=262144)
        with self.assertWarns(podsim.PodsimWarning) as caught:
            step = podsim.train(**unfit)
        self.assertFalse(step.fits)
        self.assertEqual(str(caught.warning), executable("train", *TRAIN_FLAGS[:-3], "262144",
                                                         "--seq", "4096")[2]
                         [len("podsim: warning: "):-1])
        with self.assertRaises(podsim.Error) as raised:
            podsim.train(**unfit, require_fit=True)
        self.assertTrue(str(raised.exception).startswith("--require-fit: layout "))


class ErrorTest(unittest.TestCase):
    def assert_cli_error(self, call, args):
        code, message = executable_error(*args)
        with self.assertRaises(podsim.Error) as raised:
            call()
        self.assertEqual(str(raised.exception), message)
        self.assertEqual(raised.exception.exit_code, code)
        self.assertIsInstance(raised.exception, ValueError)
        return raised.exception

    def test_bad_input_has_the_cli_message(self):
        error = self.assert_cli_error(lambda: podsim.train(**dict(TRAIN, system="h100")),
                                      ["train", *with_flag(TRAIN_FLAGS, "--system", "h100")])
        self.assertEqual(error.exit_code, 1)
        self.assertTrue(str(error).startswith("--system: system 'h100': expected NAME:SIZE"))

    def test_a_failed_run_has_the_cli_message(self):
        self.assert_cli_error(lambda: podsim.train(**dict(TRAIN, layout="tp=3")),
                              ["train", *with_flag(TRAIN_FLAGS, "--layout", "tp=3")])

    def test_usage_errors_raise(self):
        error = self.assert_cli_error(lambda: podsim.train(system="h100:16"),
                                      ["train", "--system", "h100:16"])
        self.assertEqual(error.exit_code, 2)

    def test_an_unknown_keyword_gets_the_cli_error(self):
        error = self.assert_cli_error(lambda: podsim.train(**TRAIN, bogus=3),
                                      ["train", *TRAIN_FLAGS, "--bogus", "3"])
        self.assertIn("--bogus", str(error))

    def test_values_python_cannot_pass(self):
        with self.assertRaises(TypeError):
            podsim.train(**dict(TRAIN, seq={"tokens": 4096}))
        with self.assertRaises(ValueError):
            podsim.train(**dict(TRAIN, model="llama3-8b\0"))


class SpecTest(unittest.TestCase):
    def test_system(self):
        system = podsim.System("h100:16")
        self.assertEqual((system.chips, system.kind, system.nodes), (16, "gpu", 2))
        self.assertEqual(system.chip.name, "h100")
        self.assertEqual(system.chip.hbm_bytes, podsim.topology("h100:16").chip.hbm_bytes)
        torus = podsim.System("tpu-v5p:4x4x8")
        self.assertEqual((torus.shape, torus.axes, torus.chips), ([4, 4, 8], ["x", "y", "z"], 128))
        self.assertEqual(str(torus), "tpu-v5p:4x4x8")
        self.assertEqual(repr(torus), "System('tpu-v5p:4x4x8')")
        self.assertEqual(podsim.System("h100:16"), system)

    def test_model(self):
        model = podsim.Model("llama3-8b")
        self.assertEqual((model.layers, model.d_model, model.heads, model.kv_heads),
                         (32, 4096, 32, 8))
        self.assertAlmostEqual(model.params / 8.03e9, 1, delta=0.01)  # Llama 3 8B: 8.03 B.
        custom = podsim.Model("custom:layers=4,d_model=1024,ffn=4096,heads=16,kv_heads=8,"
                              "head_dim=64,vocab=4096,gated=0")
        self.assertEqual((custom.layers, custom.gated_mlp), (4, False))

    def test_layout(self):
        layout = podsim.Layout("tp=8,dp=2")
        self.assertEqual((layout.dp, layout.tp, layout.pp, layout.chips), (2, 8, 1, 16))
        self.assertIsNone(layout.microbatches)
        self.assertEqual(layout.text, podsim.train(**TRAIN).layout)  # The canonical form.
        pipelined = podsim.Layout("pp=4,dp=2,microbatches=8,schedule=interleaved,"
                                  "virtual_stages=2")
        self.assertEqual((pipelined.microbatches, pipelined.schedule, pipelined.virtual_stages),
                         (8, "interleaved", 2))
        self.assertEqual(podsim.InferenceLayout("tp=8,tp2=2").chips, 16)

    def test_bad_specs_raise_the_library_message(self):
        # The CLI says the same after the flag's name.
        for make, flag, text in ((podsim.System, "--system", "h100"),
                                 (podsim.Model, "--model", "llama3-7b"),
                                 (podsim.Layout, "--layout", "tq=2")):
            _, message = executable_error("train", *with_flag(TRAIN_FLAGS, flag, text))
            with self.assertRaises(podsim.Error) as raised:
                make(text)
            self.assertEqual(f"{flag}: {raised.exception}", message)
            self.assertEqual(raised.exception.exit_code, 1)
        with self.assertRaises(TypeError):
            podsim.System(16)


class ResultTest(unittest.TestCase):
    def test_results_are_read_only_views(self):
        result = podsim.train(**TRAIN)
        copy = result.to_dict()
        copy["step_time_s"] = 0
        self.assertNotEqual(result.step_time_s, 0)
        with self.assertRaises(AttributeError):
            result.step_time_s = 0
        with self.assertRaises(AttributeError) as raised:
            result.no_such_key  # noqa: B018
        self.assertIn("step_time_s", str(raised.exception))  # It lists the keys.
        self.assertIn("breakdown", dir(result))
        self.assertEqual(pickle.loads(pickle.dumps(result)), result)
        system = podsim.System("h100:8")
        self.assertEqual(pickle.loads(pickle.dumps(system)).to_dict(), system.to_dict())


class GilTest(unittest.TestCase):
    def test_other_threads_run_during_a_simulation(self):
        # With the GIL held, this thread could not run until the simulation returned: the
        # longest gap between its increments would be the simulation's whole time.
        done = threading.Event()
        timing = {}

        def simulate():
            start = time.perf_counter()
            timing["result"] = podsim.train(**SLOW_TRAIN)
            timing["seconds"] = time.perf_counter() - start
            done.set()

        worker = threading.Thread(target=simulate)
        counter, longest_gap = 0, 0.0
        # Before start(): it waits for the new thread, which may be in the simulation already.
        last = time.perf_counter()
        worker.start()
        while not done.is_set():
            counter += 1
            now = time.perf_counter()
            longest_gap, last = max(longest_gap, now - last), now
        # The gap that ended when the simulation did counts too.
        longest_gap = max(longest_gap, time.perf_counter() - last)
        worker.join()
        self.assertGreater(timing["seconds"], 0.2, "the simulation is too short to tell")
        self.assertLess(longest_gap, timing["seconds"] / 4, f"{counter} increments")

    def test_simulations_in_threads_give_the_serial_results(self):
        calls = [lambda: podsim.train(**TRAIN),
                 lambda: podsim.collective(system="h100:8", op="all-reduce", bytes="64MiB")]
        serial = [call() for call in calls]
        parallel = [None] * len(calls)

        def run(i):
            parallel[i] = calls[i]()

        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(parallel, serial)


class FlagTest(unittest.TestCase):
    def test_keywords_become_flags(self):
        self.assertEqual(
            podsim._cli._flags(dict(batch_tokens=262144, every_chip=True, exact=False,
                                    trace=None, axes=["x", "y"], bytes=1.5e6,
                                    system=podsim.System("ring:8"),
                                    write_schedule=pathlib.Path("a/b.pb"))),
            ["--batch-tokens", "262144", "--every-chip", "--axes", "x,y", "--bytes",
             "1500000.0", "--system", "ring:8", "--write-schedule", "a/b.pb"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
