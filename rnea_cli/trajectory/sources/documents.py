"""YAML and JSON trajectories, read whole (at most safeload.MAX_BYTES).

Columnar, `time: [..]`, `q: {joint: [..]}`, `qd: {..}`, `qdd: {..}` (and `fext`, `effort`), or a
list of samples, `- {time: .., q: {joint: ..}, qd: {..}, qdd: {..}}`.
"""

import numpy as np

from ...model import safeload
from ...errors import TrajectoryError
from .base import Chunk, Trajectory, ignored
from .clock import Clock
from .layout import PREFIXES, wrenched_links


def open_document(stream, label, fmt, layout, time_unit=None):
    """A Trajectory of a YAML or JSON document (read whole); time in time_unit (default s)."""
    doc = safeload.load(safeload.read_text(stream, label, TrajectoryError), label, fmt, TrajectoryError)
    if doc is None or (isinstance(doc, (str, bytes)) and not doc.strip()):
        raise TrajectoryError(label, None, "empty file")
    if isinstance(doc, list):
        doc = _samples_to_columns(doc, label)
    if not isinstance(doc, dict) or "q" not in doc:
        raise TrajectoryError(label, None, "expected a mapping with time (optional), q, qd, qdd, "
                                           "or a list of such samples")
    extras, present, unread = [], {}, []  # unread: a joint's entries not read, as a column would be named
    for prefix, block in doc.items():
        if prefix == "time":
            continue
        if prefix not in PREFIXES:
            extras.append(prefix)
            continue
        if not isinstance(block, dict):
            raise TrajectoryError(label, prefix, "expected a mapping from name to a list of numbers")
        for name, values in block.items():
            if (prefix, name) in layout.wanted:
                present[(prefix, name)] = _numbers(values, label, f"{prefix}.{name}")
            else:
                extras.append(f"{prefix}.{_key(name)}")
                unread.append(f"{prefix}_{name}")
    chosen, derived = layout.choose(label, present)
    if time_unit is not None and "time" not in doc:
        raise TrajectoryError(label, None, f"--time-unit {time_unit}: the file has no time")
    time = _numbers(doc["time"], label, "time", exact=True) if "time" in doc else None
    keys = [key for g in chosen for key in layout.groups[g]]
    used = [present[key] for key in keys]
    lengths = {len(v) for v in used} | ({len(time)} if time is not None else set())
    if len(lengths) > 1:
        named = ([("time", len(time))] if time is not None else []) + [(f"{p}.{n}", len(present[(p, n)]))
                                                                        for p, n in keys]
        first = named[0]
        other = next(x for x in named if x[1] != first[1])
        raise TrajectoryError(label, None, f"lists of different lengths ({', '.join(map(str, sorted(lengths)))}): "
                                           f"{other[0]} has {other[1]}, {first[0]} {first[1]}")
    N = lengths.pop() if lengths else 0
    if N == 0:
        raise TrajectoryError(label, None, "no samples")
    traj = Trajectory(label, time is not None, tuple(chosen), derived, wrenched=wrenched_links(chosen),
                      ignored=tuple(unread))
    if extras:
        traj.notices.append(ignored(extras, "entry"))
    if time is not None:
        clock = Clock(label, lambda k: f"time[{k}]", time_unit or "s")
        time = clock.seconds(time)
        clock.started(traj)
    data = {g: _stack([present[key] for key in layout.groups[g]], N) for g in chosen}
    traj.chunks = iter([Chunk(0, time, data)])
    return traj


def _samples_to_columns(doc, label):
    """A list of samples -> the columnar form: {time: [..], prefix: {name: [..]}}."""
    columns, times = {}, []
    for k, sample in enumerate(doc):
        if not isinstance(sample, dict):
            raise TrajectoryError(label, f"sample {k}", "expected a mapping with time, q, qd, qdd")
        for key, value in sample.items():
            if key == "time":
                times.append(value)
            elif key in PREFIXES:
                if not isinstance(value, dict):
                    raise TrajectoryError(label, f"sample {k}: {key}", "expected a mapping from name to a number")
                block = columns.setdefault(key, {})
                for name, x in value.items():
                    block.setdefault(name, [None] * k).append(x)
            else:
                columns.setdefault(key, None)
        for block in columns.values():
            for values in (block or {}).values():
                values.extend([None] * (k + 1 - len(values)))
    if times:
        if len(times) != len(doc):
            raise TrajectoryError(label, None, "time is given in some samples and not in others")
        columns["time"] = times
    return columns


def _key(name):
    """A mapping key for a notice: null and booleans in YAML's own spelling (not Python's None, True)."""
    return "null" if name is None else str(name).lower() if isinstance(name, bool) else str(name)


def _numbers(values, label, path, exact=False):
    """(N,) float64 of a list of numbers; exact: int64 when every one is an integer of int64
    (a time in nanoseconds, say, which a double would round)."""
    if not isinstance(values, list):
        raise TrajectoryError(label, path, f"expected a list of numbers, got {type(values).__name__}")
    out = np.empty(len(values))
    for k, x in enumerate(values):
        value = safeload.number(x)
        if value is None:
            raise TrajectoryError(label, f"{path}[{k}]", safeload.why_not_a_number(x))
        out[k] = value
    if exact and values and all(type(x) is int and -2**63 <= x < 2**63 for x in values):
        return np.array(values, dtype=np.int64)
    return out


def _stack(columns, rows):
    """(rows, len(columns)) from 1-D columns, column-major (the engine's layout); (rows, 0) for none."""
    return np.stack(columns).T if columns else np.empty((rows, 0))
