#!/usr/bin/env python3
"""Regenerate the examples of rnea's extended features in robots/ (needs numpy).

    arm7_free_traj.csv     arm7 on a floating base (a free-floating or mobile base): base pose,
                           twist [w; v] in the base frame and its time derivative, plus arm7_traj.csv
    arm7_payload_traj.csv  arm7_traj.csv plus the weight of a 2 kg payload held at arm7_tool
                           (fext_arm7_tool_*, world frame, at the tool origin)
    gripper2_traj.csv      gripper2.urdf: finger_right mimics finger_left (multiplier -1)
    rover_traj.csv         rover.urdf: a planar base (x, y, theta) carrying a one-link arm

Each motion is analytic (sines), with exact derivatives, written with repr(float).
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


if __name__ == "__main__":
    main()
