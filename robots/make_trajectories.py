#!/usr/bin/env python3
"""Regenerate the example joint trajectories in robots/.

Writes, next to this script:
    planar2_traj.csv  planar2_traj.yaml   (2 s at 100 Hz, 201 samples)
    arm7_traj.csv     arm7_traj.yaml      (4 s at 100 Hz, 401 samples)

Every joint follows   q(t)   = a sin(w t + phi) + b
                      qd(t)  = a w cos(w t + phi)
                      qdd(t) = -a w^2 sin(w t + phi)
evaluated in float64.  Joint names and order come from the URDF (movable
joints in document order); the script checks position and velocity limits.

CSV:  header  time,q_<j>...,qd_<j>...,qdd_<j>...  values written with repr(float)
YAML: columnar mapping  time: [...], q: {<j>: [...]}, qd: {...}, qdd: {...}
      written by yaml.safe_dump; the script re-reads both files and checks
      that they hold bit-identical floats.

Usage:  python3 robots/make_trajectories.py      (needs numpy and pyyaml)
"""
import csv
import math
import os
import xml.etree.ElementTree as ET

import numpy as np
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
PI = math.pi

# name -> (urdf, duration [s], rate [Hz], per-joint (a, w, phi, b) in URDF order)
ROBOTS = {
    "planar2": (
        "planar2.urdf", 2, 100,
        [
            (0.7, 1.0 * PI, 0.0, 0.0),   # shoulder
            (0.5, 1.5 * PI, 0.5, 0.6),   # elbow
        ],
    ),
    "arm7": (
        "arm7.urdf", 4, 100,
        [
            (0.7, 0.40 * PI, 0.0, 0.0),    # arm7_joint1
            (0.5, 0.50 * PI, 0.5 * PI, 0.4),  # arm7_joint2
            (0.5, 0.60 * PI, 0.3, 0.0),    # arm7_joint3
            (0.5, 0.50 * PI, -0.5, -1.2),  # arm7_joint4
            (0.6, 0.75 * PI, 0.0, 0.0),    # arm7_joint5
            (0.6, 0.75 * PI, 1.0, 0.5),    # arm7_joint6
            (0.5, 0.80 * PI, 0.0, 0.0),    # arm7_joint7
        ],
    ),
}


def movable_joints(urdf_path):
    """(name, lower, upper, velocity) of the non-fixed joints, in document order."""
    joints = []
    for j in ET.parse(urdf_path).getroot().findall("joint"):
        if j.get("type") == "fixed":
            continue
        lim = j.find("limit")
        joints.append((j.get("name"), float(lim.get("lower")),
                       float(lim.get("upper")), float(lim.get("velocity"))))
    return joints


def make(name):
    urdf, duration, rate, params = ROBOTS[name]
    joints = movable_joints(os.path.join(HERE, urdf))
    assert len(joints) == len(params), (name, len(joints), len(params))

    n = duration * rate + 1
    time = [i / rate for i in range(n)]          # i/100 gives the shortest reprs
    t = np.array(time, dtype=np.float64)
    q, qd, qdd = {}, {}, {}
    for (jname, lower, upper, vmax), (a, w, phi, b) in zip(joints, params):
        s = np.sin(w * t + phi)
        c = np.cos(w * t + phi)
        q[jname] = [float(v) for v in a * s + b]
        qd[jname] = [float(v) for v in a * w * c]
        # "+ 0.0" turns the -0.0 that -a w^2 sin(0) gives into 0.0
        qdd[jname] = [float(v) + 0.0 for v in -a * w * w * s]
        # bounds of the analytic motion, with margin
        assert lower + 0.1 < b - a and b + a < upper - 0.1, (jname, "position")
        assert a * w <= 0.85 * vmax, (jname, "velocity", a * w, vmax)

    names = [j[0] for j in joints]
    header = (["time"] + ["q_" + j for j in names] + ["qd_" + j for j in names]
              + ["qdd_" + j for j in names])
    csv_path = os.path.join(HERE, name + "_traj.csv")
    with open(csv_path, "w", newline="") as f:
        f.write(",".join(header) + "\n")
        for i in range(n):
            row = ([time[i]] + [q[j][i] for j in names] + [qd[j][i] for j in names]
                   + [qdd[j][i] for j in names])
            f.write(",".join(repr(v) for v in row) + "\n")

    doc = {"time": time, "q": q, "qd": qd, "qdd": qdd}
    yaml_path = os.path.join(HERE, name + "_traj.yaml")
    with open(yaml_path, "w") as f:
        yaml.safe_dump(doc, f, default_flow_style=None, sort_keys=False)

    check(csv_path, yaml_path, doc, names)
    print("wrote %s, %s (%d joints, %d samples)" % (
        os.path.basename(csv_path), os.path.basename(yaml_path), len(names), n))


def check(csv_path, yaml_path, doc, names):
    """Both files must re-read as exactly the generated floats."""
    with open(yaml_path) as f:
        loaded = yaml.safe_load(f)
    assert list(loaded) == ["time", "q", "qd", "qdd"]
    assert loaded == doc
    with open(csv_path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    cols = {h: [float(r[k]) for r in body] for k, h in enumerate(header)}
    assert cols["time"] == doc["time"]
    for key in ("q", "qd", "qdd"):
        assert list(doc[key]) == names
        for j in names:
            a, b = cols[key + "_" + j], loaded[key][j]
            assert all(x.hex() == y.hex() for x, y in zip(a, b)) and len(a) == len(b)


if __name__ == "__main__":
    for robot in ROBOTS:
        make(robot)
