"""A JointState topic too large to hold in memory, read as it streams, batch after batch.

Holding a topic's joint values (bags.py) lets the messages be sorted by stamp and several
publishers be merged onto one time base; a topic of more than bags.MAX_VALUES values is read
here instead, in one pass and in bounded memory, which asks more of it: its messages that name
the robot's joints carry all of them, in stamp order (the log time's where a publisher's stamps
are zero), with a finite velocity for every joint in every message or in none (then qd is
derived; the first batch decides), and effort likewise. Messages that name none of the robot's joints (another publisher's) are skipped.
Anything else is an error naming the message, which says to split the bag.
"""

import numpy as np

from ..errors import TrajectoryError, shown
from . import jointstate
from .base import Chunk
from .publishers import exact_seconds

LARGE = "in a topic this large, read as it streams"


def first_batch(reader, connections, ros1, size):
    """[Decoded] of the topic's first `size` messages: what decides the streamed trajectory's groups."""
    raws, times = [], []
    for _, log_time, raw in reader.messages(connections=connections):
        raws.append(raw)
        times.append(log_time)
        if len(raws) == size:
            break
    return jointstate.decode(raws, times, ros1)


def plan(first, coords, want_effort):
    """(use the stamps, read velocity, read effort) from the first batch's messages of the joints."""
    needed = set(coords.joint_names)
    carrying = [d for d in first if needed & set(d.names)]
    use_stamps = not carrying or any(d.stamp.any() for d in carrying)
    velocity = bool(carrying) and all(d.velocity is not None and np.isfinite(d.velocity).all() for d in carrying)
    effort = want_effort and bool(carrying) and all(d.effort is not None for d in carrying)
    return use_stamps, velocity, effort


def chunks(open_reader, topic, ros1, label, where, coords, how, size, notices):
    """The topic's Chunks, a batch of `size` messages each, from a reader of its own."""
    use_stamps, velocity, effort = how
    needed = coords.joint_names
    reader = open_reader()
    try:
        connections = [c for c in reader.connections if c.topic == topic]
        raws, times, state = [], [], {"count": 0, "start": 0, "origin": None, "last": None}
        for _, log_time, raw in reader.messages(connections=connections):
            raws.append(raw)
            times.append(log_time)
            if len(raws) == size:
                yield from _batch(raws, times, ros1, label, where, needed, use_stamps, velocity, effort, state)
                raws, times = [], []
        yield from _batch(raws, times, ros1, label, where, needed, use_stamps, velocity, effort, state)
    finally:
        reader.close()
    if state["origin"] is None:
        raise TrajectoryError(label, where, "no message names a joint of the robot")
    notices.append(f"{where}: {state['start']} JointState messages, time 0 at stamp {exact_seconds(state['origin'])} s"
                   + ("; velocities from the messages" if velocity else "") + "; read as it streams (too many to "
                                                                              "hold)")


def _batch(raws, times, ros1, label, where, needed, use_stamps, velocity, effort, state):
    if not raws:
        return
    offset = state["count"]
    try:
        decoded = jointstate.decode(raws, times, ros1, offset=offset)
    except jointstate.NotJointState as exc:
        k, why = exc.args
        raise TrajectoryError(label, where, f"message {offset + k} is not a JointState: {why}") from None
    state["count"] += len(raws)
    carrying = []
    for d in decoded:
        if not set(needed) & set(d.names):
            continue  # another publisher's messages
        missing = [n for n in needed if n not in d.names]
        if missing:
            raise TrajectoryError(label, f"{where}, message {int(d.index[0])}",
                                  f"has no {shown(missing[0])} ({LARGE}, every message names every joint: split "
                                  "the bag)")
        carrying.append(d)
    if not carrying:
        return
    index = np.concatenate([d.index for d in carrying])
    order = np.argsort(index, kind="stable")
    stamp = np.concatenate([d.stamp if use_stamps else d.log_time for d in carrying])[order]
    previous = state["last"] if state["last"] is not None else stamp[0] - 1
    bad = np.flatnonzero(np.diff(stamp, prepend=previous) <= 0)
    if bad.size:
        raise TrajectoryError(label, f"{where}, message {int(index[order][bad[0]])}",
                              f"stamp not after the previous one ({LARGE}, stamps must increase: split the bag)")
    state["origin"] = stamp[0] if state["origin"] is None else state["origin"]
    state["last"] = stamp[-1]
    data = {}
    for key, field, wanted in (("q", "position", True), ("qd", "velocity", velocity), ("effort", "effort", effort)):
        if not wanted:
            continue
        parts = [getattr(d, field) for d in carrying]
        if any(p is None for p in parts):
            k = int(next(d.index[0] for d, p in zip(carrying, parts) if p is None))
            raise TrajectoryError(label, f"{where}, message {k}", f"has no {field}, as the first messages had "
                                                                  f"({LARGE}: split the bag)")
        x = np.concatenate([jointstate.in_order(p, d.names, needed) for p, d in zip(parts, carrying)])[order]
        if not np.isfinite(x).all():
            k, j = (int(a[0]) for a in np.nonzero(~np.isfinite(x)))
            raise TrajectoryError(label, f"{where}, message {int(index[order][k])}",
                                  f"the {field} of {shown(needed[j])} is not finite: {float(x[k, j])!r}")
        data[key] = np.asfortranarray(x)
    start = state["start"]
    state["start"] += len(stamp)
    yield Chunk(start, (stamp - state["origin"]) * 1e-9, data)
