"""ROS bags (ROS 1 .bag, ROS 2 folders, .db3 and .mcap files), read with rosbags.

sensor_msgs/JointState: joints matched by name, decoded in bulk (jointstate.py), the messages of
several publishers put onto one time base (publishers.py). Velocity gives qd where every joint
has one, finite (else qd and qdd are derived); effort is kept as the measured effort. A large
topic is read in parts of its log time by worker processes (bagparts.py says where to cut); a
topic too large to hold is read as it streams instead (bagstream.py).

trajectory_msgs/JointTrajectory (and moveit_msgs/DisplayTrajectory, whose definition ROS 2 bags
and MCAP carry): the points of one message (the last by default), with their positions,
velocities, accelerations and time_from_start.
"""

import functools
import os
from pathlib import Path

import numpy as np

from ...errors import TrajectoryError, shown
from ...workers import parallel
from . import bagparts, clock, jointstate, publishers
from .publishers import callers, places, why_unreadable
from .base import Chunk, Trajectory

JOINT_STATE = "sensor_msgs/msg/JointState"
TRAJECTORIES = ("trajectory_msgs/msg/JointTrajectory", "moveit_msgs/msg/DisplayTrajectory")
READ_AT_ONCE = 1 << 16  # raw messages decoded together
MAX_VALUES = 1 << 28  # numbers held from one topic (2 GiB); a larger topic is read as it streams (bagstream.py)
TOO_MANY = f"more than {MAX_VALUES:,} joint values on one topic: split the bag"
NO_BASE = "a floating base needs its pose, which a bag's joint topic does not carry"


def open_bag(path, label, coords, layout, topic=None, message=None, publisher=None, workers=1):
    reader = _open_reader(path, label)
    try:
        connections = _topic(reader, label, topic)
        kind = connections[0].msgtype
        where = f"topic {connections[0].topic}"
        if kind == JOINT_STATE:
            if message is not None:
                raise TrajectoryError(label, where, "--message is for a JointTrajectory topic")
            streamed = _streamed(reader, path, connections, label, where, coords, "effort" in layout.groups,
                                 publisher)
            if streamed is not None:
                if "base_pose" in layout.groups:
                    raise TrajectoryError(label, where, NO_BASE)
                groups, chunks, notices = streamed
                derived = tuple(g for g in ("qd", "qdd") if g not in groups)
                return Trajectory(label, True, groups, derived, notices, chunks=chunks, unit="message")
            arrays, notices, unread = _joint_states(reader, path, connections, label, where, coords,
                                                    "effort" in layout.groups, workers, publisher)
        else:
            if publisher is not None:
                raise TrajectoryError(label, where, "--publisher is for a JointState topic")
            arrays, notices = _trajectory(reader, connections, label, where, coords, message)
            unread = ()
    finally:
        reader.close()
    chosen = ("q",) + tuple(g for g in ("qd", "qdd", "effort") if g in arrays)
    if "qd" not in arrays:
        arrays.pop("qdd", None)
    derived = tuple(g for g in ("qd", "qdd") if g not in arrays)
    if "base_pose" in layout.groups:
        raise TrajectoryError(label, where, NO_BASE)
    traj = Trajectory(label, True, chosen, derived, notices, unit="message", ignored=unread)
    time = arrays.pop("time")
    traj.chunks = _chunks(time, arrays)
    return traj


def _chunks(time, arrays, size=1 << 14):
    for start in range(0, len(time), size):
        rows = slice(start, start + size)
        yield Chunk(start, time[rows], {g: np.asfortranarray(x[rows]) for g, x in arrays.items()})


def _open_reader(path, label):
    try:
        from rosbags.highlevel import AnyReader
        from rosbags.typesys import Stores
    except ImportError:
        raise TrajectoryError(label, None, "reading ROS bags needs the rosbags package: pip install rosbags") from None
    target = Path(path)
    if target.is_file() and target.suffix in (".db3", ".mcap") and (target.parent / "metadata.yaml").is_file():
        target = target.parent  # the bag's folder says how its messages are compressed
    ros1 = target.suffix == ".bag"
    if target.is_dir() and not (target / "metadata.yaml").is_file():
        raise TrajectoryError(label, None, "not a ROS 2 bag folder: it has no metadata.yaml (give the .db3 or "
                                           ".mcap file itself)")
    try:
        reader = AnyReader([target], default_typestore=_typestore(Stores.ROS1_NOETIC if ros1 else Stores.ROS2_HUMBLE))
        reader.open()
    except Exception as exc:  # rosbags raises many kinds, each a plain message
        raise TrajectoryError(label, None, f"not a readable ROS bag: {why_unreadable(exc)}") from None
    return reader


@functools.cache
def _typestore(store):
    """rosbags' types of a ROS distribution (built once: a worker forked later has them)."""
    from rosbags.typesys import get_typestore

    return get_typestore(store)


