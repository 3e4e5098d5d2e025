"""The benchmarks of rnea's reach: Parquet in and out, ROS bags (MCAP), many files on every core,
the engine on two threads, the HTML report. Each next to the alternative a user would pick, in one
run, as a ratio (run by run.py, which writes RESULTS.md)."""

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import run as bench  # the helpers of run.py

USER_BAG_LOOP = """\
import sys, numpy as np
from pathlib import Path
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore
names = sys.argv[2].split(",")
t, q, qd = [], [], []
with AnyReader([Path(sys.argv[1])], default_typestore=get_typestore(Stores.ROS2_HUMBLE)) as reader:
    connections = [c for c in reader.connections if c.msgtype == "sensor_msgs/msg/JointState"]
    for connection, _, raw in reader.messages(connections=connections):
        msg = reader.deserialize(raw, connection.msgtype)
        index = [msg.name.index(n) for n in names]
        t.append(msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec)
        q.append(msg.position[index]); qd.append(msg.velocity[index])
t, q, qd = np.array(t), np.array(q), np.array(qd)
print(len(t), q.shape, qd.shape)
"""


def parquet_end_to_end(rows, joint_names):
    """The CSV benchmark's file as Parquet: the baseline script (pandas + pin loop, Parquet in and
    out) against `rnea torques traj.parquet -o out.parquet`."""
    import polars as pl

    csv = bench.ensure_trajectory(bench.DATA / f"traj_{bench.rows_label(rows)}.csv", rows, joint_names)
    path = bench.DATA / f"traj_{bench.rows_label(rows)}.parquet"
    if not path.exists() or path.stat().st_mtime < csv.stat().st_mtime:
        print(f"  writing {path.name}...", flush=True)
        pl.scan_csv(csv, infer_schema=False).select(pl.all().cast(pl.Float64)).sink_parquet(path, row_group_size=65536)
    base_out, ours_out = bench.DATA / "baseline_out.parquet", bench.DATA / "rnea_out.parquet"
    print(f"  baseline script and rnea torques on {path.name}, taking turns...", flush=True)
    (base_s, base_cpu, base_mb), (ours_s, ours_cpu, ours_mb) = bench.best_alternating(
        [([sys.executable, bench.BASELINE, bench.ARM, path, base_out], base_out),
         ([bench.RNEA, "torques", bench.ARM, path, "-o", ours_out, "-q"], ours_out)])
    base, ours = pl.read_parquet(base_out), pl.read_parquet(ours_out)
    tau = [c for c in ours.columns if c.startswith("tau_")]
    diff = bench.relative_diff(ours.select(tau).to_numpy(), base.select(tau).to_numpy())
    for p in (base_out, ours_out):
        p.unlink()
    return {"rows": rows, "base_s": base_s, "base_cpu": base_cpu, "base_mb": base_mb, "ours_s": ours_s,
            "ours_cpu": ours_cpu, "ours_mb": ours_mb, "diff": diff}


def ensure_bag(path, messages, joint_names):
    """An MCAP bag of `messages` JointState messages (7 joints, 1 kHz), written once by rosbags."""
    marker = path / ".complete"
    if marker.exists():
        return path
    import shutil

    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    shutil.rmtree(path, ignore_errors=True)
    print(f"  writing {path.name} ({messages:,} JointState messages; about a minute)...", flush=True)
    store = get_typestore(Stores.ROS2_HUMBLE)
    T = store.types
    writer = Writer(path, version=9, storage_plugin=StoragePlugin.MCAP)
    with writer:
        connection = writer.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=store)
        for start in range(0, messages, 100_000):
            t, q, qd, _ = bench.trajectory_block(joint_names, start, min(100_000, messages - start))
            for k in range(len(t)):
                ns = 1_700_000_000_000_000_000 + int(round(t[k] * 1e9))
                msg = T["sensor_msgs/msg/JointState"](
                    header=T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
                        sec=ns // 10**9, nanosec=ns % 10**9), frame_id=""),
                    name=joint_names, position=np.ascontiguousarray(q[k]), velocity=np.ascontiguousarray(qd[k]),
                    effort=np.empty(0))
                writer.write(connection, ns, store.serialize_cdr(msg, "sensor_msgs/msg/JointState"))
    marker.touch()
    return path


def bag_end_to_end(messages, joint_names):
    """`rnea torques bag -o out.parquet` (read, decode, torques, write) against the reading loop a
    user writes (AnyReader + deserialize + stacking into arrays), which computes no torque at all."""
    path = ensure_bag(bench.DATA / f"joint_states_{bench.rows_label(messages)}", messages, joint_names)
    out = bench.DATA / "rnea_bag_out.parquet"
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
        script.write(USER_BAG_LOOP)
    try:
        print(f"  the user's AnyReader loop and rnea torques on {path.name}, taking turns...", flush=True)
        (user_s, user_cpu, user_mb), (ours_s, ours_cpu, ours_mb) = bench.best_alternating(
            [([sys.executable, script.name, path, ",".join(joint_names)], out),
             ([bench.RNEA, "torques", bench.ARM, path, "-o", out, "-q"], out)], repeats=2)
    finally:
        os.unlink(script.name)
        out.unlink(missing_ok=True)
    return {"messages": messages, "user_s": user_s, "user_cpu": user_cpu, "user_mb": user_mb, "ours_s": ours_s,
            "ours_cpu": ours_cpu, "ours_mb": ours_mb}


