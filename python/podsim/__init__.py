"""podsim from Python: the command line's commands as functions (docs/python.md).

Each command takes the CLI's flags as keyword arguments, named after them with underscores
(batch_tokens=262144 is --batch-tokens 262144; every_chip=True is --every-chip; a list is
comma-joined; System, Model and Layout pass their string), runs in this process through the
same definitions and checks as the executable, with the GIL released, and returns the --json
object as a typed result (to_dict() is that JSON). What the CLI refuses raises Error with the
CLI's message.

    import podsim
    step = podsim.train(system="h100:16", model="llama3-8b", layout="tp=4,pp=2,dp=2,microbatches=8",
                        batch_tokens=262144, seq=4096)
    step.step_time_s, step.mfu  # (2.047003188316, 0.3904829797267483)
"""

from ._cli import CliResult, Error, PodsimWarning, cli, command as _command, usage
from ._results import (CollectiveResult, InferResult, Record, ReplayResult, ScenarioResult,
                       SweepResult, TopologyResult, TrainResult)
from ._specs import InferenceLayout, Layout, Model, System

__all__ = [
    "System", "Model", "Layout", "InferenceLayout",
    "train", "infer", "collective", "sweep", "replay", "topology", "run", "cli", "usage",
    "Error", "PodsimWarning", "CliResult", "Record", "TrainResult", "InferResult", "CollectiveResult",
    "SweepResult", "ReplayResult", "TopologyResult", "ScenarioResult",
]


def train(**flags):
    """`podsim train`: one training step; required: system, model, layout, batch_tokens, seq.

    usage('train') lists every flag. Returns a TrainResult.
    """
    return _command("train", [], flags, TrainResult)


def infer(**flags):
    """`podsim infer`: one inference step (phase, context) or a disaggregated deployment
    (prefill_len, decode_len); required: system, model, layout, batch. Returns an InferResult.
    """
    return _command("infer", [], flags, InferResult)


def collective(**flags):
    """`podsim collective`: one collective (system, op, bytes; axes, algorithm, ...), or a size
    sweep with sweep_bytes=True. Returns a CollectiveResult.
    """
    return _command("collective", [], flags, CollectiveResult)


def sweep(**flags):
    """`podsim sweep`: the valid layouts of a model ranked by step time; required: system,
    model, batch_tokens, seq. Returns a SweepResult.
    """
    return _command("sweep", [], flags, SweepResult)


def replay(file=None, **flags):
    """`podsim replay FILE`: one step of a schedule file (written by write_schedule=), or of a
    Chakra trace with chakra=PREFIX, system=... Returns a ReplayResult.
    """
    return _command("replay", [] if file is None else [file], flags, ReplayResult)


def topology(system, **flags):
    """`podsim topology SYSTEM`: chips, links, diameter, bandwidths. Returns a TopologyResult
    (the Graphviz text, a str, with dot=True).
    """
    return _command("topology", [system], flags, TopologyResult)


def run(scenario, **flags):
    """`podsim run SCENARIO`: a scenario file (docs/scenario.md). Returns a ScenarioResult."""
    return _command("run", [scenario], flags, ScenarioResult)


# Tracebacks and reprs name the classes where users find them: podsim.Error, not podsim._cli.Error.
for _name in __all__:
    if isinstance(globals()[_name], type):
        globals()[_name].__module__ = __name__
del _name
