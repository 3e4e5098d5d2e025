"""DataFrames in and out, for clusters: the function to hand to dask's `map_partitions`, Ray Data's
`map_batches(batch_format="pyarrow")` or Spark's `mapInArrow`.

`torques_frame(model, frame, **options)` takes a pandas or polars DataFrame, or a pyarrow Table
or RecordBatch, with the CSV's column names, and returns the same kind with `time` (when given)
and the columns `rnea torques` writes for the same options. `check_frame(model, frame, ...)`
returns a CheckSummary of the partition; summaries combine associatively (`a.merge(b)`) into the
whole run's verdict, to the bit, so that a cluster checks a dataset without gathering it. A motor
RMS over a thermal window does not merge (its windows cross the partitions' borders): merging
such summaries raises RneaError. The options are checked as the CLI checks them (options.py).

Finite differences need neighbours: a partition is taken as a whole trajectory. Split one
trajectory across partitions only when its rows carry qd and qdd (else the derived rates at
each partition's edges are one-sided, not those of the whole run); a partition too short to
differentiate alone is refused.
"""

from dataclasses import dataclass, field, replace

import numpy as np

from ..dynamics.engine import GRAVITY
from ..errors import RneaError
from ..trajectory.sources.layout import ColumnNames, Layout
from ..trajectory.sources.tables import open_table

LABEL = "<frame>"


def torques_frame(model, frame, *, gravity=GRAVITY, floating=None, friction=False, actuators=None, split=False,
                  wrench_frame="world", mimic=True, degrees=False, dt=None, static=False, time_unit=None):
    """The torques of a frame's rows, as a frame of the same kind (see the module's docstring).
    actuators: a --actuators YAML path, or {joint: actuators.Drive}; time_unit: of a numeric time
    column (s, ms, us, ns; a timestamp's is its type's). The frame may come first, as dask's
    map_partitions(torques_frame, model) and pandas' pipe pass it."""
    model, frame = _model_first(model, frame)
    kind, table = _as_arrow(frame)
    run = _run(model, table, gravity, floating, friction, actuators, split, wrench_frame, mimic, degrees, dt, static,
               time_unit)
    from .columns import torque_table

    columns = torque_table(run.coords, run.traj, run.pipeline, power=bool(run.pipeline.drives))
    blocks = [columns.values(block) for block in run.pipeline.blocks(run.traj)]
    data = np.concatenate(blocks) if blocks else np.empty((0, len(columns.names)))
    if run.traj.origin:  # a clock time, counted from its first value: the frame's own time again
        data[:, columns.names.index("time")] += run.traj.origin
    import pyarrow as pa

    return _like(kind, pa.table({name: data[:, k] for k, name in enumerate(columns.names)}))


def check_frame(model, frame, limits=None, *, margin=1.0, gravity=GRAVITY, floating=None, friction=False,
                actuators=None, wrench_frame="world", mimic=True, degrees=False, dt=None, time_unit=None):
    """The CheckSummary of a frame's rows. limits: a --limits YAML path, or None for the URDF's.
    The frame may come first, as for torques_frame."""
    from .limits import limit_check

    model, frame = _model_first(model, frame)
    kind, table = _as_arrow(frame)
    run = _run(model, table, gravity, floating, friction, actuators, False, wrench_frame, mimic, degrees, dt, False,
               time_unit)
    check, _ = limit_check(model, run.coords, run.pipeline, limits, margin)
    for block in run.pipeline.blocks(run.traj):
        check.update(block)
    check.finish()
    return CheckSummary.of(check, run.traj.origin)


def _run(model, table, gravity, floating, friction, actuators, split, wrench_frame, mimic, degrees, dt, static,
         time_unit):
    """The library's run of a frame's table (one engine thread: the cluster's workers are the
    parallel work)."""
    from ..trajectory.sources.clock import UNITS
    from .session import RunOptions, open_run

    if time_unit is not None and time_unit not in UNITS:
        raise RneaError(LABEL, None, f"time_unit {time_unit!r}: expected one of {', '.join(UNITS)}")
    options = RunOptions(gravity=gravity, floating=model.floating if floating is None else floating,
                         friction=friction, actuators=actuators, split=split, wrench_frame=wrench_frame, mimic=mimic,
                         degrees=degrees, dt=dt, static=static, time_unit=time_unit, threads=1)

    def source(coords, floating):
        layout = Layout(coords, floating, [link.name for link in model.links])
        return open_table(table, LABEL, "table", layout, ColumnNames(coords, layout, time_unit=options.time_unit))

    return open_run(model, source, options)


def _model_first(a, b):
    """(model, frame), whichever came first; a model that is not a Model is refused."""
    from ..model.tree import Model

    model, frame = (b, a) if isinstance(b, Model) and not isinstance(a, Model) else (a, b)
    if not isinstance(model, Model):
        raise RneaError("model", None, f"expected a rnea_cli.Model (load_robot(path)), got {type(model).__name__}")
    return model, frame


