"""What every source yields: a Trajectory (what it holds, notices) and its samples as Chunks."""

from dataclasses import dataclass, field

import numpy as np

from ...errors import TrajectoryError, shown


@dataclass
class Chunk:
    """Consecutive samples: time (N,) in seconds or None, and the arrays of the groups, each
    (N, k): q, qd, qdd in the coordinates' joint order, and when the trajectory has them
    base_pose, base_twist, base_dtwist, 'fext:<link>' ([n; f]), 'fext_at:<link>' (point), effort."""

    start: int  # index of the first sample in the whole trajectory
    time: np.ndarray | None
    data: dict

    def __len__(self):
        return len(self.data["q"])

    @property
    def q(self):
        return self.data["q"]

    @property
    def qd(self):
        return self.data.get("qd")

    @property
    def qdd(self):
        return self.data.get("qdd")

    def sliced(self, i, j):
        """Samples i..j-1 of this chunk."""
        return Chunk(self.start + i, None if self.time is None else self.time[i:j],
                     {k: x[i:j] for k, x in self.data.items()})

    def then(self, other):
        """This chunk followed by `other` (the same groups)."""
        return Chunk(self.start, None if self.time is None else np.concatenate([self.time, other.time]),
                     {k: np.concatenate([x, other.data[k]]) for k, x in self.data.items()})


@dataclass
class Trajectory:
    """An opened trajectory: what it holds, what is still to be derived, and an iterator of
    Chunks (read lazily). Notices are text for the report: those found while reading are
    appended as the chunks go by, so a consumer reads them after the last chunk.

    A stage (derive.prepare) never changes the Trajectory it is given: it returns a new one
    (dataclasses.replace) whose chunks read the given one's. What reading finds as it goes, its
    notices and the clock's origin, is shared by all of them: the list and the `found` record
    are the same objects in every copy."""

    label: str
    has_time: bool
    groups: tuple  # the groups present
    derived: tuple = ()  # groups to derive, e.g. ("qd", "qdd")
    notices: list = field(default_factory=list)
    chunks: object = None  # iterator of Chunk
    line: object = None  # sample index -> line number in the file, or None
    unit: str = "sample"  # what a sample is called in messages: sample, row, message, point
    wrenched: tuple = ()  # links with external wrench columns
    stream: object = None  # the open file the chunks read, if any (closed by close(), or by the last chunk)
    found: dict = field(default_factory=dict)  # what reading finds: {"origin": seconds}
    ignored: tuple = ()  # columns not read, by name ('effort_j2'): a table's, a document's, a held bag topic's efforts

    @property
    def origin(self):
        """Seconds: the file's time at time 0 (a clock time's first value, see clock.py), once read."""
        return self.found.get("origin", 0.0)

    @origin.setter
    def origin(self, seconds):
        self.found["origin"] = seconds

    def close(self):
        if self.stream is not None:
            self.stream.close()

    def where(self, k):
        """Where sample k stands in the input, for messages: "line 12" or "sample 10"."""
        line = self.line(k) if self.line else None
        return f"line {line}" if line is not None else f"{self.unit} {k}"


def ignored(extras, noun="column"):
    """The notice for the columns (or entries) of a file that are not read: 'ignored 2 columns ...'."""
    plural = {"column": "columns", "entry": "entries"}[noun] if len(extras) > 1 else noun
    listed = ", ".join(shown(e)[1:-1] or "(one without a name)" for e in extras[:8])
    listed += ", ..." if len(extras) > 8 else ""
    return f"ignored {len(extras)} {plural} not read (not of this robot, or not for this command): {listed}"


def check_time(traj, c, previous=None, strict=True):
    """Time increases strictly within chunk c and from the `previous` time (for derivatives); not
    strict: it may repeat, but never goes back."""
    t = c.time if previous is None else np.concatenate([[previous], c.time])
    steps = np.diff(t)
    bad = np.flatnonzero(~(steps > 0) if strict else ~(steps >= 0))
    if bad.size:
        k = int(bad[0]) + (1 if previous is None else 0)
        before = float(c.time[k - 1]) if k > 0 else float(previous)
        why = ("is not after", "time must increase to derive velocities") if strict else (
            "is before", "time may repeat but not go back")
        raise TrajectoryError(traj.label, traj.where(c.start + k), f"time {float(c.time[k])!r} {why[0]} the previous "
                                                                   f"time {before!r} ({why[1]})")
