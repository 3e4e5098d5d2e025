"""Source: ROS bags (ROS 1, ROS 2 sqlite3, MCAP), written here with rosbags' writers: JointState from
one or two publishers, JointTrajectory and DisplayTrajectory; bad bags give one line, exit 2."""

import json
import os
import subprocess
import sys

import numpy as np
import polars as pl
import pytest

from bagfiles import FORMATS, JOINT_STATE, JOINT_TRAJECTORY, T0, BagWriter, bag_path, write_joint_states
from conftest import ROBOTS, columns as read_csv, run
from oracle import assert_matches, pin_model, pin_rnea
from rnea_cli import load_urdf


ARM = ROBOTS / "arm7.urdf"
MODEL = load_urdf(ARM)
JOINTS = MODEL.joint_names
FRAME = pl.read_csv(ROBOTS / "arm7_traj.csv")
TIME = FRAME["time"].to_numpy()
Q, QD, QDD = (FRAME.select([f"{p}_{j}" for j in JOINTS]).to_numpy() for p in ("q", "qd", "qdd"))


def torques(*args):
    result = run("torques", *args)
    assert result.exit_code == 0, result.stderr
    return read_csv(result.stdout), result.stderr


def tau_of(out):
    return np.column_stack([out[f"tau_{j}"] for j in JOINTS])


