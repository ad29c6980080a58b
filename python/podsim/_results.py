"""Typed views of the CLI's --json objects: every attribute is a key of the JSON, nothing else."""

import copy


def _wrap(value):
    if isinstance(value, dict):
        return Record(value)
    if isinstance(value, list):
        return [_wrap(item) for item in value]
    return value


def _short(value):
    if isinstance(value, dict):
        return "{...}"
    if isinstance(value, list):
        return f"[{len(value)} items]"
    return repr(value)


class Record:
    """A JSON object: its keys as attributes (record.step_time_s) and items (record["mfu"]).

    Nested objects are Records and lists of objects lists of Records; numbers, strings, bools
    and None are as json.loads gives them. to_dict() is a copy of the JSON object. Keys that are
    not identifiers, or that a method shadows, are reached by item.
    """

    __slots__ = ("_data",)

    def __init__(self, data):
        if not isinstance(data, dict):
            raise TypeError(f"{type(self).__name__} wraps a JSON object, not {type(data).__name__}")
        object.__setattr__(self, "_data", data)

    def __getattr__(self, name):
        # Private and special names are never keys (and _data is unset while unpickling).
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return _wrap(self._data[name])
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no key {name!r}; keys: "
                                 f"{', '.join(self._data)}") from None

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __reduce__(self):
        return type(self), (self._data,)

    def __getitem__(self, key):
        return _wrap(self._data[key])

    def __contains__(self, key):
        return key in self._data

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __eq__(self, other):
        if not isinstance(other, Record):
            return NotImplemented
        return type(self) is type(other) and self._data == other._data

    __hash__ = None

    def __dir__(self):
        return sorted(set(super().__dir__()) | {k for k in self._data if k.isidentifier()})

    def keys(self):
        return self._data.keys()

    def to_dict(self):
        """The JSON object, as json.loads returned it (a deep copy)."""
        return copy.deepcopy(self._data)

    def __repr__(self):
        fields = ", ".join(f"{k}={_short(v)}" for k, v in self._data.items())
        return f"{type(self).__name__}({fields})"


def _key(name, doc):
    """A property for a stable key of design.md's --json, so help() and editors list it."""
    return property(lambda self: self.__getattr__(name), doc=doc)


class TrainResult(Record):
    """`podsim train --json`: one training step."""

    __slots__ = ()
    step_time_s = _key("step_time_s", "Simulated time of one step, seconds.")
    tokens_per_s = _key("tokens_per_s", "Tokens trained per second.")
    mfu = _key("mfu", "Model FLOPs utilisation, 0 to 1 (flops_convention says how).")
    memory_per_chip_bytes = _key("memory_per_chip_bytes", "Peak memory of the largest stage.")
    fits = _key("fits", "Whether memory_per_chip_bytes fits the chip's HBM.")
    breakdown = _key("breakdown", "Seconds per category, mean per chip.")


class ReplayResult(Record):
    """`podsim replay --json`: one step of a schedule file or Chakra trace (without train's
    memory keys)."""

    __slots__ = ()
    step_time_s = _key("step_time_s", "Simulated time of one step, seconds.")
    tokens_per_s = _key("tokens_per_s", "Tokens trained per second.")
    mfu = _key("mfu", "Model FLOPs utilisation, 0 to 1.")
    breakdown = _key("breakdown", "Seconds per category, mean per chip.")


class InferResult(Record):
    """`podsim infer --json`: one step (step_time_s, ...), a batch list (points) or a
    disaggregated deployment (prefill, decode)."""

    __slots__ = ()
    step_time_s = _key("step_time_s", "Simulated time of one step, seconds (one batch size).")
    tokens_per_s = _key("tokens_per_s", "Tokens generated (or prefilled) per second.")
    memory_per_chip_bytes = _key("memory_per_chip_bytes", "Memory per chip, bytes.")
    fits = _key("fits", "Whether memory_per_chip_bytes fits the chip's HBM.")
    breakdown = _key("breakdown", "Seconds per category.")


class CollectiveResult(Record):
    """`podsim collective --json`: one collective, or a size sweep (sweep) with --sweep-bytes."""

    __slots__ = ()
    time_s = _key("time_s", "Simulated time of the collective, seconds.")
    algbw_Bps = _key("algbw_Bps", "Algorithm bandwidth: bytes / time_s.")
    busbw_Bps = _key("busbw_Bps", "Bus bandwidth, as nccl-tests defines it.")


class SweepResult(Record):
    """`podsim sweep --json`: the ranked layouts and what the sweep simulated and skipped."""

    __slots__ = ()
    layouts = _key("layouts", "Ranked layouts, fastest first: layout, step_time_s, mfu, fits, ...")

    @property
    def best(self):
        """The first of layouts (the fastest), or None when no layout was ranked."""
        layouts = self.layouts
        return layouts[0] if layouts else None


class TopologyResult(Record):
    """`podsim topology SYSTEM --json`: chips, switches, links, diameter, bandwidths."""

    __slots__ = ()


class ScenarioResult(Record):
    """`podsim run SCENARIO --json`: the JSON of the command the scenario file holds."""

    __slots__ = ()