def _topic(reader, label, topic):
    """The connections of the topic to read: the one asked for, or the only joint topic."""
    wanted = (JOINT_STATE,) + TRAJECTORIES
    listing = ", ".join(f"{c.topic} ({c.msgtype})" for c in reader.connections[:12]) or "none"
    if topic is not None:
        found = [c for c in reader.connections if c.topic == topic]
        if not found:
            raise TrajectoryError(label, None, f"no topic {shown(topic)}; the bag has {listing}")
        if found[0].msgtype not in wanted:
            raise TrajectoryError(label, f"topic {topic}", f"holds {found[0].msgtype}, not JointState or "
                                                          "JointTrajectory")
        return found
    topics = sorted({c.topic for c in reader.connections if c.msgtype in wanted})
    if len(topics) > 1:
        raise TrajectoryError(label, None, f"several joint topics ({', '.join(topics)}): pick one with --topic")
    if not topics:
        raise TrajectoryError(label, None, f"no JointState or JointTrajectory topic; the bag has {listing}")
    return [c for c in reader.connections if c.topic == topics[0]]


def _streamed(reader, path, connections, label, where, coords, want_effort, publisher):
    """(groups, chunks, notices) of a topic of more than MAX_VALUES joint values, read as it
    streams (bagstream.py); None for a smaller one, or one whose first messages do not decode
    (the reading of a whole topic says why)."""
    if sum(c.msgcount for c in connections) * 3 * max(coords.n, 1) <= MAX_VALUES:
        return None
    from . import bagstream

    ros1 = not reader.is2
    heard = callers(connections)
    try:
        raws, times, sources = next(bagstream.raw_batches(reader, connections, READ_AT_ONCE))
        how = bagstream.plan(jointstate.decode(raws, times, ros1, sources=sources), coords, want_effort, heard,
                             publisher)
    except Exception:  # noqa: BLE001 (rosbags' errors, or a message that is not a JointState)
        return None
    notices = []
    stream = bagstream.Stream(label, where, coords, how, ros1, heard, publisher)
    chunks = stream.chunks(lambda: _open_reader(path, label), connections[0].topic, READ_AT_ONCE, notices)
    return ("q",) + (("qd",) if how[1] else ()) + (("effort",) if how[2] else ()), chunks, notices


def _joint_states(reader, path, connections, label, where, coords, want_effort, workers, publisher):
    """{'time', 'q', ['qd'], ['effort']} arrays on one time base, notices, and the efforts of
    joints named but not read ('effort_<joint>': `Trajectory.ignored`). A large topic is
    read in parts of its log time (bagparts.py), one worker process each, and put back together
    in order: the same messages in the same order as one reader gives, so the same arrays."""
    ros1 = not reader.is2
    parts, outcomes = bagparts.parts(reader, connections, workers), None
    if len(parts) > 1:
        share = MAX_VALUES // len(parts)  # the parts together hold no more than one reader may

        def first():  # read here; a bad message in it is the first of all: the other parts are stopped
            outcome = _read(reader, connections, ros1, *parts[0], share)
            if outcome[2] is not None:
                raise _Stop(outcome)
            return outcome

        try:
            outcomes = parallel(_read_part, [(path, label, connections[0].topic, ros1, a, b, share)
                                             for a, b in parts[1:]], len(parts), here=first)
        except _Stop as stop:
            outcomes = stop.args
        if any(unusable == (None, TOO_MANY, "") for _, _, unusable in outcomes):
            outcomes = None  # a part over its share: one reader says whether the whole is too large
    if outcomes is None:
        outcomes = [_read(reader, connections, ros1, None, None, MAX_VALUES)]
    decoded, offset = [], 0
    for batches, count, unusable in outcomes:
        if unusable is not None:
            k, before, after = unusable
            raise TrajectoryError(label, where, before if k is None else f"{before}{offset + k}{after}")
        for d in batches:
            d.index += offset
        decoded += batches
        offset += count
    if not decoded:
        raise TrajectoryError(label, where, "no messages")
    read = set(coords.joint_names)
    unread = tuple(sorted({f"effort_{name}" for d in decoded if d.effort is not None for name in d.names
                           if name not in read}))
    return (*publishers.merge(decoded, label, where, coords, want_effort, callers(connections), publisher), unread)


class _Stop(Exception):
    """The first part's outcome, when it ends the reading of the others."""


def _read_part(path, label, topic, ros1, start, stop, most):
    """_read in a worker process, on a reader of its own."""
    try:
        reader = _open_reader(path, label)
    except TrajectoryError as exc:
        return [], 0, (None, exc.message, "")
    try:
        return _read(reader, [c for c in reader.connections if c.topic == topic], ros1, start, stop, most)
    finally:
        reader.close()


