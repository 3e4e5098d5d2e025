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
    arm7_true.urdf         arm7 as built, the "real robot" of docs/identify.md: arm7.urdf with every
                           mass, COM, second moment of mass, damping and friction 10-30 % off (seeded)
    arm7_real_excite.csv   `rnea excite robots/arm7.urdf --duration 10 --rate 200` run on arm7 as
                           built: time, q with noise (sigma 1e-4 rad), effort from Pinocchio with
                           viscous and Coulomb friction, plus noise (sigma 1 % of the joint's RMS)
    arm7_real_traj.csv     arm7_traj.csv's motion run on arm7 as built, measured the same way (a run
                           held out of the fit, for `rnea identify --validate` and `rnea compare`)

Each motion is analytic (sines, or excite's Fourier series), with exact derivatives, written with
repr(float). All but the first five need rnea_cli itself (for the torques a sensor would read, and
`rnea excite`), polars, rosbags and Pinocchio (the test extra): run it in the project's .venv.
`make_examples.py --out DIR` writes them into DIR instead of robots/ (tests/test_examples.py checks
that they are the files shipped, byte for byte).
"""
import argparse
import csv
import math
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def write(path, columns):
    names = list(columns)
    with open(path, "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(names)
        for k in range(len(columns[names[0]])):
            out.writerow([repr(float(columns[c][k])) for c in names])


def read(path):
    with open(path) as f:
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


def main(out=HERE):
    arm = read(os.path.join(HERE, "arm7_traj.csv"))
    t = arm["time"]
    write(os.path.join(out, "arm7_free_traj.csv"),
          {"time": t, **free_base(t), **{k: v for k, v in arm.items() if k != "time"}})
    payload = {f"fext_arm7_tool_{c}": np.zeros_like(t) for c in ("fx", "fy", "fz", "tx", "ty", "tz")}
    payload["fext_arm7_tool_fz"] = np.full_like(t, -2.0 * 9.81)
    write(os.path.join(out, "arm7_payload_traj.csv"), {**arm, **payload})

    t = np.arange(201) * 0.01
    q, qd, qdd = sine(t, 0.015, 2 * math.pi, 0.0, 0.02)
    write(os.path.join(out, "gripper2_traj.csv"),
          {"time": t, "q_finger_left": q, "qd_finger_left": qd, "qdd_finger_left": qdd})

    t = np.arange(301) * 0.01
    parts = {"base_x": sine(t, 0.5, 1.0), "base_y": sine(t, 0.3, 0.8, 0.4), "base_theta": sine(t, 0.6, 0.7),
             "shoulder": sine(t, 0.8, 1.5, 0.0, 0.3)}
    cols = {"time": t}
    for k, prefix in enumerate(("q", "qd", "qdd")):
        for name, values in parts.items():
            cols[f"{prefix}_{name}"] = values[k]
    write(os.path.join(out, "rover_traj.csv"), cols)
    data_examples(out)
    identification_examples(out)


def data_examples(out):
    """The examples of rnea's data sources: Parquet, a ROS bag, a noisy measurement, a log."""
    import polars as pl

    from rnea_cli import load_urdf, rnea
    from rnea_cli.run.actuators import load_drives
    from rnea_cli.model.tree import Coordinates

    arm = read(os.path.join(HERE, "arm7_traj.csv"))
    model = load_urdf(os.path.join(HERE, "arm7.urdf"))
    names = model.joint_names
    t = arm["time"]
    q, qd, qdd = (np.column_stack([arm[f"{p}_{j}"] for j in names]) for p in ("q", "qd", "qdd"))
    pl.DataFrame(arm).write_parquet(os.path.join(out, "arm7_traj.parquet"))
    bag(os.path.join(out, "arm7_bag"), names, t, q, qd)

    rng = np.random.default_rng(2026)
    rate, n = 500.0, 1500
    tn = np.arange(n) / rate + rng.uniform(-0.1, 0.1, n) / rate
    a = np.array([0.7, 0.5, 0.5, 0.5, 0.6, 0.6, 0.5])
    w = math.pi * np.array([0.4, 0.5, 0.6, 0.5, 0.75, 0.75, 0.8])
    phase, offset = np.array([0, 0.5 * math.pi, 0.3, -0.5, 0, 1, 0]), np.array([0, 0.4, 0, -1.2, 0, 0.5, 0])
    measured = a * np.sin(np.outer(tn, w) + phase) + offset + rng.normal(0, 1e-4, (n, 7))
    write(os.path.join(out, "arm7_noisy.csv"), {"time": tn, **{f"q_{j}": measured[:, i] for i, j in enumerate(names)}})

    tau = rnea(model, q, qd, qdd)
    sensor = 1.05 * tau + 0.3 + rng.normal(0, 0.05, tau.shape)
    write(os.path.join(out, "arm7_measured.csv"), {**arm, **{f"effort_{j}": sensor[:, i] for i, j in enumerate(names)}})

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
    with open(os.path.join(out, "arm7_rtde.txt"), "w") as f:
        f.write(" ".join(cols) + "\n")
        for k in range(len(t)):
            f.write(" ".join(repr(float(cols[c][k])) for c in cols) + "\n")


EXCITE = ["--duration", "10", "--rate", "200"]  # the run of docs/identify.md: `rnea excite robots/arm7.urdf ...`
Q_NOISE = 1e-4  # rad: the encoders' noise, so that `rnea identify --smooth` has work to do
EFFORT_NOISE = 0.01  # of each joint's RMS effort over the run


def identification_examples(out):
    """docs/identify.md's whole loop: arm7 as built (arm7_true.urdf), which ran the excitation of
    `rnea excite` (arm7_real_excite.csv) and arm7_traj.csv's motion (arm7_real_traj.csv). Each has
    its own seeded generator, so that a change of excite's output changes its run only."""
    true = perturbed(os.path.join(HERE, "arm7.urdf"), np.random.default_rng(25))
    with open(os.path.join(out, "arm7_true.urdf"), "w") as f:
        f.write(true)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "excite.csv")
        rnea = os.path.join(os.path.dirname(sys.executable), "rnea")
        subprocess.run([rnea, "excite", os.path.join(HERE, "arm7.urdf"), *EXCITE, "-o", path, "--quiet"], check=True)
        excitation = read(path)
    for name, motion, seed in (("arm7_real_excite.csv", excitation, 2501),
                               ("arm7_real_traj.csv", read(os.path.join(HERE, "arm7_traj.csv")), 2502)):
        write(os.path.join(out, name), measured_run(true, motion, np.random.default_rng(seed)))


