"""A JointState topic too large to hold in memory, read as it streams, batch after batch.

Holding a topic's joint values (bags.py) lets the messages be sorted by stamp and several
publishers be merged onto one time base; a topic of more than bags.MAX_VALUES values is read
here instead, in one pass and in bounded memory, which asks more of it: its messages that name
the robot's joints carry all of them, in stamp order (the log time's where a publisher's stamps
are zero), with a finite velocity for every joint in every message or in none (then qd is
derived; the first batch decides), and effort likewise, from one publisher (one connection and
frame_id, or the one --publisher names: a second is refused, as held whole). Messages that name
none of the robot's joints, those of publishers --publisher did not choose, and zero stamps
among set ones are skipped, and counted in notices, as held whole. Anything else is an error
naming the message, which says to split the bag.
"""

import numpy as np

from ...errors import TrajectoryError, shown
from . import clock, jointstate, publishers
from .publishers import places, why_unreadable
from .base import Chunk

LARGE = "in a topic this large, read as it streams"


class Unreadable(Exception):
    """(index of the message rosbags could not read, its exception)."""


def raw_batches(reader, connections, size):
    """([raw message], [log time], [its connection's place]) of the topic's messages, `size` at a
    time; Unreadable for one that rosbags cannot read."""

    raws, times, sources, read = [], [], [], 0
    place = places(connections)
    try:
        for connection, log_time, raw in reader.messages(connections=connections):
            raws.append(raw)
            times.append(log_time)
            sources.append(place[connection.id])
            read += 1
            if len(raws) == size:
                yield raws, times, sources
                raws, times, sources = [], [], []
    except Exception as exc:  # noqa: BLE001 (rosbags raises many kinds, each a plain message)
        raise Unreadable(read, exc) from None
    if raws:
        yield raws, times, sources


def plan(first, coords, want_effort, callers, publisher):
    """(use the stamps, read velocity, read effort) from the [Decoded] of the first batch."""
    carrying = [d for d in first if set(coords.joint_names) & set(d.names)
                and (publisher is None or publisher in (callers[d.source], d.frame))]
    use_stamps = not carrying or any(d.stamp.any() for d in carrying)
    velocity = bool(carrying) and all(d.velocity is not None and np.isfinite(d.velocity).all() for d in carrying)
    effort = want_effort and bool(carrying) and all(d.effort is not None for d in carrying)
    return use_stamps, velocity, effort


