"""JointState messages of several publishers onto one time base.

Messages carrying different subsets of the joints (two publishers, e.g. an arm at 500 Hz and a
gripper at 50 Hz) go onto one time base: the stamps of the messages that carry the most of the
needed joints; every other joint's position (and velocity, effort) is interpolated linearly onto
those stamps. Stamps before a joint's first or after its last sample are dropped, with a notice
(never extrapolated). Time is header.stamp, or the log time where every stamp of a publisher is
zero; stamps out of order are sorted and repeated ones dropped, with a notice.
"""

import numpy as np

from ..errors import TrajectoryError, shown
from . import clock, jointstate


def by_names(decoded):
    """The decoded batches merged per set of names, the sets in the order of their first message
    (whatever the batches: ties between publishers go the same way however the bag was read)."""
    groups = {}
    for d in sorted(decoded, key=lambda d: int(d.index[0])):
        groups.setdefault(frozenset(d.names), []).append(d)
    out = []
    for batches in groups.values():
        names = batches[0].names

        def joined(key):
            parts = [getattr(b, key) for b in batches]
            return None if any(p is None for p in parts) else np.concatenate(
                [jointstate.in_order(p, b.names, names) for p, b in zip(parts, batches)])

        out.append(jointstate.Decoded(names, np.concatenate([b.index for b in batches]),
                                      np.concatenate([b.log_time for b in batches]),
                                      np.concatenate([b.stamp for b in batches]), joined("position"),
                                      joined("velocity"), joined("effort")))
    return out


def merge(groups, label, where, coords, want_effort):
    needed = coords.joint_names
    notices = []
    carries = [len(set(needed) & set(g.names)) for g in groups]  # (the robot's joint names are unique)
    if not any(carries):
        raise TrajectoryError(label, where, f"no message names a joint of the robot (it publishes "
                                            f"{_listed(groups[0].names, 8)})")
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
    others = len({id(g) for g in source.values()}) - 1
    if others:
        notices.append(_count(sum(source[n] is not base for n in needed), "joint") + " interpolated onto the stamps of "
                       f"the publisher of {len(base.names)} joints ({len(t)} messages)")
    notices.append(summary(where, len(t), origin, "qd" in arrays))
    return arrays, notices


def summary(where, count, origin, velocities):
    """The notice of a topic read: its messages, the stamp that is time 0 (ns), where qd comes from."""
    return (f"{where}: {count} JointState messages, time 0 at stamp {exact_seconds(origin)} s"
            + ("; velocities from the messages" if velocities else ""))


def not_finite(label, where, message, field, name, value):
    return TrajectoryError(label, f"{where}, message {message}", f"the {field} of {shown(name)} is not finite: "
                                                                 f"{float(value)!r}")


def _count(k, noun):
    return f"{k} {noun}{'s' if k != 1 else ''}"


def exact_seconds(ns):
    """Integer nanoseconds as exact decimal seconds: '1700000000.000001000'."""
    return f"{'-' if ns < 0 else ''}{abs(ns) // 10**9}.{abs(ns) % 10**9:09d}"


def _listed(names, most):
    """'a, b, c' or 'a, b, c and 4 more': joint names from a bag, printable."""
    text = ", ".join(shown(n)[1:-1] for n in names[:most])
    return text + (f" and {len(names) - most} more" if len(names) > most else "")


def _sorted_times(g, notices):
    """The group's messages sorted by stamp (ns; the log time where every stamp is zero), repeated
    stamps dropped."""
    if not g.stamp.any():
        notices.append(f"header stamps are zero for the publisher of {_listed(g.names, 3)}: its log times are "
                       "used")
        g.stamp = g.log_time
    steps = np.diff(g.stamp)
    if (steps > 0).all():  # in order, none repeated: as a bag usually is (no copy)
        return
    order = np.argsort(g.stamp, kind="stable")
    if (steps < 0).any():
        notices.append(_count(int((steps < 0).sum()), "stamp") + " out of order: sorted")
    stamp = g.stamp[order]
    unique = np.concatenate([[True], np.diff(stamp) > 0])
    if not unique.all():
        notices.append(_count(int((~unique).sum()), "message") + " with a repeated stamp dropped")
    order = order[unique]
    for key in ("position", "velocity", "effort", "index", "log_time", "stamp"):
        value = getattr(g, key)
        if value is not None:
            setattr(g, key, value[order])