def csv_of(tmp_path, time, q, qd=None):
    cols = {"time": time, **{f"q_{j}": q[:, i] for i, j in enumerate(JOINTS)}}
    if qd is not None:
        cols |= {f"qd_{j}": qd[:, i] for i, j in enumerate(JOINTS)}
    path = tmp_path / "same.csv"
    pl.DataFrame(cols).write_csv(path)
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_joint_states_in_any_name_order_give_the_csv_torques(tmp_path, fmt):
    """Names listed in reverse (or alphabetically, as the UR driver does): matched by name; velocity
    from the messages, qdd derived; the same torques as the CSV of the same samples."""
    bag = write_joint_states(bag_path(tmp_path, fmt), fmt, JOINTS, TIME, Q, QD, effort=2 * QD, order=range(6, -1, -1))
    ours, report = torques(ARM, bag)
    expected, _ = torques(ARM, csv_of(tmp_path, TIME, Q, QD))
    np.testing.assert_allclose(ours["time"], expected["time"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(tau_of(ours), tau_of(expected), rtol=1e-9, atol=1e-9)
    assert "note: topic /joint_states: 401 JointState messages, time 0 at stamp 1700000000.000000000 s; velocities " \
        "from the messages" in report
    if fmt == "mcap":  # the .mcap file itself, and the .db3 of a sqlite3 bag, are bags too
        assert tau_of(torques(ARM, next(bag.glob("*.mcap")))[0]).tobytes() == tau_of(ours).tobytes()


@pytest.mark.parametrize("fmt", ["ros1", "mcap"])
def test_two_publishers_are_merged_onto_the_stamps_of_the_larger(tmp_path, fmt):
    """Joints 1-6 at 500 Hz, joint 7 at 50 Hz (a gripper): joint 7 is interpolated onto the
    arm's stamps; arm stamps outside the gripper's span are dropped, with a notice."""
    t_arm = np.arange(0, 2.0, 0.002)
    t_grip = np.arange(0.01, 1.99, 0.02)
    q_of = lambda t: np.column_stack([np.sin((i + 1) * t) for i in range(7)])  # noqa: E731
    path = bag_path(tmp_path, fmt)
    writer = BagWriter(path, fmt)
    events = [(T0 + int(round(t * 1e9)), JOINTS[:6], q_of(np.array([t]))[0, :6]) for t in t_arm]
    events += [(T0 + int(round(t * 1e9)) + 7, JOINTS[6:], q_of(np.array([t]))[0, 6:]) for t in t_grip]
    for stamp, names, q in sorted(events, key=lambda e: e[0]):
        writer.add("/joint_states", JOINT_STATE, stamp, writer.joint_state(stamp, names, q))
    writer.close()
    ours, report = torques(ARM, path)
    keep = (t_arm >= t_grip[0] + 7e-9) & (t_arm <= t_grip[-1] + 7e-9)
    t = t_arm[keep]
    q = q_of(t)
    q[:, 6] = np.interp(t, t_grip + 7e-9, q_of(t_grip)[:, 6])
    expected, _ = torques(ARM, csv_of(tmp_path, t - t_arm[0], q))
    np.testing.assert_allclose(ours["time"], t - t_arm[0], atol=1e-9)
    np.testing.assert_allclose(tau_of(ours), tau_of(expected), rtol=1e-7, atol=1e-7)
    assert f"{int((~keep).sum())} stamps of {len(t_arm)} dropped" in report
    assert "1 joint interpolated onto the stamps of the publisher of 6 joints" in report


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_joint_trajectory_with_accelerations_matches_pinocchio(tmp_path, fmt):
    path = bag_path(tmp_path, fmt)
    writer = BagWriter(path, fmt)
    for k, scale in enumerate((0.5, 1.0, 2.0)):  # three plans; the last is read by default
        writer.add("/arm_controller/joint_trajectory", JOINT_TRAJECTORY, T0 + k,
                   writer.joint_trajectory(JOINTS[::-1], TIME[:50], scale * Q[:50, ::-1], QD[:50, ::-1], QDD[:50, ::-1]))
    writer.close()
    ours, report = torques(ARM, path)
    reference = pin_rnea(pin_model(ARM), JOINTS, 2.0 * Q[:50], QD[:50], QDD[:50])
    assert_matches(tau_of(ours), reference)
    assert "message 2 of 3, 50 points" in report
    first, report = torques(ARM, path, "--message", "0")
    assert_matches(tau_of(first), pin_rnea(pin_model(ARM), JOINTS, 0.5 * Q[:50], QD[:50], QDD[:50]))
    result = run("torques", ARM, path, "--message", "3")
    assert result.exit_code == 2 and "--message 3: the topic has 3 messages (0 to 2)" in result.stderr


@pytest.mark.parametrize("fmt", ["sqlite3", "mcap"])
def test_a_moveit_display_trajectory_from_the_definition_in_the_bag(tmp_path, fmt):
    """The reader knows no moveit_msgs: the bag carries the definition. Two segments run one after the other."""
    path = bag_path(tmp_path, fmt)
    writer = BagWriter(path, fmt)
    first = writer.joint_trajectory(JOINTS, TIME[:20], Q[:20], QD[:20], QDD[:20])
    second = writer.joint_trajectory(JOINTS, TIME[21:40] - TIME[20], Q[21:40], QD[21:40], QDD[21:40])
    writer.add("/display_planned_path", "moveit_msgs/msg/DisplayTrajectory", T0, writer.display_trajectory([first, second]))
    writer.close()
    ours, report = torques(ARM, path)
    rows = list(range(20)) + list(range(21, 40))
    assert_matches(tau_of(ours), pin_rnea(pin_model(ARM), JOINTS, Q[rows], QD[rows], QDD[rows]))
    np.testing.assert_allclose(ours["time"], np.concatenate([TIME[:20], TIME[21:40] - TIME[20] + TIME[19]]), atol=1e-9)


def test_stamps_zero_out_of_order_or_repeated(tmp_path):
    path = bag_path(tmp_path, "mcap")
    writer = BagWriter(path, "mcap")
    order = list(range(100))
    order[10], order[11] = 11, 10  # two messages swapped
    for i, k in enumerate(order + [50]):  # logged in this order, and one stamp twice
        writer.add("/joint_states", JOINT_STATE, T0 + i, writer.joint_state(T0 + int(TIME[k] * 1e9), JOINTS, Q[k]))
    writer.close()
    out, report = torques(ARM, path)
    assert len(out["time"]) == 100 and "2 stamps out of order: sorted" in report
    assert "1 message with a repeated stamp dropped" in report
    zero = bag_path(tmp_path, "ros1", "zero")
    writer = BagWriter(zero, "ros1")
    for k in range(50):
        writer.add("/joint_states", JOINT_STATE, T0 + 1000 + int(TIME[k] * 1e9), writer.joint_state(0, JOINTS, Q[k]))
    writer.close()
    out, report = torques(ARM, zero)
    assert (f"header stamps are zero for the publisher of {', '.join(JOINTS[:3])} and 4 more: its log times are "
            "used") in report
    assert "time 0 at stamp 1700000000.000001000 s" in report  # (exact: a double of the seconds is not)
    np.testing.assert_allclose(out["time"], TIME[:50], atol=1e-9)


def one_topic_bag(tmp_path, fmt, topics):
    tmp_path.mkdir(exist_ok=True)
    path = bag_path(tmp_path, fmt, "many")
    writer = BagWriter(path, fmt)
    for topic, msgtype in topics:
        if msgtype == JOINT_STATE:
            msg = writer.joint_state(T0, JOINTS[:3], Q[0, :3])
        elif msgtype == JOINT_TRAJECTORY:
            msg = writer.joint_trajectory(JOINTS, TIME[:3], Q[:3])
        else:
            msg = writer.store.types["std_msgs/msg/String"](data="hello")
        writer.add(topic, msgtype, T0, msg)
    writer.close()
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_bad_bags_are_one_line_naming_file_and_topic(tmp_path, fmt):
    good = write_joint_states(bag_path(tmp_path, fmt), fmt, JOINTS, TIME, Q)
    cases = []
    target = good if fmt == "ros1" else next(p for p in good.iterdir() if p.suffix in (".db3", ".mcap"))
    data = target.read_bytes()
    cut = tmp_path / ("cut" + target.suffix)
    cut.write_bytes(data[: len(data) // 2])
    cases.append((cut, ["not a readable ROS bag"]))
    cases.append((good, None))  # read with a topic that is not there, below
    chatter = one_topic_bag(tmp_path, fmt, [("/chatter", "std_msgs/msg/String")])
    cases.append((chatter, ["no JointState or JointTrajectory topic; the bag has /chatter (std_msgs/msg/String)"]))
    two = one_topic_bag(tmp_path / "2", fmt, [("/a/joint_states", JOINT_STATE), ("/b/joint_states", JOINT_STATE)])
    cases.append((two, ["several joint topics (/a/joint_states, /b/joint_states): pick one with --topic"]))
    partial = one_topic_bag(tmp_path / "3", fmt, [("/joint_states", JOINT_STATE)])
    cases.append((partial, ["topic /joint_states: joint 'arm7_joint4' is in no message"]))
    (tmp_path / "4").mkdir()
    twice = write_joint_states(bag_path(tmp_path / "4", fmt), fmt, JOINTS, TIME[:5], Q[:5], order=[0, 1, 1, 2, 3, 4, 5, 6])
    cases.append((twice, ["joint 'arm7_joint2' is named twice"]))
    for path, messages in cases:
        if messages is None:
            result = run("torques", ARM, path, "--topic", "/nope", "-o", tmp_path / "out.csv")
            messages = ["no topic '/nope'; the bag has /joint_states (sensor_msgs/msg/JointState)"]
        else:
            result = run("torques", ARM, path, "-o", tmp_path / "out.csv")
        assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
        assert all(m in result.stderr for m in messages), result.stderr
        assert not (tmp_path / "out.csv").exists()
    folder = next(p for p in good.iterdir() if p.suffix in (".db3", ".mcap")) if fmt != "ros1" else None
    if folder is not None:  # a ROS 2 bag's file without its folder's metadata.yaml is read alone
        (tmp_path / "loose").mkdir()
        loose = tmp_path / "loose" / folder.name
        loose.write_bytes(folder.read_bytes())
        if fmt == "mcap":
            assert run("torques", ARM, loose, "-q").exit_code == 0
        result = run("torques", ARM, tmp_path / "loose")
        assert result.exit_code == 2 and "not a ROS 2 bag folder: it has no metadata.yaml" in result.stderr
    result = run("torques", ARM, chatter, "--topic", "/chatter")
    assert result.exit_code == 2 and "topic /chatter: holds std_msgs/msg/String, not JointState" in result.stderr


def test_measured_effort_comes_with_the_messages(tmp_path):
    """effort_<joint> of a JointState is the measured effort `rnea compare` reads."""
    from rnea_cli.trajectory.open import open_trajectory

    bag = write_joint_states(bag_path(tmp_path, "mcap"), "mcap", JOINTS, TIME, Q, QD, effort=3 * QD)
    traj = open_trajectory(bag, MODEL, effort=True)
    chunks = list(traj.chunks)
    np.testing.assert_array_equal(np.concatenate([c.data["effort"] for c in chunks]), 3 * QD)
    assert os.path.isdir(bag)


def parts_bag(path, fmt, bad_at=None):
    """Publisher A: joints 1-4 with velocity every 4 ms over 1.2 s; publisher B: joints 4-7
    without velocity every 2 ms over its second half: as many messages, as many joints, so their
    tie is broken by the earlier first message. Stamps moved out of order (and onto one another)
    near 0.8 s; A and B logged together at 0.8 s. bad_at: log time (s) of one more message that is not a JointState.
    Returns (path, the log times)."""
    events = [(T0 + 4_000_000 * k, JOINTS[:4], True) for k in range(301)]
    events += [(T0 + 600_000_000 + 2_000_000 * k, JOINTS[3:], False) for k in range(301)]
    events.sort(key=lambda e: (e[0], e[2]))
    writer = BagWriter(path, fmt)
    key = ("/joint_states", JOINT_STATE)
    for k, (log, names, velocity) in enumerate(events):
        stamp = log + (4_000_000 if log == T0 + 796_000_000 else -4_000_000 if log == T0 + 800_000_000 and velocity
                       else 0)
        q = np.sin(1e-9 * (stamp - T0) * np.arange(1, len(names) + 1))
        writer.add(*key, log, writer.joint_state(stamp, names, q, velocity=np.cos(q) if velocity else ()))
        if bad_at is not None and k == 0:
            writer.writer.write(writer.connections[(*key, None, None)], T0 + int(bad_at * 1e9) + 1, b"\x00\x01\x00\x00" + b"\xff" * 9)
    writer.close()
    times = sorted([e[0] for e in events] + ([T0 + int(bad_at * 1e9) + 1] if bad_at is not None else []))
    return path, times


def assert_same_chunks(one, other):
    """Two trajectories' chunks hold the same bits."""
    for a, b in zip(one.chunks, other.chunks, strict=True):
        assert a.time.tobytes() == b.time.tobytes()
        assert {g: x.tobytes() for g, x in a.data.items()} == {g: x.tobytes() for g, x in b.data.items()}


def spy_reads(monkeypatch):
    """[(start, stop)] of the log times this process reads (the workers' parts are not in it)."""
    from rnea_cli.trajectory.sources import bags

    reads, read = [], bags._read

    def recorded(reader, connections, ros1, start, stop, most):
        reads.append((start, stop))
        return read(reader, connections, ros1, start, stop, most)

    monkeypatch.setattr(bags, "_read", recorded)
    return reads


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_large_topic_read_in_parts_by_several_processes_is_the_same(tmp_path, fmt, monkeypatch):
    """Parts of the log time read by worker processes and put back together: the same arrays, bit
    for bit, and the same notices as one reader, with messages of both publishers on a boundary
    and stamps out of order across it; a bad message in the first or the last part is named by
    its index among all the topic's messages. A ROS 1 bag (indexed whole by every reader) is read
    by one."""
    from rnea_cli.trajectory.sources import bagparts, bags
    from rnea_cli.trajectory.open import open_trajectory

    monkeypatch.setattr(bagparts, "PART", 100)  # 602 messages: three parts
    calls, parts_of = [], bagparts.parts

    def on_messages(reader, connections, workers):  # the real parts' bounds, moved onto messages
        parts = parts_of(reader, connections, workers)
        calls.append(len(parts))
        return parts if len(parts) == 1 else [(None, T0 + 400_000_000), (T0 + 400_000_000, T0 + 800_000_000),
                                              (T0 + 800_000_000, None)]

    monkeypatch.setattr(bagparts, "parts", on_messages)
    read_here = spy_reads(monkeypatch)
    bag, _ = parts_bag(bag_path(tmp_path, fmt), fmt)
    alone = open_trajectory(bag, MODEL, workers=1)
    assert read_here == [(None, None)]
    read_here.clear()
    parts = open_trajectory(bag, MODEL, workers=3)
    assert calls == [1, 1 if fmt == "ros1" else 3]
    # in parts: this process read the first only, the workers the others (no reading it whole again)
    assert read_here == [(None, None) if fmt == "ros1" else (None, T0 + 400_000_000)]
    assert parts.notices == alone.notices
    assert "1 stamp out of order: sorted" in " ".join(alone.notices) and "interpolated" in " ".join(alone.notices)
    assert_same_chunks(alone, parts)
    for k, at in enumerate((0.2, 1.0)):  # in the first part, in the last
        (tmp_path / str(k)).mkdir()
        bad, times = parts_bag(bag_path(tmp_path / str(k), fmt), fmt, bad_at=at)
        index = times.index(T0 + int(at * 1e9) + 1)
        messages = []
        for n in (1, 3):
            with pytest.raises(bags.TrajectoryError) as caught:
                open_trajectory(bad, MODEL, workers=n)
            messages.append(str(caught.value))
        assert messages[0] == messages[1] and f"message {index} is not a JointState" in messages[0], messages


@pytest.mark.parametrize("fmt", ["sqlite3", "mcap"])
def test_parts_hold_about_as_many_of_the_topics_messages(tmp_path, monkeypatch, fmt):
    """A camera-like topic over 10 s and the joints only over its last 2 s (in several MCAP chunks):
    the parts are cut where the index of log times (.db3) or the chunk index (MCAP) puts the joints'
    messages (split by the bag's time, the first part would hold none), and they read back what one
    reader reads."""
    from rnea_cli.trajectory.sources import bagparts, bags
    from rnea_cli.trajectory.open import open_trajectory

    monkeypatch.setattr(bagparts, "PART", 100)
    writer = BagWriter(bag_path(tmp_path, fmt), fmt)
    image = writer.store.types["std_msgs/msg/String"](data="x" * 50_000)  # 20 to a chunk (1 MiB)
    joints = []
    for k in range(10_000):  # a ms each
        log = T0 + 1_000_000 * k
        if k % (10 if k >= 8_000 else 100) == 0:  # every 0.1 s, then every 10 ms: about ten chunks with joints
            writer.add("/camera", "std_msgs/msg/String", log, image)
        if k >= 8_000:
            writer.add("/joint_states", JOINT_STATE, log, writer.joint_state(log, JOINTS, np.full(len(JOINTS), 1e-4 * k)))
            joints.append(log)
    writer.close()
    reader = bags._open_reader(writer.writer.path, "run")
    try:
        connections = [c for c in reader.connections if c.topic == "/joint_states"]
        storage = bagparts._storage_files(reader)[0]
        ids = {c.id for c in storage.connections if c.topic == "/joint_states"}
        assert len(bagparts._topic_chunks(storage, ids)) >= 2 if fmt == "mcap" else bagparts._db3_cuts(storage, ids, 2)
        for n in (2, 3):
            parts = bagparts.parts(reader, connections, n)
            assert len(parts) == n
            held = [sum((a is None or t >= a) and (b is None or t < b) for t in joints) for a, b in parts]
            assert sum(held) == len(joints) and min(held) >= len(joints) / (2 * n), (parts, held)
    finally:
        reader.close()
    alone, parts = (open_trajectory(writer.writer.path, MODEL, workers=n) for n in (1, 2))
    assert_same_chunks(alone, parts)


# The CLI run in a fresh interpreter, seen through audit hooks (nothing of rnea is replaced): a fork
# of this process says whether polars had been imported by then; a worker that opens the bag says
# so, and with STALL=1 never gets further (it must be stopped, not waited for).
WATCHED = """import os, signal, sys
parent, bag, stall, told = os.getpid(), sys.argv.pop(1), os.environ.get("STALL") == "1", []
def watch(event, args):
    if os.getpid() == parent:
        if event == "os.fork":
            print("fork with polars" if "polars" in sys.modules else "fork", file=sys.stderr)
    elif event == "open" and str(args[0]).startswith(bag) and not told:
        told.append(print("a worker opens the bag", file=sys.stderr))
        if stall:
            signal.pause()
sys.addaudithook(watch)
from rnea_cli.cli import run
run()
"""


def large_bag(folder, bad_after=None):
    """(path, messages) of an MCAP bag of one JointState topic large enough for the CLI to read in
    two parts (2 bagparts.PART + 1 messages, a millisecond apart). Its header stamps are zero (the log
    times are used) and its messages are 1000 serialized once, each written again and again (the
    writer would take minutes to serialize each). bad_after: the index of a message after which one
    is logged that is not a JointState."""
    from rnea_cli.trajectory.sources import bagparts

    writer, key = BagWriter(bag_path(folder, "mcap"), "mcap"), ("/joint_states", JOINT_STATE)
    n = 2 * bagparts.PART + 1
    raws = [writer.store.serialize_cdr(writer.joint_state(0, JOINTS, np.sin(2e-3 * np.pi * k * np.arange(1, 8))),
                                       JOINT_STATE) for k in range(1000)]
    writer.add(*key, T0, writer.joint_state(0, JOINTS, np.zeros(len(JOINTS))))
    connection = writer.connections[(*key, None, None)]
    for k in range(1, n):
        writer.writer.write(connection, T0 + 1_000_000 * k, raws[k % 1000])
        if k == bad_after:
            writer.writer.write(connection, T0 + 1_000_000 * k + 1, b"\x00\x01\x00\x00" + b"\xff" * 9)
    writer.close()
    return writer.writer.path, n + (bad_after is not None)


def watched_run(bag, *args, threads, stall=False):
    """`rnea ARGS` under WATCHED, with RNEA_THREADS=threads."""
    return subprocess.run([sys.executable, "-c", WATCHED, str(bag), *map(str, args)], capture_output=True, text=True,
                          env=dict(os.environ, RNEA_THREADS=str(threads), STALL="1" if stall else "0"), timeout=300)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the CLI forks its readers where it can")
def test_the_cli_reads_a_large_bag_in_forked_parts_to_the_same_bytes(tmp_path):
    """As the CLI runs, a bag large enough is read in two parts, the second by a worker forked
    before polars was imported; the output is the bytes of one reader's."""
    bag, n = large_bag(tmp_path)
    outputs = []
    for threads in (2, 1):
        out = tmp_path / f"tau{threads}.csv"
        result = watched_run(bag, "torques", ARM, bag, "-o", out, threads=threads)
        assert result.returncode == 0, result.stderr
        seen = [line for line in result.stderr.splitlines() if "fork" in line or "worker" in line]
        assert seen == (["fork", "a worker opens the bag"] if threads == 2 else []), result.stderr
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1] and outputs[0].count(b"\n") == n + 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the CLI forks its readers where it can")
def test_a_bad_message_in_the_first_part_stops_the_other_parts(tmp_path):
    """The first part (read here) holds a bad message, the first of all: the error comes at once,
    and the worker reading the second part is stopped, not waited for (here it never ends)."""
    bag, _ = large_bag(tmp_path, bad_after=200)
    try:
        result = watched_run(bag, "torques", ARM, bag, "-o", tmp_path / "tau.csv", threads=2, stall=True)
    except subprocess.TimeoutExpired:
        pytest.fail("the run waited for the worker of the second part")
    assert result.returncode == 2 and "message 201 is not a JointState" in result.stderr, result.stderr
    assert "a worker opens the bag" in result.stderr  # (and never gets further)
    assert not (tmp_path / "tau.csv").exists()


@pytest.mark.parametrize("fmt", ["ros1", "mcap"])
def test_a_value_that_is_not_finite_names_its_message(tmp_path, fmt, monkeypatch):
    """NaN in one message's position, infinity in one of the other publisher's efforts: each named
    by the message's index among all the topic's messages, read by one reader or in parts."""
    from rnea_cli.trajectory.sources import bagparts, bags
    from rnea_cli.trajectory.open import open_trajectory

    monkeypatch.setattr(bagparts, "PART", 100)
    # messages counted across the batches decoded together: in this process (spawned workers, fresh
    # from a module that imported polars, decode with the default batch)
    monkeypatch.setattr(bags, "READ_AT_ONCE", 64)
    read_here = spy_reads(monkeypatch)
    for k, (field, bad) in enumerate([("position", np.nan), ("effort", np.inf)]):
        path = bag_path(tmp_path / str(k), fmt)
        path.parent.mkdir(exist_ok=True)
        writer = BagWriter(path, fmt)
        count = 0
        for i, t in enumerate(TIME):  # the arm's 6 joints, and the gripper's every 10th sample
            stamp = T0 + int(round(t * 1e9))
            q = Q[i].copy()
            qd = QD[i].copy()
            if i == 300 and field == "position":
                q[2], expected = bad, count
            effort = qd.copy()
            writer.add("/joint_states", JOINT_STATE, stamp, writer.joint_state(stamp, JOINTS[:6], q[:6], qd[:6],
                                                                               effort[:6]))
            count += 1
            if i % 10 == 5:
                if i == 205 and field == "effort":
                    effort[6], expected = bad, count
                writer.add("/joint_states", JOINT_STATE, stamp + 1, writer.joint_state(stamp + 1, JOINTS[6:], q[6:],
                                                                                       qd[6:], effort[6:]))
                count += 1
        writer.close()
        joint = JOINTS[2] if field == "position" else JOINTS[6]
        for workers in (1, 3):
            read_here.clear()
            with pytest.raises(bags.TrajectoryError) as caught:
                open_trajectory(path, MODEL, workers=workers, effort=True)
            assert (read_here[0] != (None, None)) == (workers > 1 and fmt != "ros1") and len(read_here) == 1
            assert str(caught.value).endswith(f"topic /joint_states, message {expected}: the {field} of '{joint}' is "
                                              f"not finite: {bad!r}"), str(caught.value)


def test_a_bag_on_standard_input_is_one_line_asking_for_its_path():
    result = run("torques", ARM, "-", "--input-format", "bag", input=(ROBOTS / "arm7_traj.csv").read_bytes())
    assert result.exit_code == 2 and result.stderr == (
        "rnea: error: <stdin>: a ROS bag is opened by its path (its kind is in its name, and a folder may hold "
        "several files): give the bag's path\n")


@pytest.mark.parametrize("fmt", ["ros1", "mcap"])
def test_velocities_that_are_not_finite_are_derived_from_the_positions(tmp_path, fmt):
    """Drivers publish NaN for a velocity they do not know: qd is then derived, as for messages
    without velocities, and the torques are those of the positions alone."""
    qd = QD.copy()
    qd[::7, 3] = np.nan
    ours, report = torques(ARM, write_joint_states(bag_path(tmp_path, fmt), fmt, JOINTS, TIME, Q, qd))
    expected, _ = torques(ARM, csv_of(tmp_path, TIME, Q))
    np.testing.assert_allclose(tau_of(ours), tau_of(expected), rtol=1e-9, atol=1e-9)  # (time from int ns here)
    assert "velocities from the messages" not in report
    assert f"the velocity of '{JOINTS[3]}' is not finite in {len(qd[::7])} messages: qd and qdd are derived" in report


@pytest.mark.parametrize("fmt", ["ros1", "mcap"])
@pytest.mark.parametrize("velocity", [True, False])
def test_a_topic_too_large_to_hold_streams_to_the_same_bytes(tmp_path, monkeypatch, fmt, velocity):
    """More than MAX_VALUES joint values: read batch after batch, in bounded memory, with the
    names in any order and another publisher's messages skipped; the same output as held whole."""
    from rnea_cli.trajectory.sources import bags

    path = bag_path(tmp_path, fmt)
    writer = BagWriter(path, fmt)
    for k, t in enumerate(TIME):
        stamp = T0 + int(round(t * 1e9))
        order = list(range(7)) if k % 3 else list(range(6, -1, -1))  # two layouts, interleaved
        writer.add("/joint_states", JOINT_STATE, stamp, writer.joint_state(
            stamp, [JOINTS[i] for i in order], Q[k, order], QD[k, order] if velocity else [], 2 * QD[k, order]))
        if k % 10 == 0:  # a camera pan-tilt on the same topic, none of the robot's joints
            writer.add("/joint_states", JOINT_STATE, stamp + 1, writer.joint_state(stamp + 1, ["pan", "tilt"],
                                                                                   [0.1, 0.2]))
    writer.close()
    held = run("torques", ARM, path, "-o", tmp_path / "held.csv")
    assert held.exit_code == 0 and "read as it streams" not in held.stderr
    monkeypatch.setattr(bags, "MAX_VALUES", 1000)  # 401 messages x 7 joints x 3
    monkeypatch.setattr(bags, "READ_AT_ONCE", 64)
    streamed = run("torques", ARM, path, "-o", tmp_path / "streamed.csv")
    assert streamed.exit_code == 0, streamed.stderr
    assert (tmp_path / "streamed.csv").read_bytes() == (tmp_path / "held.csv").read_bytes()
    assert "401 JointState messages, time 0 at stamp 1700000000.000000000 s" + (
        "; velocities from the messages" if velocity else "") + "; read as it streams" in streamed.stderr
    measured = run("compare", ARM, path, "--format", "json")  # the effort, streamed too
    assert measured.exit_code == 0 and json.loads(measured.stdout)["samples"] == len(TIME)


def test_a_streamed_topic_refuses_what_it_cannot_merge_or_sort(tmp_path, monkeypatch):
    from rnea_cli.trajectory.sources import bags

    monkeypatch.setattr(bags, "MAX_VALUES", 1000)
    monkeypatch.setattr(bags, "READ_AT_ONCE", 64)
    for case in ("gripper apart", "out of order"):
        path = bag_path(tmp_path / case.replace(" ", "_"), "mcap")
        path.parent.mkdir()
        writer = BagWriter(path, "mcap")
        for k, t in enumerate(TIME):
            stamp = T0 + int(round(t * 1e9)) - (20_000_000 if case == "out of order" and k == 200 else 0)
            names = JOINTS[:6] if case == "gripper apart" and k == 100 else JOINTS
            writer.add("/joint_states", JOINT_STATE, T0 + k, writer.joint_state(stamp, names, Q[k, :len(names)]))
        writer.close()
        result = run("torques", ARM, path, "-o", tmp_path / "tau.csv")
        message = {"gripper apart": f"message 100: has no '{JOINTS[6]}' (in a topic this large, read as it streams, "
                                    "every message names every joint: split the bag)",
                   "out of order": "message 200: stamp not after the previous one (in a topic this large, read as "
                                   "it streams, stamps must increase: split the bag)"}[case]
        assert result.exit_code == 2 and result.stderr == f"rnea: error: {path}: topic /joint_states, {message}\n", \
            result.stderr
        assert not (tmp_path / "tau.csv").exists()


def test_a_message_rosbags_cannot_read_midway_through_a_streamed_topic_is_one_line(tmp_path, monkeypatch):
    from rosbags.highlevel import AnyReader

    from rnea_cli.trajectory.sources import bags

    path = write_joint_states(bag_path(tmp_path, "mcap"), "mcap", JOINTS, TIME, Q, QD)
    monkeypatch.setattr(bags, "MAX_VALUES", 1000)
    monkeypatch.setattr(bags, "READ_AT_ONCE", 64)  # the first batch, which decides the groups, reads well
    messages = AnyReader.messages

    def breaking(self, *args, **kwargs):
        for k, message in enumerate(messages(self, *args, **kwargs)):
            if k == 100:
                raise ValueError("chunk CRC mismatch\nmore")
            yield message

    monkeypatch.setattr(AnyReader, "messages", breaking)
    result = run("torques", ARM, path, "-o", tmp_path / "tau.csv")
    assert result.exit_code == 2 and result.stderr == (
        f"rnea: error: {path}: topic /joint_states: cannot read message 100: chunk CRC mismatch\n"), result.stderr
    assert not (tmp_path / "tau.csv").exists()


def streamed_too(monkeypatch):
    """Read topics as too large to hold (bagstream.py), in batches of 64 messages."""
    from rnea_cli.trajectory.sources import bags

    monkeypatch.setattr(bags, "MAX_VALUES", 1000)
    monkeypatch.setattr(bags, "READ_AT_ONCE", 64)


def two_publishers_bag(path, fmt, apart):
    """The robot's joints published twice on one topic, 0.05 rad apart, 1 ms after each other:
    `apart` is 'callerid' (ROS 1: two connections) or 'frame_id' (one connection, two frames)."""
    writer = BagWriter(path, fmt)
    for k, t in enumerate(TIME):
        stamp = T0 + int(round(t * 1e9))
        for offset, who in ((0, "robot"), (1_000_000, "sim")):
            msg = writer.joint_state(stamp + offset, JOINTS, Q[k] + (0.05 if who == "sim" else 0.0),
                                     frame_id=who if apart == "frame_id" else "")
            writer.add("/joint_states", JOINT_STATE, stamp + offset, msg,
                       callerid=f"/{who}" if apart == "callerid" else None)
    writer.close()
    return path


@pytest.mark.parametrize("fmt, apart", [("ros1", "callerid"), ("mcap", "frame_id"), ("sqlite3", "frame_id")])
@pytest.mark.parametrize("streamed", [False, True])
def test_two_publishers_of_the_same_joints_are_named_never_interleaved(tmp_path, monkeypatch, fmt, apart, streamed):
    """Their messages were one zig-zag stream (peak torques of thousands of N·m, exit 0): now an
    error naming the topic and both publishers; --publisher reads one, the torques of its samples
    alone, held whole or streamed."""
    path = two_publishers_bag(bag_path(tmp_path, fmt), fmt, apart)
    if streamed:
        streamed_too(monkeypatch)
    result = run("torques", ARM, path, "-o", tmp_path / "tau.csv")
    robot, sim = (f"callerid /{w}" if apart == "callerid" else f"frame_id '{w}'" for w in ("robot", "sim"))
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"rnea: error: {path}: topic /joint_states") and robot in result.stderr \
        and sim in result.stderr and "--publisher" in result.stderr, result.stderr
    assert not (tmp_path / "tau.csv").exists()
    for who, q in (("robot", Q), ("sim", Q + 0.05)):
        ours, report = torques(ARM, path, "--publisher", f"/{who}" if apart == "callerid" else who)
        expected, _ = torques(ARM, csv_of(tmp_path, TIME, q))
        np.testing.assert_allclose(tau_of(ours), tau_of(expected), rtol=1e-9, atol=1e-9)
        assert f"note: {len(TIME)} messages of other publishers not read (--publisher" in report, report
    result = run("torques", ARM, path, "--publisher", "/nobody")
    assert result.exit_code == 2 and "--publisher '/nobody'" in result.stderr, result.stderr


@pytest.mark.parametrize("fmt", ["ros1", "mcap"])
def test_a_publisher_that_also_names_joints_the_robot_lacks_is_read_whole(tmp_path, monkeypatch, fmt):
    """Every other message names a joint the robot does not have: one publisher still (half its
    messages were dropped as 'another publisher'); held and streamed give the same bytes, those of
    every sample. A zero stamp among set ones (time 0 would be 1970) is dropped with a notice, as
    are messages naming none of the robot's joints."""
    path = bag_path(tmp_path, fmt)
    writer = BagWriter(path, fmt)
    for k, t in enumerate(TIME):
        stamp = T0 + int(round(t * 1e9))
        names, q = (JOINTS + ["extra"], np.append(Q[k], 9.0)) if k % 2 else (JOINTS, Q[k])
        writer.add("/joint_states", JOINT_STATE, stamp, writer.joint_state(stamp, names, q))
        if k == 200:  # an unset stamp
            writer.add("/joint_states", JOINT_STATE, stamp + 5, writer.joint_state(0, JOINTS, Q[k] + 1))
        if k % 50 == 0:
            writer.add("/joint_states", JOINT_STATE, stamp + 7, writer.joint_state(stamp + 7, ["pan", "tilt"], [0, 1]))
    writer.close()
    held = run("torques", ARM, path, "-o", tmp_path / "held.csv")
    assert held.exit_code == 0, held.stderr
    streamed_too(monkeypatch)
    streamed = run("torques", ARM, path, "-o", tmp_path / "streamed.csv")
    assert streamed.exit_code == 0 and "read as it streams" in streamed.stderr, streamed.stderr
    assert (tmp_path / "held.csv").read_bytes() == (tmp_path / "streamed.csv").read_bytes()
    expected, _ = torques(ARM, csv_of(tmp_path, TIME, Q))
    ours = read_csv((tmp_path / "held.csv").read_text())
    assert len(ours["time"]) == len(TIME)
    np.testing.assert_allclose(tau_of(ours), tau_of(expected), rtol=1e-9, atol=1e-9)
    for report in (held.stderr, streamed.stderr):
        assert "1 message of the publisher of arm7_joint1, arm7_joint2, arm7_joint3 and 4 more with a zero header " \
               "stamp among set ones dropped" in report, report
        assert "9 messages naming none of the robot's joints (pan, tilt) not read" in report, report
        assert "time 0 at stamp 1700000000.000000000 s" in report


def test_bag_options_that_do_not_apply_are_refused(tmp_path):
    bag = write_joint_states(bag_path(tmp_path, "mcap"), "mcap", JOINTS, TIME, Q)
    result = run("torques", ARM, bag, "--time-unit", "ms")
    assert result.exit_code == 2 and result.stderr == (
        f"rnea: error: {bag}: --time-unit is for a table's time column; a bag's stamps are nanoseconds, read as "
        "such\n"), result.stderr
    (tmp_path / "plan").mkdir()
    path = bag_path(tmp_path / "plan", "mcap")
    writer = BagWriter(path, "mcap")
    writer.add("/plan", JOINT_TRAJECTORY, T0, writer.joint_trajectory(JOINTS, TIME[:5], Q[:5]))
    writer.close()
    result = run("torques", ARM, path, "--publisher", "/arm")
    assert result.exit_code == 2 and "topic /plan: --publisher is for a JointState topic" in result.stderr


@pytest.mark.parametrize("case", ["named twice", "short velocities", "some velocities", "not finite"])
def test_a_joint_trajectory_drops_nothing_silently(tmp_path, case):
    """A joint named twice was read from its first column; velocities of another length, or in
    some points only, were taken as absent without a word."""
    path = bag_path(tmp_path, "mcap")
    writer = BagWriter(path, "mcap")
    names, q, qd = list(JOINTS), Q[:20].copy(), QD[:20].copy()
    if case == "named twice":
        names[3] = JOINTS[1]
    if case == "not finite":
        q[7, 2] = np.inf
    msg = writer.joint_trajectory(names, TIME[:20], q, qd, QDD[:20])
    if case == "short velocities":
        msg.points[5].velocities = np.asarray(qd[5, :6])
    if case == "some velocities":
        for point in msg.points[::3]:
            point.velocities = np.empty(0)
    writer.add("/plan", JOINT_TRAJECTORY, T0, msg)
    writer.close()
    result = run("torques", ARM, path)
    where = f"rnea: error: {path}: topic /plan, message 0"
    expected = {"named twice": f"{where}: joint '{JOINTS[1]}' is named twice in joint_names\n",
                "short velocities": f"{where}, point 5: 6 velocities for 7 joints\n",
                "not finite": f"{where}, point 7: the position of '{JOINTS[2]}' is not finite: inf\n"}.get(case)
    if expected is None:
        assert result.exit_code == 0 and "note: topic /plan, message 0: velocities in 13 of 20 points only: qd and qdd " \
                                         "derived from the positions" in result.stderr, result.stderr
    else:
        assert result.exit_code == 2 and result.stderr == expected, result.stderr


def test_messages_not_used_are_counted_in_a_notice(tmp_path, monkeypatch):
    """Velocity in some messages only (qd derived), and a gripper publisher whose one joint the arm's
    messages carry too (not used): each said, with its count; the torques are the positions'. (A
    topic read as it streams says the first too.)"""
    path = bag_path(tmp_path, "mcap")
    writer = BagWriter(path, "mcap")
    for k, t in enumerate(TIME):
        stamp = T0 + int(round(t * 1e9))
        writer.add("/joint_states", JOINT_STATE, stamp, writer.joint_state(stamp, JOINTS, Q[k], QD[k] if k % 5 else []))
        if k % 10 == 0:
            writer.add("/joint_states", JOINT_STATE, stamp + 3, writer.joint_state(stamp + 3, JOINTS[6:], Q[k, 6:] + 1))
    writer.close()
    ours, report = torques(ARM, path)
    expected, _ = torques(ARM, csv_of(tmp_path, TIME, Q))
    np.testing.assert_allclose(tau_of(ours), tau_of(expected), rtol=1e-9, atol=1e-9)
    assert f"note: 81 messages of 401 of the publisher of {', '.join(JOINTS[:3])} and 4 more carry no velocity for " \
           "every joint: its qd is derived from the positions" in report, report
    assert f"note: 41 messages of the publisher of {JOINTS[6]} not used: its joints ({JOINTS[6]}) are read from the " \
           f"publisher of {', '.join(JOINTS[:3])} and 4 more, which has more of them" in report, report
    (tmp_path / "s").mkdir()
    path = bag_path(tmp_path / "s", "mcap")
    writer = BagWriter(path, "mcap")
    for k, t in enumerate(TIME):
        stamp = T0 + int(round(t * 1e9))
        writer.add("/joint_states", JOINT_STATE, stamp, writer.joint_state(stamp, JOINTS, Q[k], QD[k] if k % 5 else []))
    writer.close()
    held = run("torques", ARM, path, "-o", tmp_path / "held.csv")
    streamed_too(monkeypatch)
    streamed = run("torques", ARM, path, "-o", tmp_path / "streamed.csv")
    assert streamed.exit_code == 0 and "read as it streams" in streamed.stderr, streamed.stderr
    assert (tmp_path / "held.csv").read_bytes() == (tmp_path / "streamed.csv").read_bytes()
    for report in (held.stderr, streamed.stderr):
        assert "note: 81 messages of 401 of the publisher of" in report, report


@pytest.mark.parametrize("fmt", ["sqlite3", "mcap"])
def test_two_ros2_connections_of_the_same_joints_are_refused(tmp_path, fmt):
    """Two connections of one topic (QoS apart), one frame_id: the publishers are told apart by
    their connection, and an error says so, rather than interleave them."""
    path = bag_path(tmp_path, fmt)
    writer = BagWriter(path, fmt)
    for k, t in enumerate(TIME[:50]):
        stamp = T0 + int(round(t * 1e9))
        writer.add("/joint_states", JOINT_STATE, stamp, writer.joint_state(stamp, JOINTS, Q[k]), depth=10)
        writer.add("/joint_states", JOINT_STATE, stamp + 1, writer.joint_state(stamp + 1, JOINTS, Q[k] + 0.05),
                   depth=1)
    writer.close()
    result = run("torques", ARM, path)
    assert result.exit_code == 2 and result.stderr == (
        f"rnea: error: {path}: topic /joint_states: two publishers of the joints arm7_joint1, arm7_joint2, "
        "arm7_joint3 and 4 more: connection 1 (50 messages) and connection 2 (50): no caller id or frame_id tells "
        "them apart: split the bag\n"), result.stderr
