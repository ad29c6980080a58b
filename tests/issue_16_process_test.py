#!/usr/bin/env python3
"""issue 16, what only the real process shows: SIGINT or SIGTERM during a traced run stops it
with one message and leaves neither the trace nor its temporary behind (item 4, D6); protobuf's
own log lines never reach stderr (D9).

Usage: issue_16_process_test.py PODSIM_BINARY
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

# A traced step that runs for seconds (every chip, every transfer): long enough to interrupt.
COMMAND = ["train", "--system", "tpu-v5e:16x16", "--model", "llama3-8b", "--layout", "fsdp=256",
           "--batch-tokens", "1Mi", "--seq", "4096", "--every-chip", "--flows",
           "--max-transfers", "1e9", "--trace"]


def interrupt(binary, sig, name):
    with tempfile.TemporaryDirectory() as folder:
        target = os.path.join(folder, "step.json")
        process = subprocess.Popen([binary] + COMMAND + [target], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not any(f.startswith(".step.json.") for f in os.listdir(folder)):
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise AssertionError(f"{name}: the temporary trace never appeared")
            time.sleep(0.005)
        process.send_signal(sig)
        _, err = process.communicate(timeout=60)
        assert process.returncode == -sig, f"{name}: exit {process.returncode}, stderr {err!r}"
        expected = f"podsim: {'interrupted' if sig == signal.SIGINT else 'terminated'} ({name}); "
        assert err == expected + "partial output removed\n", f"{name}: stderr {err!r}"
        left = os.listdir(folder)
        assert left == [], f"{name}: left {left}"


def protobuf_log_is_silent(binary):
    with tempfile.TemporaryDirectory() as folder:
        schedule = os.path.join(folder, "bad.pb")
        with open(schedule, "wb") as f:
            f.write(b"\x0a\x01\xff")  # system: "\xff", invalid UTF-8 in a proto3 string.
        run = subprocess.run([binary, "replay", schedule], capture_output=True, text=True,
                             timeout=60)
        assert run.returncode == 1, run
        assert run.stderr == f"podsim: error: {schedule}: not a binary " \
                             "podsim.schedule.Schedule\n", run.stderr


def main():
    binary = sys.argv[1]
    interrupt(binary, signal.SIGINT, "SIGINT")
    interrupt(binary, signal.SIGTERM, "SIGTERM")
    protobuf_log_is_silent(binary)
    print("issue_16_process_test: ok")


if __name__ == "__main__":
    main()
