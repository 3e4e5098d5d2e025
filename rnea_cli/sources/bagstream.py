"""A JointState topic too large to hold in memory, read as it streams, batch after batch.

Holding a topic's joint values (bags.py) lets the messages be sorted by stamp and several
publishers be merged onto one time base; a topic of more than bags.MAX_VALUES values is read
here instead, in one pass and in bounded memory, which asks more of it: its messages that name
the robot's joints carry all of them, in stamp order (the log time's where a publisher's stamps
are zero), with a finite velocity for every joint in every message or in none (then qd is
derived; the first batch decides), and effort likewise. Messages that name none of the robot's
joints (another publisher's) are skipped. Anything else is an error naming the message, which
says to split the bag.
"""

import numpy as np

from ..errors import TrajectoryError, shown
from . import clock, jointstate, publishers
from .base import Chunk

LARGE = "in a topic this large, read as it streams"


class Unreadable(Exception):
    """(index of the message rosbags could not read, its exception)."""


def raw_batches(reader, connections, size):
    """([raw message], [log time]) of the topic's messages, `size` at a time; Unreadable for one
    that rosbags cannot read."""
    raws, times, read = [], [], 0
    try:
        for _, log_time, raw in reader.messages(connections=connections):
            raws.append(raw)
            times.append(log_time)
            read += 1
            if len(raws) == size:
                yield raws, times
                raws, times = [], []
    except Exception as exc:  # noqa: BLE001 (rosbags raises many kinds, each a plain message)
        raise Unreadable(read, exc) from None
    if raws:
        yield raws, times


def plan(first, coords, want_effort):
    """(use the stamps, read velocity, read effort) from the [Decoded] of the first batch."""
    carrying = [d for d in first if set(coords.joint_names) & set(d.names)]
    use_stamps = not carrying or any(d.stamp.any() for d in carrying)
    velocity = bool(carrying) and all(d.velocity is not None and np.isfinite(d.velocity).all() for d in carrying)
    effort = want_effort and bool(carrying) and all(d.effort is not None for d in carrying)
    return use_stamps, velocity, effort


class Stream:
    """The topic's Chunks, a batch each, read by `open_reader()`'s reader (its own: from the first
    message again, the first batch that `plan` saw included)."""

    def __init__(self, label, where, coords, how, ros1):
        self.label, self.where, self.needed, self.ros1 = label, where, coords.joint_names, ros1
        self.use_stamps, self.velocity, self.effort = how
        self.read = 0  # messages read, of every publisher: the index of the next one
        self.samples = 0  # messages of the robot's joints, the Chunks' samples
        self.origin = self.last = None  # the first and the latest stamp (ns)

    def chunks(self, open_reader, topic, size, notices):
        from .bags import why_unreadable

        reader = open_reader()
        try:
            for raws, times in raw_batches(reader, [c for c in reader.connections if c.topic == topic], size):
                chunk = self._batch(raws, times)
                if chunk is not None:
                    yield chunk
        except Unreadable as exc:
            k, cause = exc.args
            raise TrajectoryError(self.label, self.where, f"cannot read message {k}: {why_unreadable(cause)}") \
                from None
        finally:
            reader.close()
        if self.origin is None:
            raise TrajectoryError(self.label, self.where, "no message names a joint of the robot")
        notices.append(publishers.summary(self.where, self.samples, self.origin, self.velocity)
                       + "; read as it streams (too many to hold)")

    def _batch(self, raws, times):
        try:
            decoded = jointstate.decode(raws, times, self.ros1, offset=self.read)
        except jointstate.NotJointState as exc:
            k, why = exc.args
            raise TrajectoryError(self.label, self.where, f"message {self.read + k} is not a JointState: {why}") \
                from None
        self.read += len(raws)
        carrying = [d for d in decoded if set(self.needed) & set(d.names)]  # (skipping other publishers')
        for d in carrying:
            missing = [n for n in self.needed if n not in d.names]
            if missing:
                self._refuse(d.index[0], f"has no {shown(missing[0])} ({LARGE}, every message names every joint: "
                                         "split the bag)")
        if not carrying:
            return None
        index = np.concatenate([d.index for d in carrying])
        order = np.argsort(index, kind="stable")
        index = index[order]
        stamp = np.concatenate([d.stamp if self.use_stamps else d.log_time for d in carrying])[order]
        bad = np.flatnonzero(np.diff(stamp, prepend=stamp[0] - 1 if self.last is None else self.last) <= 0)
        if bad.size:
            self._refuse(index[bad[0]], f"stamp not after the previous one ({LARGE}, stamps must increase: split "
                                        "the bag)")
        self.origin = stamp[0] if self.origin is None else self.origin
        self.last = stamp[-1]
        data = {}
        for key, field, wanted in (("q", "position", True), ("qd", "velocity", self.velocity),
                                   ("effort", "effort", self.effort)):
            if not wanted:
                continue
            lacking = [d for d in carrying if getattr(d, field) is None]
            if lacking:
                self._refuse(lacking[0].index[0], f"has no {field}, as the first messages had ({LARGE}: split the bag)")
            x = np.concatenate([jointstate.in_order(getattr(d, field), d.names, self.needed) for d in carrying])[order]
            if not np.isfinite(x).all():
                k, j = (int(a[0]) for a in np.nonzero(~np.isfinite(x)))
                raise publishers.not_finite(self.label, self.where, int(index[k]), field, self.needed[j], x[k, j])
            data[key] = np.asfortranarray(x)
        chunk = Chunk(self.samples, clock.from_ns(stamp - self.origin), data)
        self.samples += len(stamp)
        return chunk

    def _refuse(self, message, why):
        raise TrajectoryError(self.label, f"{self.where}, message {int(message)}", why)