def _as_arrow(frame):
    """(kind, pyarrow Table) of a pandas or polars DataFrame, or a pyarrow Table or RecordBatch."""
    import pyarrow as pa

    if isinstance(frame, pa.Table):
        return "arrow", frame
    if isinstance(frame, pa.RecordBatch):
        return "batch", pa.Table.from_batches([frame])
    module, name = type(frame).__module__.split(".")[0], type(frame).__name__
    try:
        if module == "polars" and name == "DataFrame":
            return "polars", frame.to_arrow()
        if module == "pandas" and name == "DataFrame":
            return "pandas", pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowException, TypeError, ValueError) as exc:  # a column pyarrow cannot hold
        raise RneaError(LABEL, None, f"cannot be read as a table: {exc}") from None
    hint = " (collect() it first)" if name == "LazyFrame" else ""
    raise RneaError(LABEL, None, f"expected a pandas or polars DataFrame, or a pyarrow Table or RecordBatch, got "
                                 f"{module}.{name}{hint}")


def _like(kind, table):
    if kind == "arrow":
        return table
    if kind == "batch":
        return table.combine_chunks().to_batches()[0] if table.num_rows else table.to_batches()
    if kind == "polars":
        import polars as pl

        return pl.from_arrow(table)
    return table.to_pandas()


@dataclass
class CheckedLimit:
    """One joint and quantity of a partition, in a form that merges with the next partition's into
    exactly what the whole run gives: peaks and counts by comparison and sums, an RMS over the run
    from its exact sum of squares. A motor RMS over a thermal window does not merge: its windows
    cross the partitions' borders."""

    joint: str
    quantity: str
    allowed: float | None
    worst: float
    utilisation: float
    worst_time: float | None
    count: int
    first_time: float | None
    first_value: float | None
    samples: int = 0  # for RMS limits (whose worst is the RMS): the samples it is of
    squares: object = None  # for RMS limits: the stats.ExactSum of their squares
    window: float | None = None  # motor_rms: the drive's thermal window (s)

    def merge(self, other):
        if self.window or other.window:
            window = self.window or other.window
            raise RneaError(LABEL, None, f"{self.joint} motor_rms is over a thermal window of {window:g} s, whose "
                                         "windows cross the partitions' borders: its summaries do not merge (check "
                                         "the run whole, e.g. with rnea check)")
        best = self if self.utilisation >= other.utilisation else other
        first = self if self.count and (not other.count or _earlier(self.first_time, other.first_time)) else other
        merged = replace(best, count=self.count + other.count, first_time=first.first_time,
                         first_value=first.first_value)
        if self.squares is not None:  # an RMS over the run, from the exact sum of both partitions' squares
            from .stats import ExactSum

            squares = ExactSum(1).merge(self.squares).merge(other.squares)
            samples = self.samples + other.samples
            rms = _rms(squares, samples)
            with np.errstate(all="ignore"):
                use = rms / self.allowed
            merged = replace(merged, worst=rms, utilisation=use, count=int(use > 1), samples=samples, squares=squares)
        return merged

    def to_json(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("samples", "squares", "window")}


def _rms(squares, samples):
    """As stats.Peaks.rms, of one column's exact sum of squares."""
    from fractions import Fraction

    from .stats import exact_sqrt

    return exact_sqrt(squares.fractions()[0] / Fraction(max(samples, 1)))


def _earlier(a, b):
    return b is None or (a is not None and a <= b)


@dataclass
class CheckSummary:
    """The limits of one or more partitions: `ok`, `violations`, merge(), to_json()."""

    limits: list = field(default_factory=list)
    unchecked: list = field(default_factory=list)
    samples: int = 0

    @classmethod
    def of(cls, check, origin=0.0):
        """The summary of a LimitCheck whose times are counted from `origin` s of the frame's time."""
        def frame_time(t):
            return t if t is None or not origin else t + origin

        limits = []
        for c in check.checks:
            window = check.drives[c.joint].thermal_window if c.quantity == "motor_rms" else None
            whole_run = c.quantity == "rms_effort" or (c.quantity == "motor_rms" and not window)
            limits.append(CheckedLimit(c.joint, c.quantity, c.allowed, c.worst, c.utilisation,
                                       frame_time(c.worst_time), c.count, frame_time(c.first_time), c.first_value,
                                       check.samples if whole_run else 0, check.squares(c) if whole_run else None,
                                       window))
        return cls(limits, list(check.unchecked), check.samples)

    def merge(self, other):
        if not isinstance(other, CheckSummary):
            raise RneaError(LABEL, None, f"merge takes a CheckSummary, not {type(other).__name__}")
        if not self.limits and not self.samples:
            return other
        if [(c.joint, c.quantity) for c in self.limits] != [(c.joint, c.quantity) for c in other.limits]:
            raise ValueError("the summaries are of different limits")
        return CheckSummary([a.merge(b) for a, b in zip(self.limits, other.limits)], self.unchecked,
                            self.samples + other.samples)

    @property
    def violations(self):
        return [c for c in self.limits if c.count]

    @property
    def ok(self):
        return not self.violations

    def to_json(self):
        return {"ok": self.ok, "samples": self.samples,
                "violations": [c.to_json() for c in self.violations],
                "unchecked": [{"joint": j, "quantity": q} for j, q in self.unchecked],
                "checks": [c.to_json() for c in self.limits]}
