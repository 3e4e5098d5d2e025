#!/usr/bin/env python3
"""Regenerate the examples of rnea's extended features in robots/ (needs numpy).

    arm7_free_traj.csv     arm7 on a floating base (a free-floating or mobile base): base pose,
                           twist [w; v] in the base frame and its time derivative, plus arm7_traj.csv
    arm7_payload_traj.csv  arm7_traj.csv plus the weight of a 2 kg payload held at arm7_tool
                           (fext_arm7_tool_*, world frame, at the tool origin)
    gripper2_traj.csv      gripper2.urdf: finger_right mimics finger_left (multiplier -1)
    rover_traj.csv         rover.urdf: a planar base (x, y, theta) carrying a one-link arm
    arm7_traj.parquet      arm7_traj.csv as Parquet
    arm7_bag/              arm7_traj.csv as a ROS 2 bag (MCAP) of sensor_msgs/JointState on
                           /joint_states, stamps 1.25 ms before the log times, names alphabetical
                           in reverse (as a driver may list them)
    arm7_noisy.csv         a measurement: arm7's motion at 500 Hz for 3 s, stamps jittered by
                           ±10 % of the period, Gaussian noise of 1e-4 rad on q (q only)
    arm7_measured.csv      arm7_traj.csv with a miscalibrated torque sensor's reading:
                           effort_<j> = 1.05 tau_<j> + 0.3 N·m + noise (sigma 0.05 N·m)
    arm7_rtde.txt          arm7_traj.csv as UR RTDE's record.py logs a run (space-separated;
                           actual_q_i, actual_qd_i, target_qdd_i, and actual_current_i: the
                           drive's effort / (torque_constant gear_ratio efficiency))

Each motion is analytic (sines), with exact derivatives, written with repr(float). The last four
need rnea_cli itself (for the torques a sensor would read), polars and rosbags: run it in the
project's .venv.
"""
import csv
import math
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def write(name, columns):
    names = list(columns)
    with open(os.path.join(HERE, name), "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(names)
        for k in range(len(columns[names[0]])):
            out.writerow([repr(float(columns[c][k])) for c in names])


def read(name):
    with open(os.path.join(HERE, name)) as f:
        rows = list(csv.reader(f))
    data = np.array([[float(x) for x in r] for r in rows[1:]])
    return {c: data[:, k] for k, c in enumerate(rows[0])}


def sine(t, a, w, phi=0.0, b=0.0):
    """q, qd, qdd of a sin(w t + phi) + b."""
    return a * np.sin(w * t + phi) + b, a * w * np.cos(w * t + phi), -a * w * w * np.sin(w * t + phi)


def free_base(t):
    """Base columns: p = (0.1 sin t, 0.05 sin 2t, 0.02 cos t), yaw psi = 0.3 sin(0.5 t)."""
    p, pd, pdd = (np.column_stack(x) for x in zip(sine(t, 0.1, 1.0), sine(t, 0.05, 2.0), sine(t, 0.02, 1.0, math.pi / 2)))
    psi, psid, psidd = sine(t, 0.3, 0.5)
    c, s = np.cos(psi), np.sin(psi)
    # body-frame linear velocity v = R^T pd (R a yaw), its derivative d/dt(R^T pd) = R^T pdd - w x v
    v = np.column_stack([c * pd[:, 0] + s * pd[:, 1], -s * pd[:, 0] + c * pd[:, 1], pd[:, 2]])
    Rt_pdd = np.column_stack([c * pdd[:, 0] + s * pdd[:, 1], -s * pdd[:, 0] + c * pdd[:, 1], pdd[:, 2]])
    w = np.column_stack([0 * t, 0 * t, psid])
    dv = Rt_pdd - np.cross(w, v)
    dw = np.column_stack([0 * t, 0 * t, psidd])
    cols = {"q_base_x": p[:, 0], "q_base_y": p[:, 1], "q_base_z": p[:, 2], "q_base_qx": 0 * t,
            "q_base_qy": 0 * t, "q_base_qz": np.sin(psi / 2), "q_base_qw": np.cos(psi / 2)}
    for prefix, ang, lin in (("qd", w, v), ("qdd", dw, dv)):
        for k, axis in enumerate("xyz"):
            cols[f"{prefix}_base_w{axis}"] = ang[:, k]
        for k, axis in enumerate("xyz"):
            cols[f"{prefix}_base_v{axis}"] = lin[:, k]
    return cols


def main():
    arm = read("arm7_traj.csv")
    t = arm["time"]
    write("arm7_free_traj.csv", {"time": t, **free_base(t), **{k: v for k, v in arm.items() if k != "time"}})
    payload = {f"fext_arm7_tool_{c}": np.zeros_like(t) for c in ("fx", "fy", "fz", "tx", "ty", "tz")}
    payload["fext_arm7_tool_fz"] = np.full_like(t, -2.0 * 9.81)
    write("arm7_payload_traj.csv", {**arm, **payload})

    t = np.arange(201) * 0.01
    q, qd, qdd = sine(t, 0.015, 2 * math.pi, 0.0, 0.02)
    write("gripper2_traj.csv", {"time": t, "q_finger_left": q, "qd_finger_left": qd, "qdd_finger_left": qdd})

    t = np.arange(301) * 0.01
    parts = {"base_x": sine(t, 0.5, 1.0), "base_y": sine(t, 0.3, 0.8, 0.4), "base_theta": sine(t, 0.6, 0.7),
             "shoulder": sine(t, 0.8, 1.5, 0.0, 0.3)}
    cols = {"time": t}
    for k, prefix in enumerate(("q", "qd", "qdd")):
        for name, values in parts.items():
            cols[f"{prefix}_{name}"] = values[k]
    write("rover_traj.csv", cols)
    data_examples()


def data_examples():
    """The examples of rnea's data sources: Parquet, a ROS bag, a noisy measurement, a log."""
    import polars as pl

    from rnea_cli import load_urdf, rnea
    from rnea_cli.run.actuators import load_drives
    from rnea_cli.model.tree import Coordinates

    arm = read("arm7_traj.csv")
    model = load_urdf(os.path.join(HERE, "arm7.urdf"))
    names = model.joint_names
    t = arm["time"]
    q, qd, qdd = (np.column_stack([arm[f"{p}_{j}"] for j in names]) for p in ("q", "qd", "qdd"))
    pl.DataFrame(arm).write_parquet(os.path.join(HERE, "arm7_traj.parquet"))
    bag(os.path.join(HERE, "arm7_bag"), names, t, q, qd)

    rng = np.random.default_rng(2026)
    rate, n = 500.0, 1500
    tn = np.arange(n) / rate + rng.uniform(-0.1, 0.1, n) / rate
    a = np.array([0.7, 0.5, 0.5, 0.5, 0.6, 0.6, 0.5])
    w = math.pi * np.array([0.4, 0.5, 0.6, 0.5, 0.75, 0.75, 0.8])
    phase, offset = np.array([0, 0.5 * math.pi, 0.3, -0.5, 0, 1, 0]), np.array([0, 0.4, 0, -1.2, 0, 0.5, 0])
    measured = a * np.sin(np.outer(tn, w) + phase) + offset + rng.normal(0, 1e-4, (n, 7))
    write("arm7_noisy.csv", {"time": tn, **{f"q_{j}": measured[:, i] for i, j in enumerate(names)}})

    tau = rnea(model, q, qd, qdd)
    sensor = 1.05 * tau + 0.3 + rng.normal(0, 0.05, tau.shape)
    write("arm7_measured.csv", {**arm, **{f"effort_{j}": sensor[:, i] for i, j in enumerate(names)}})

    coords = Coordinates(model)
    drives = load_drives(os.path.join(HERE, "arm7_drives.yaml"), coords)
    d = [drives[j] for j in names]
    effort = tau + np.array([x.viscous for x in d]) * qd + np.array([x.coulomb for x in d]) * np.sign(qd) \
        + np.array([x.armature for x in d]) * qdd
    # as `rnea compare --effort-is current` reads a current: torque = current kt ratio efficiency
    current = effort / np.array([x.torque_constant * x.gear_ratio * x.efficiency for x in d])
    cols = {"timestamp": t}
    for prefix, x in (("actual_q", q), ("actual_qd", qd), ("target_qdd", qdd), ("actual_current", current)):
        cols |= {f"{prefix}_{i}": x[:, i] for i in range(7)}
    with open(os.path.join(HERE, "arm7_rtde.txt"), "w") as f:
        f.write(" ".join(cols) + "\n")
        for k in range(len(t)):
            f.write(" ".join(repr(float(cols[c][k])) for c in cols) + "\n")


def bag(path, names, t, q, qd):
    import shutil

    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    shutil.rmtree(path, ignore_errors=True)
    store = get_typestore(Stores.ROS2_HUMBLE)
    T = store.types
    order = sorted(range(len(names)), key=lambda i: names[i], reverse=True)
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=store)
        for k in range(len(t)):
            ns = 1_767_225_600 * 10**9 + round(t[k] * 1e9)
            msg = T["sensor_msgs/msg/JointState"](
                header=T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=ns // 10**9,
                                                                                       nanosec=ns % 10**9),
                                                frame_id=""),
                name=[names[i] for i in order], position=np.ascontiguousarray(q[k, order]),
                velocity=np.ascontiguousarray(qd[k, order]), effort=np.empty(0))
            writer.write(connection, ns + 1_250_000, store.serialize_cdr(msg, "sensor_msgs/msg/JointState"))


if __name__ == "__main__":
    main()
