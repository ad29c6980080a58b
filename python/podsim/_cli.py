"""Commands as the command line runs them: keyword arguments become flags (docs/python.md)."""

import json
import numbers
import os
import sys
import warnings

from . import _podsim

_ERROR_PREFIX = "podsim: error: "
_WARNING_PREFIX = "podsim: warning: "

# Flags whose output is text, not one JSON object: the command returns that text.
_TEXT_FLAGS = ("dump_scenario", "dot", "help")


class Error(ValueError):
    """A command or a spec the command line refuses.

    str(error) is the CLI's stderr without its "podsim: error: " prefix and final newline: one
    line for bad input or a failed run (exit_code 1) or for a usage error (exit_code 2). The
    parsers behind System, Model and Layout raise it with exit_code 1.
    """

    def __init__(self, message, exit_code=1):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class PodsimWarning(UserWarning):
    """What the CLI prints as "podsim: warning: ..." on stderr, e.g. a layout that does not fit
    in HBM (require_fit=True makes that an Error instead)."""


class CliResult:
    """What `podsim ARGS...` printed: exit_code, stdout and stderr, as the executable would."""

    def __init__(self, exit_code, stdout, stderr):
        self.exit_code = exit_code
        self.stdout = stdout
        self.stderr = stderr

    def __repr__(self):
        return (f"CliResult(exit_code={self.exit_code!r}, stdout={self.stdout!r}, "
                f"stderr={self.stderr!r})")


def _run(args):
    # A C string ends at NUL, so an argument holding one would reach the CLI cut short.
    for arg in args:
        if "\0" in arg:
            raise ValueError(f"embedded null character in argument {arg!r}")
    return _podsim.run(args)


def cli(args):
    """Runs `podsim ARGS...` in this process (the GIL released) and never raises for its exit."""
    if isinstance(args, (str, bytes)):
        raise TypeError("cli() takes a list of arguments, like ['topology', 'h100:8']")
    return CliResult(*_run([_text(arg) for arg in args]))


def _text(value):
    """The command-line text of one value: specs by their string, lists comma-joined."""
    spec = getattr(value, "spec", None)
    if isinstance(spec, str):
        return spec
    if isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, bool):
        raise TypeError(f"cannot pass {value!r} as a value: a bool is a flag (True: given, "
                        "False: omitted)")
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))
    if isinstance(value, (list, tuple)):
        return ",".join(_text(item) for item in value)
    raise TypeError(f"cannot pass {type(value).__name__} {value!r} to podsim; use a str, number, "
                    "list, path, System, Model or Layout")


def _flags(kwargs):
    """--name-with-dashes VALUE for each keyword; True is a bare flag, False and None omit it."""
    args = []
    for name, value in kwargs.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            args.append(flag)
        else:
            args += [flag, _text(value)]
    return args


def _raise_for(exit_code, stderr):
    message = stderr[:-1] if stderr.endswith("\n") else stderr
    if message.startswith(_ERROR_PREFIX):
        message = message[len(_ERROR_PREFIX):]
    raise Error(message, exit_code)


def command(name, positionals, kwargs, result_type):
    """Runs `podsim NAME POSITIONALS... FLAGS... --json`; a result_type of its JSON object.

    With a text flag (dump_scenario, dot, help) the command prints text, not JSON: then --json
    is not added and the text is returned as a str.
    """
    text_output = any(kwargs.get(flag) for flag in _TEXT_FLAGS)
    args = [name] + [_text(p) for p in positionals] + _flags(kwargs)
    if not text_output:
        args.append("--json")
    exit_code, stdout, stderr = _run(args)
    if exit_code != 0:
        _raise_for(exit_code, stderr)
    for line in stderr.splitlines(keepends=True):
        if line.startswith(_WARNING_PREFIX):
            warnings.warn(line[len(_WARNING_PREFIX):].rstrip("\n"), PodsimWarning, stacklevel=3)
        else:
            sys.stderr.write(line)
    if text_output:
        return stdout
    return result_type(json.loads(stdout))


def usage(command_name=None):
    """The CLI's --help text of a command (or of podsim itself), e.g. usage('train')."""
    args = ([command_name] if command_name else []) + ["--help"]
    exit_code, stdout, stderr = _run(args)
    if exit_code != 0:
        _raise_for(exit_code, stderr)
    return stdout
