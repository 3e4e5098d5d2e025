"""JointState messages of several publishers onto one time base.

A publisher is a connection of the topic (a ROS 1 caller id, a bag file) and a header.frame_id:
its messages are one stream whatever other joints they also name. Publishers carrying different
subsets of the joints (e.g. an arm at 500 Hz and a gripper at 50 Hz) go onto one time base: the
stamps of the publisher of the most of the needed joints; every other joint's position (and
velocity, effort) is interpolated linearly onto those stamps. Stamps before a joint's first or
after its last sample are dropped, with a notice (never extrapolated). Two publishers of the
same joints are an error naming both (--publisher chooses); a publisher whose joints all come
from another (of more of them, or as many and more messages, or as many and an earlier first) is
not used, with a notice. Time is header.stamp, or the log time where every stamp of a publisher
is zero; stamps out of order are sorted, repeated ones dropped, and zero ones among set ones
dropped, with notices.
"""

import numpy as np

from ...errors import TrajectoryError, shown
from . import clock, jointstate


def streams(decoded, needed, notices):
    """The decoded batches joined per publisher: its connection, its frame_id and the robot's
    joints its messages name (a joint the robot does not have changes no publisher), the joints
    in the robot's order, the messages in the order read; the publishers in the order of their
    first message (whatever the batches: ties go the same way however the bag was read). Batches
    naming none of the robot's joints are counted in a notice, not read."""
    groups, others = {}, []
    for d in sorted(decoded, key=lambda d: int(d.index[0])):
        carried = frozenset(needed) & frozenset(d.names)
        if carried:
            groups.setdefault((d.source, d.frame, carried), []).append(d)
        else:
            others.append(d)
    if others:
        notices.append(f"{count(sum(len(d.index) for d in others), 'message')} naming none of the robot's joints "
                       f"({listed(others[0].names, 3)}) not read")
    out = []
    for (source, frame, carried), batches in groups.items():
        names = tuple(n for n in needed if n in carried)
        index = np.concatenate([b.index for b in batches])
        order = np.argsort(index, kind="stable")  # (one publisher's messages of several name sets interleave)

        def joined(key):
            parts = [getattr(b, key) for b in batches]
            return None if any(p is None for p in parts) else np.concatenate(
                [jointstate.in_order(p, b.names, names) for p, b in zip(parts, batches)])[order]

        stream = jointstate.Decoded(names, source, frame, index[order],
                                    np.concatenate([b.log_time for b in batches])[order],
                                    np.concatenate([b.stamp for b in batches])[order], joined("position"),
                                    joined("velocity"), joined("effort"),
                                    with_velocity=sum(b.with_velocity for b in batches))
        without = len(index) - sum(b.with_velocity for b in batches)
        if without and without < len(index):
            notices.append(f"{count(without, 'message')} of {len(index)} of the publisher of {listed(names, 3)} "
                           "carry no velocity for every joint: its qd is derived from the positions")
        out.append(stream)
    return out, others


def chosen(groups, label, where, callers, publisher, notices):
    """The publishers to read: those --publisher names (by ROS 1 caller id or frame_id), or all."""
    if publisher is None:
        return groups
    mine = [g for g in groups if publisher in (callers[g.source], g.frame)]
    if not mine:
        raise TrajectoryError(label, where, f"--publisher {shown(publisher)} publishes none of the robot's joints "
                                            f"here; the topic has {', '.join(describe(g, callers) for g in groups)}")
    left = [g for g in groups if g not in mine]
    if left:
        notices.append(f"{count(sum(len(g.index) for g in left), 'message')} of other publishers not read "
                       f"(--publisher {publisher})")
    return mine


def describe(g, callers):
    """A publisher as a message names it: 'callerid /arm_driver', "frame_id 'sim'", or (neither
    known) 'connection 2' where the topic has several, else 'the publisher of a, b, c'."""
    parts = ([f"callerid {callers[g.source]}"] if callers[g.source] else []) + (
        [f"frame_id {shown(g.frame)}"] if g.frame else [])
    if not parts:
        parts = [f"connection {g.source + 1}" if len(callers) > 1 else f"the publisher of {listed(g.names, 3)}"]
    return ", ".join(parts)