def _read(reader, connections, ros1, start, stop, most):
    """([Decoded], messages read, None) of the messages logged in [start, stop); or, at the first
    that cannot be used, ([], 0, (its index in this part, the message's text before and after
    the index)); or, past `most` joint values, ([], 0, (None, TOO_MANY, ''))."""
    decoded, raws, times, sources, count = [], [], [], [], 0
    place = places(connections)
    try:
        for connection, log_time, raw in reader.messages(connections=connections, start=start, stop=stop):
            raws.append(raw)
            times.append(log_time)
            sources.append(place[connection.id])
            if len(raws) == READ_AT_ONCE:
                decoded += jointstate.decode(raws, times, ros1, offset=count, sources=sources)
                count += len(raws)
                raws, times, sources = [], [], []
                if _values(decoded) > most:
                    return [], 0, (None, TOO_MANY, "")
        decoded += jointstate.decode(raws, times, ros1, offset=count, sources=sources)
    except jointstate.NotJointState as exc:
        k, why = exc.args
        return [], 0, (count + k, "message ", f" is not a JointState: {why}")
    except Exception as exc:  # rosbags raises many kinds, each a plain message
        return [], 0, (count + len(raws), "cannot read message ", f": {why_unreadable(exc)}")
    if _values(decoded) > most:
        return [], 0, (None, TOO_MANY, "")
    return decoded, count + len(raws), None


def _values(decoded):
    return sum(d.position.size * 3 for d in decoded)


def _trajectory(reader, connections, label, where, coords, message):
    """{'time', 'q', ['qd'], ['qdd']} of one JointTrajectory (or DisplayTrajectory) message."""
    count = sum(c.msgcount for c in connections)
    if count == 0:
        raise TrajectoryError(label, where, "no messages")
    k = count - 1 if message is None else message
    if k >= count:
        raise TrajectoryError(label, where, f"--message {k}: the topic has {count} messages (0 to {count - 1})")
    try:
        for i, (connection, _, raw) in enumerate(reader.messages(connections=connections)):
            if i == k:
                msg = reader.deserialize(raw, connection.msgtype)
                break
    except Exception as exc:
        raise TrajectoryError(label, where, f"cannot read message {k}: {why_unreadable(exc)}") from None
    if connections[0].msgtype == TRAJECTORIES[1]:  # DisplayTrajectory: its RobotTrajectories, one after another
        parts = [robot.joint_trajectory for robot in msg.trajectory]
    else:
        parts = [msg]
    arrays, notices = _points(parts, label, f"{where}, message {k}", coords)
    return arrays, notices + [f"{where}: message {k} of {count}, {len(arrays['time'])} points"]


FIELDS = (("q", "positions", "position"), ("qd", "velocities", "velocity"), ("qdd", "accelerations", "acceleration"))


def _points(parts, label, where, coords):
    """({'time', 'q', ['qd'], ['qdd']}, notices) of the points of JointTrajectory messages, one
    after another; a rate given in some points only is derived, with a notice."""
    needed = coords.joint_names
    ns, columns = [], {key: [] for key, _, _ in FIELDS}
    offset = 0
    for part in parts:
        names = list(part.joint_names)
        twice = next((n for k, n in enumerate(names) if n in names[:k]), None)
        if twice is not None:
            raise TrajectoryError(label, where, f"joint {shown(twice)} is named twice in joint_names")
        missing = [n for n in needed if n not in names]
        if missing:
            raise TrajectoryError(label, where, f"joint {shown(missing[0])} is not among the trajectory's "
                                                f"joint_names")
        index = [names.index(n) for n in needed]
        for point in part.points:
            ns.append(offset + point.time_from_start.sec * 10**9 + point.time_from_start.nanosec)
            for key, field, _ in FIELDS:
                values = np.asarray(getattr(point, field), dtype=float)
                if len(values) not in (0, len(names)):
                    raise TrajectoryError(label, f"{where}, point {len(ns) - 1}", f"{len(values)} {field} for "
                                                                                  f"{len(names)} joints")
                columns[key].append(values[index] if len(values) else None)
        offset = ns[-1] if ns else offset
    if not ns:
        raise TrajectoryError(label, where, "no points")
    bare = next((k for k, x in enumerate(columns["q"]) if x is None), None)
    if bare is not None:
        raise TrajectoryError(label, f"{where}, point {bare}", "no positions")
    ns = np.array(ns, dtype=np.int64)
    if not (np.diff(ns) > 0).all():
        k = int(np.argmin(np.diff(ns) > 0)) + 1
        raise TrajectoryError(label, f"{where}, point {k}", "time_from_start does not increase")
    arrays, notices = {"time": clock.from_ns(ns)}, []
    for key, field, one in FIELDS:
        given = sum(x is not None for x in columns[key])
        if given == len(ns):
            arrays[key] = np.array(columns[key]).reshape(len(ns), len(needed))
            bad = np.argwhere(~np.isfinite(arrays[key]))
            if bad.size:
                k, j = (int(x) for x in bad[0])
                raise TrajectoryError(label, f"{where}, point {k}", f"the {one} of {shown(needed[j])} is not finite: "
                                                                    f"{float(arrays[key][k, j])!r}")
        elif given and (key == "qd" or "qd" in arrays):
            notices.append(f"{where}: {field} in {given} of {len(ns)} points only: "
                           f"{'qd and qdd' if key == 'qd' else 'qdd'} derived from the "
                           f"{'positions' if key == 'qd' else 'velocities'}")
    return arrays, notices


def is_bag(path):
    return os.path.isdir(path) or str(path).lower().endswith((".bag", ".db3", ".mcap"))