def perturbed(path, rng):
    """The URDF at path with every link's mass, COM and rotational inertia and every joint's
    damping and friction changed by 10-30 % (up or down), physically consistent: the second moments
    of the mass distribution, S = tr(I)/2 1 - I (positive semi-definite: the triangle inequality),
    scaled along each axis of <inertial>, I = tr(S) 1 - S; the COM moved by 10-30 % of its offset."""
    def factor(n):
        return 1 + rng.uniform(0.1, 0.3, n) * rng.choice([-1.0, 1.0], n)

    root = ET.parse(path).getroot()
    keys, at = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
    for inertial in root.iter("inertial"):
        mass, origin, inertia = (inertial.find(tag) for tag in ("mass", "origin", "inertia"))
        mass.set("value", repr(float(mass.get("value")) * float(factor(1)[0])))
        com = np.array([float(x) for x in origin.get("xyz").split()])
        shift = rng.normal(size=3)
        shift *= rng.uniform(0.1, 0.3) * _norm(com) / _norm(shift)
        origin.set("xyz", " ".join(repr(float(x)) for x in com + shift))
        I = np.zeros((3, 3))
        for key, (a, b) in zip(keys, at):
            I[a, b] = I[b, a] = float(inertia.get(key))
        S = np.trace(I) / 2 * np.eye(3) - I
        d = np.sqrt(factor(3))  # S -> D S D, D = diag(sqrt(factor))
        S = d[:, None] * S * d[None, :]
        for key, (a, b) in zip(keys, at):
            inertia.set(key, repr(float((np.trace(S) * np.eye(3) - S)[a, b])))
    for dynamics in root.iter("dynamics"):
        for key in ("damping", "friction"):
            dynamics.set(key, repr(float(dynamics.get(key)) * float(factor(1)[0])))
    note = ET.Comment("\n  arm7_true.urdf - arm7 as built, the \"real robot\" of docs/identify.md, made by\n"
                      "  make_examples.py: arm7.urdf with every mass, COM, second moment of mass, damping\n"
                      "  and friction 10-30 % off (seeded). The efforts of arm7_real_*.csv are this robot's.\n"
                      "  Not a model to use: the truth an identification of arm7.urdf should find.\n")
    note.tail = "\n"
    text = ET.tostring(note, encoding="unicode") + ET.tostring(root, encoding="unicode")
    lines = [line.rstrip() for line in text.splitlines()]  # (where arm7.urdf's comments were)
    return '<?xml version="1.0"?>\n' + "\n".join(l for k, l in enumerate(lines) if l or lines[k - 1]) + "\n"