def conflicts(groups, label, where, callers):
    """Two publishers of the same joints are an error that names both: which of them is the robot
    is not for rnea to guess (their messages would otherwise be one zig-zag stream, or one of
    them dropped)."""
    for k, a in enumerate(groups):
        for b in groups[k + 1:]:
            if a.names == b.names:
                one, other = describe(a, callers), describe(b, callers)
                apart = {callers[a.source], a.frame} != {callers[b.source], b.frame}
                how = ("choose one with --publisher (a caller id or a frame_id)" if apart else
                       "no caller id or frame_id tells them apart: split the bag")
                raise TrajectoryError(label, where, f"two publishers of the joints {listed(a.names, 3)}: {one} "
                                                    f"({len(a.index)} messages) and {other} ({len(b.index)}): {how}")


def merge(decoded, label, where, coords, want_effort, callers=(None,), publisher=None):
    """({'time', 'q', ['qd'], ['effort']} on one time base, notices) of a topic's [Decoded]
    (callers: the ROS 1 caller id of each of its connections; publisher: --publisher)."""
    needed = coords.joint_names
    notices = []
    groups, others = streams(decoded, needed, notices)
    if not groups:
        raise TrajectoryError(label, where, f"no message names a joint of the robot (it publishes "
                                            f"{listed(others[0].names, 8)})")
    groups = chosen(groups, label, where, callers, publisher, notices)
    conflicts(groups, label, where, callers)
    carries = [len(g.names) for g in groups]
    for g in groups:
        _sorted_times(g, notices)
    origin = min(int(g.stamp[0]) for g in groups)  # time 0: the first stamp (seconds of int64 ns stay exact)
    for g in groups:
        g.time = clock.from_ns(g.stamp - origin)
    best = max(range(len(groups)), key=lambda k: (carries[k], len(groups[k].index)))
    base = groups[best]
    source = {}  # joint -> the group it is read from: the base, else the group with most messages
    for name in needed:
        holders = [g for g in groups if name in g.names]
        if not holders:
            raise TrajectoryError(label, where, f"joint {shown(name)} is in no message")
        source[name] = base if base in holders else max(holders, key=lambda g: len(g.index))
    t = base.time
    keep = np.ones(len(t), bool)
    for g in {id(g): g for g in source.values()}.values():
        if g is not base:
            keep &= (t >= g.time[0]) & (t <= g.time[-1])
    if not keep.any():
        raise TrajectoryError(label, where, "the publishers' messages do not overlap in time")
    if not keep.all():
        notices.append(f"{int((~keep).sum())} stamps of {len(t)} dropped where another publisher's joints have "
                       "no sample before or after them (no extrapolation)")
    keep = slice(None) if keep.all() else keep  # (a view, not a copy, of every column)
    t = t[keep]
    arrays = {"time": t}
    for key, group_key in (("q", "position"), ("qd", "velocity"), ("effort", "effort")):
        if key == "effort" and not want_effort:
            continue
        columns = []
        for name in needed:
            g = source[name]
            values = getattr(g, group_key)
            if values is None:
                columns = None
                break
            x = values[:, g.names.index(name)]
            used = keep if g is base else slice(None)
            if key == "qd" and not np.isfinite(x[used]).all():  # a driver's NaN for "unknown": derived, as if absent
                notices.append(f"the velocity of {shown(name)} is not finite in {int((~np.isfinite(x[used])).sum())} "
                               "messages: qd and qdd are derived from the positions")
                columns = None
                break
            if not np.isfinite(x[used]).all():
                k = int(np.flatnonzero(~np.isfinite(x[used]))[0])
                raise not_finite(label, where, int(g.index[used][k]), group_key, name, x[used][k])
            columns.append(x[keep] if g is base else np.interp(t, g.time, x))
        if columns is not None:
            arrays[key] = np.column_stack(columns) if columns else np.empty((len(t), 0))
            if not np.isfinite(arrays[key]).all():  # finite samples whose interpolation overflows
                k, j = (int(a[0]) for a in np.nonzero(~np.isfinite(arrays[key])))
                raise TrajectoryError(label, f"{where}, stamp {k}", f"the {group_key} of {shown(needed[j])} "
                                                                    "interpolated between two messages overflows")
    used = {id(g) for g in source.values()}
    if len(used) > 1:
        notices.append(count(sum(source[n] is not base for n in needed), "joint") + " interpolated onto the stamps of "
                       f"the publisher of {len(base.names)} joints ({len(t)} messages)")
    for g in groups:
        if id(g) not in used:
            notices.append(f"{count(len(g.index), 'message')} of {describe(g, callers)} not used: its joints "
                           f"({listed(g.names, 3)}) are read from {describe(base, callers)}, which has more of them")
    notices.append(summary(where, len(t), origin, "qd" in arrays))
    return arrays, notices


