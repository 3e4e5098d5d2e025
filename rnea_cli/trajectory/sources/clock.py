"""A time column in seconds without losing what the file holds: a clock time (Unix epoch seconds,
nanoseconds since 1970) is counted from its first value, subtracted exactly in the column's own
unit before it becomes a double of seconds.

A double of t seconds resolves t * 2^-52 s: finer than a nanosecond up to 2^20 s (12 days), but
238 ns at 1.7e9 s, which turns the second differences of a 1 kHz log into noise. A time column
whose first value is CLOCK seconds or more from 0 is therefore counted from that value, as a bag's
stamps are from the first (time 0 is the first sample; a notice gives its value); other time is
kept as written. Either way a value becomes seconds in one rounding, a division by its unit, so
1500 ms, 1.5 s and 1500000000 ns give the same double, as does a bag stamp of that instant.
"""

from decimal import Decimal

import numpy as np

from ...errors import TrajectoryError

UNITS = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}  # per second
PLACES = {"s": 9, "ms": 6, "us": 3, "ns": 0}  # decimal places of a nanosecond
CLOCK = 2.0**20  # seconds: from here on a double of the seconds is coarser than 2^-32 s
MOST_TIME = 1e18  # seconds (3e10 years): beyond, a time is in other units, or its span overflows
HINT = "another unit? see --time-unit"


class Clock:
    """Seconds from time 0 of a time column's values, block after block, time 0 chosen once from
    the first value (so that every block, whatever its size, is counted from the same origin).
    where(k): the place of sample k in the file, for messages."""

    def __init__(self, label, where, unit="s", hint=HINT):
        self.label, self.where, self.unit, self.hint = label, where, unit, hint
        self.per_second, self.places = UNITS[unit], PLACES[unit]
        self.origin = None  # the first value (int, float or decimal.Decimal, in the unit) when a clock time, else 0

    def start(self, first, k=0):
        """Time 0 from the column's first value (sample k), once; the origin chosen."""
        if self.origin is None:
            seconds = abs(float(first)) / self.per_second
            if not seconds <= MOST_TIME:
                raise TrajectoryError(self.label, self.where(k), f"time {float(first) / self.per_second!r} s is more "
                                                                 f"than {MOST_TIME:g} s from 0 ({self.hint})")
            self.origin = first if seconds >= CLOCK else 0
        return self.origin

    def seconds(self, values, start=0):
        """(N,) float64 seconds from time 0 of (N,) int64 or float64 values in the column's unit
        (samples start.. of the file)."""
        if len(values) == 0:
            return np.empty(0)
        origin = self.start(values[0].item(), start)
        if values.dtype.kind in "iu":
            return _minus(values.astype(np.int64), int(origin), self, start) / self.per_second  # one rounding
        d = values - float(origin) if origin else values  # exact between doubles within a factor 2
        return d / self.per_second if self.per_second != 1 else d

    def started(self, traj):
        """Tell the trajectory where its time 0 is (once the first value is read)."""
        if self.origin:
            traj.origin = float(self.origin) / self.per_second
            traj.notices.append(self.notice())

    def notice(self):
        """The note that says where time 0 is, or None when time is kept as written."""
        if not self.origin:
            return None
        shown = f"{self.origin.normalize():f}" if isinstance(self.origin, Decimal) else self.origin
        return (f"time 0 at {shown} {self.unit}, the first time (a clock time, counted from there exactly: "
                "doubles of its seconds are coarser than a nanosecond)")


def from_ns(d):
    """Seconds of (N,) int64 nanoseconds since time 0 (a bag's stamps, a clock time's offsets):
    one correctly rounded division, so the same double as the decimal seconds of that instant."""
    return d / 1e9


def _minus(values, origin, clock, start):
    """values - origin in int64, exactly; an error for a difference beyond int64."""
    d = values - np.int64(origin)
    over = ((values ^ origin) & (values ^ d)) < 0  # signs differ and the result took the subtrahend's
    if over.any():
        k = int(np.flatnonzero(over)[0])
        raise TrajectoryError(clock.label, clock.where(start + k),
                              f"time {int(values[k])} {clock.unit} is too far from the first, {origin} {clock.unit}")
    return d