def _norm(v):
    """|v| of a 3-vector in one order, in Python's doubles: the same bits on every CPU, where
    np.linalg.norm's dot is the BLAS kernel's (an Intel AVX-512 one gave arm7_true.urdf a COM one
    ulp off the shipped one)."""
    x, y, z = (float(c) for c in v)
    return math.sqrt(x * x + y * y + z * z)


def measured_run(urdf, motion, rng):
    """time, q_<j> and effort_<j> of the robot `urdf` (text) moving along motion (time, q_, qd_, qdd_
    columns): effort = Pinocchio's RNEA + damping qd + friction sign(qd), plus Gaussian noise of
    EFFORT_NOISE of each joint's RMS; q with noise Q_NOISE (qd and qdd not logged)."""
    import pinocchio as pin

    pm = pin.buildModelFromXML(urdf)
    data = pm.createData()
    joints = [j for j in ET.fromstring(urdf).iter("joint") if j.get("type") != "fixed"]
    names = [j.get("name") for j in joints]
    damping, friction = (np.array([float(j.find("dynamics").get(k)) for j in joints]) for k in ("damping", "friction"))
    q, qd, qdd = (np.column_stack([motion[f"{p}_{j}"] for j in names]) for p in ("q", "qd", "qdd"))
    index = [pm.joints[pm.getJointId(j)].idx_v for j in names]
    assert pm.nq == pm.nv == len(names) and sorted(index) == list(range(pm.nv))
    tau = np.empty_like(q)
    for k in range(len(q)):
        x = [np.zeros(pm.nv) for _ in range(3)]
        for full, part in zip(x, (q, qd, qdd)):
            full[index] = part[k]
        tau[k] = pin.rnea(pm, data, *x)[index]
    effort = tau + damping * qd + friction * np.sign(qd)
    effort += rng.normal(0, 1, effort.shape) * EFFORT_NOISE * np.sqrt(np.mean(effort ** 2, axis=0))
    q = q + rng.normal(0, Q_NOISE, q.shape)
    return {"time": motion["time"], **{f"q_{j}": q[:, i] for i, j in enumerate(names)},
            **{f"effort_{j}": effort[:, i] for i, j in enumerate(names)}}


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
    parser = argparse.ArgumentParser(description="Regenerate the examples of rnea's extended features.")
    parser.add_argument("--out", default=HERE, help="folder to write them to (default: robots/)")
    main(parser.parse_args().out)