class Stream:
    """The topic's Chunks, a batch each, read by `open_reader()`'s reader (its own: from the first
    message again, the first batch that `plan` saw included)."""

    def __init__(self, label, where, coords, how, ros1, callers, publisher):
        self.label, self.where, self.needed, self.ros1 = label, where, coords.joint_names, ros1
        self.use_stamps, self.velocity, self.effort = how
        self.callers, self.publisher = callers, publisher
        self.read = 0  # messages read, of every publisher: the index of the next one
        self.samples = 0  # messages of the robot's joints, the Chunks' samples
        self.origin = self.last = None  # the first and the latest stamp (ns)
        self.publishing = None  # the Decoded of the publisher read, first seen
        self.others, self.unchosen, self.unset = 0, 0, 0  # messages not read: of no joint, not chosen, stamp 0
        self.other_names = None  # the names of the first message of no joint of the robot
        self.seen = []  # the publishers --publisher did not choose
        self.without = 0  # messages read without a velocity for every joint

    def chunks(self, open_reader, topic, size, notices):

        reader = open_reader()
        try:
            for raws, times, sources in raw_batches(reader, [c for c in reader.connections if c.topic == topic],
                                                    size):
                chunk = self._batch(raws, times, sources)
                if chunk is not None:
                    yield chunk
        except Unreadable as exc:
            k, cause = exc.args
            raise TrajectoryError(self.label, self.where, f"cannot read message {k}: {why_unreadable(cause)}") \
                from None
        finally:
            reader.close()
        if self.origin is None and self.unchosen:
            raise TrajectoryError(self.label, self.where, f"--publisher {shown(self.publisher)} publishes none of the "
                                                          f"robot's joints here; the topic has {', '.join(self.seen)}")
        if self.origin is None:
            raise TrajectoryError(self.label, self.where, "no message names a joint of the robot")
        notices.extend(self._skipped())
        notices.append(publishers.summary(self.where, self.samples, self.origin, self.velocity)
                       + "; read as it streams (too many to hold)")

    def _skipped(self):
        """The notices of the messages not read, as the topic held whole gives them."""
        if self.others:
            yield (f"{publishers.count(self.others, 'message')} naming none of the robot's joints "
                   f"({publishers.listed(self.other_names, 3)}) not read")
        if self.unchosen:
            yield f"{publishers.count(self.unchosen, 'message')} of other publishers not read (--publisher " \
                  f"{self.publisher})"
        if 0 < self.without < self.samples + self.unset:
            yield (f"{publishers.count(self.without, 'message')} of {self.samples + self.unset} of the publisher of "
                   f"{publishers.listed(self.needed, 3)} carry no velocity for every joint: its qd is derived from "
                   "the positions")
        if self.unset:
            yield (f"{publishers.count(self.unset, 'message')} of the publisher of "
                   f"{publishers.listed(self.needed, 3)} with a zero header stamp among set ones dropped (an unset "
                   "stamp: time 0 would be 1970)")

    def _publishing(self, decoded):
        """The Decoded of the publisher to read; the others counted (or a second publisher of the
        robot's joints refused, as held whole)."""
        decoded = sorted(decoded, key=lambda d: int(d.index[0]))
        carrying = [d for d in decoded if set(self.needed) & set(d.names)]
        others = [d for d in decoded if not set(self.needed) & set(d.names)]
        self.other_names = self.other_names or (others[0].names if others else None)
        self.others += sum(len(d.index) for d in others)
        if self.publisher is not None:
            chosen = [self.publisher in (self.callers[d.source], d.frame) for d in carrying]
            for d, mine in zip(carrying, chosen):
                if not mine:
                    self.unchosen += len(d.index)
                    self.seen = list(dict.fromkeys(self.seen + [publishers.describe(d, self.callers)]))
            carrying = [d for d, mine in zip(carrying, chosen) if mine]
        for d in carrying:
            if self.publishing is None:
                self.publishing = d
            first = self.publishing
            if (d.source, d.frame) != (first.source, first.frame):
                one, other = (publishers.describe(x, self.callers) for x in (first, d))
                apart = {self.callers[first.source], first.frame} != {self.callers[d.source], d.frame}
                how = ("choose one with --publisher" if apart else
                       "no caller id or frame_id tells them apart: split the bag")
                self._refuse(d.index[0], f"a second publisher of the joints {publishers.listed(self.needed, 3)}: "
                                         f"{other}, besides {one}: {how}")
        return carrying

    def _batch(self, raws, times, sources):
        try:
            decoded = jointstate.decode(raws, times, self.ros1, offset=self.read, sources=sources)
        except jointstate.NotJointState as exc:
            k, why = exc.args
            raise TrajectoryError(self.label, self.where, f"message {self.read + k} is not a JointState: {why}") \
                from None
        self.read += len(raws)
        carrying = self._publishing(decoded)
        for d in carrying:
            missing = [n for n in self.needed if n not in d.names]
            if missing:
                self._refuse(d.index[0], f"has no {shown(missing[0])} ({LARGE}, every message names every joint: "
                                         "split the bag)")
        if not carrying:
            return None
        self.without += sum(len(d.index) - d.with_velocity for d in carrying)
        index = np.concatenate([d.index for d in carrying])
        order = np.argsort(index, kind="stable")
        index = index[order]
        stamp = np.concatenate([d.stamp if self.use_stamps else d.log_time for d in carrying])[order]
        if self.use_stamps and not stamp.all():  # unset stamps among set ones: dropped, as held whole
            set_ = np.flatnonzero(stamp != 0)
            self.unset += len(stamp) - len(set_)
            order, index, stamp = order[set_], index[set_], stamp[set_]
            if not len(stamp):
                return None
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