def summary(where, count, origin, velocities):
    """The notice of a topic read: its messages, the stamp that is time 0 (ns), where qd comes from."""
    return (f"{where}: {count} JointState messages, time 0 at stamp {exact_seconds(origin)} s"
            + ("; velocities from the messages" if velocities else ""))


def not_finite(label, where, message, field, name, value):
    return TrajectoryError(label, f"{where}, message {message}", f"the {field} of {shown(name)} is not finite: "
                                                                 f"{float(value)!r}")


def count(k, noun):
    return f"{k} {noun}{'s' if k != 1 else ''}"


def exact_seconds(ns):
    """Integer nanoseconds as exact decimal seconds: '1700000000.000001000'."""
    return f"{'-' if ns < 0 else ''}{abs(ns) // 10**9}.{abs(ns) % 10**9:09d}"


def listed(names, most):
    """'a, b, c' or 'a, b, c and 4 more': joint names from a bag, printable."""
    text = ", ".join(shown(n)[1:-1] for n in names[:most])
    return text + (f" and {len(names) - most} more" if len(names) > most else "")


def _sorted_times(g, notices):
    """The group's messages sorted by stamp (ns; the log time where every stamp is zero), repeated
    stamps dropped, and zero stamps among set ones (time 0 would be 1970), with notices."""
    if not g.stamp.any():
        notices.append(f"header stamps are zero for the publisher of {listed(g.names, 3)}: its log times are "
                       "used")
        g.stamp = g.log_time
    elif not g.stamp.all():
        unset = g.stamp == 0
        notices.append(f"{count(int(unset.sum()), 'message')} of the publisher of {listed(g.names, 3)} with a zero "
                       "header stamp among set ones dropped (an unset stamp: time 0 would be 1970)")
        _take(g, np.flatnonzero(~unset))
    steps = np.diff(g.stamp)
    if (steps > 0).all():  # in order, none repeated: as a bag usually is (no copy)
        return
    order = np.argsort(g.stamp, kind="stable")
    if (steps < 0).any():
        notices.append(count(int((steps < 0).sum()), "stamp") + " out of order: sorted")
    stamp = g.stamp[order]
    unique = np.concatenate([[True], np.diff(stamp) > 0])
    if not unique.all():
        notices.append(count(int((~unique).sum()), "message") + " with a repeated stamp dropped")
    _take(g, order[unique])


def _take(g, rows):
    """Keep the group's messages at `rows`, in that order."""
    for key in ("position", "velocity", "effort", "index", "log_time", "stamp"):
        value = getattr(g, key)
        if value is not None:
            setattr(g, key, value[rows])


def why_unreadable(exc):
    text = str(exc).strip().split("\n")[0] or type(exc).__name__
    return text[:300]


def places(connections):
    """{connection id: its place among the topic's connections}: the same in every reader of the bag."""
    return {c.id: k for k, c in enumerate(connections)}


def callers(connections):
    """The ROS 1 caller id of each of the topic's connections (the node that published), or None."""
    return [getattr(c.ext, "callerid", None) or None for c in connections]