def many_files(count, rows, joint_names):
    """`rnea torques FILE... --output-dir DIR --jobs 2` against `--jobs 1`, on `count` files."""
    source = bench.ensure_trajectory(bench.DATA / f"traj_{bench.rows_label(rows)}.csv", rows, joint_names)
    folder = bench.DATA / f"many_{bench.rows_label(rows)}"
    folder.mkdir(exist_ok=True)
    files = []
    for k in range(count):
        link = folder / f"part{k:02d}.csv"
        if not (link.exists() and os.path.samefile(link, source)):  # a link to what this run measures
            link.unlink(missing_ok=True)
            os.link(source, link)
        files.append(link)
    times = {}
    for jobs in (1, 2, 1, 2):
        out = Path(tempfile.mkdtemp(dir=bench.DATA))
        start = time.perf_counter()
        subprocess.run([bench.RNEA, "torques", bench.ARM, *files, "--output-dir", out, "--jobs", str(jobs), "-q"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.setdefault(jobs, []).append(time.perf_counter() - start)
        subprocess.run(["rm", "-rf", out], check=True)
    return {"files": count, "rows": rows, "one": min(times[1]), "two": min(times[2])}


def engine_threads(samples=1_000_000):
    """The engine on one big array: threads=2 against threads=1, in-process, best of 5 taking turns."""
    from rnea_cli import load_urdf
    from rnea_cli.dynamics.engine import inverse_dynamics
    from rnea_cli.dynamics.workspace import Workspace

    model = load_urdf(bench.ARM)
    rng = np.random.default_rng(1)
    q, qd, qdd = (np.asfortranarray(rng.uniform(-2, 2, (samples, model.n))) for _ in range(3))
    workspace = Workspace(model)
    results = {}

    def call(threads):
        def go():
            results[threads] = inverse_dynamics(model, q, qd, qdd, workspace=workspace, threads=threads).tau
        return go

    one, two = bench.best_of(call(1), call(2), repeats=5)
    return {"samples": samples, "one": one, "two": two, "same": bool(np.array_equal(results[1], results[2]))}


def _busy(n):
    total = 0
    for i in range(n):
        total += i
    return total


def two_cores(n=20_000_000):
    """What two cores give this machine: two runs of a pure-Python loop in two forked processes
    against one after the other (best of 3 each). A ratio below 2 is the ceiling of every
    parallel measurement here (--jobs, threads)."""
    import multiprocessing

    one, two = [], []
    with multiprocessing.get_context("fork").Pool(2) as pool:
        pool.map(_busy, [1, 1])  # the workers started
        for _ in range(3):
            start = time.perf_counter()
            _busy(n), _busy(n)
            one.append(time.perf_counter() - start)
            start = time.perf_counter()
            pool.map(_busy, [n, n])
            two.append(time.perf_counter() - start)
    return {"one": min(one), "two": min(two)}


def report_time(rows=200_000):
    """`rnea report` against `rnea check` on the same run (median of 3 each, taking turns), and its size."""
    import polars as pl

    from rnea_cli import load_urdf

    model = load_urdf(bench.ROBOT_ARM7)
    path = bench.DATA / f"arm7_{bench.rows_label(rows)}.csv"
    if not path.exists():
        t = np.arange(rows) * 1e-3
        arg = np.outer(t, 0.05 * np.arange(1, model.n + 1))
        pl.DataFrame({"time": t} | {f"{p}_{j}": f(arg[:, i]) for i, j in enumerate(model.joint_names)
                                    for p, f in (("q", lambda x: 0.5 * np.sin(x)), ("qd", lambda x: 0.5 * np.cos(x)),
                                                 ("qdd", lambda x: -0.5 * np.sin(x)))}).write_csv(path)
    html = bench.DATA / "report.html"
    check, report = [], []
    for _ in range(3):
        for times, cmd in ((check, [bench.RNEA, "check", bench.ROBOT_ARM7, path, "--actuators", bench.DRIVES_ARM7]),
                           (report, [bench.RNEA, "report", bench.ROBOT_ARM7, path, "--actuators", bench.DRIVES_ARM7,
                                     "-o", html, "-q"])):
            start = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times.append(time.perf_counter() - start)
    size = html.stat().st_size
    html.unlink()
    return {"rows": rows, "check": statistics.median(check), "report": statistics.median(report), "size": size}
