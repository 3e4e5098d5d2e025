#!/usr/bin/env python3
"""Regenerate robots/arm7_tool_measured.csv, the example of `rnea identify --links` (docs/identify.md).

arm7_traj.csv's motion with the joint efforts a torque sensor would read while arm7 holds a 2 kg
part in its tool: arm7_tool's true inertial (TRUE_TOOL below: the 0.5 kg tool and the part, 2.5
kg) in place of the URDF's 0.5 kg, the URDF's joint friction (damping q̇ + friction sign(q̇)),
and noise of sigma 0.02 N·m (seed 2027). `rnea identify robots/arm7.urdf
robots/arm7_tool_measured.csv --links arm7_tool` finds what the robot picked up. Needs rnea_cli
(its engine gives the torques; the tests check them against Pinocchio) and polars: run it in
the project's .venv.
"""
import os
import re

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TRUE_TOOL = ('<inertial><origin xyz="0.002 0.016 0.104" rpy="0 0 0"/><mass value="2.5"/>'
             '<inertia ixx="0.0062" ixy="0.0001" ixz="-0.0002" iyy="0.0065" iyz="0.0003" izz="0.0021"/></inertial>')
NOISE, SEED = 0.02, 2027


def true_urdf():
    """arm7.urdf with arm7_tool's <inertial> the truth's."""
    with open(os.path.join(HERE, "arm7.urdf")) as f:
        text = f.read()
    return re.sub(r'(<link name="arm7_tool">\s*)<inertial>.*?</inertial>', lambda m: m.group(1) + TRUE_TOOL, text,
                  count=1, flags=re.S)


def main():
    import polars as pl

    from rnea_cli import load_urdf, rnea

    model = load_urdf(true_urdf())
    arm = pl.read_csv(os.path.join(HERE, "arm7_traj.csv"))
    names = model.joint_names
    q, qd, qdd = (arm.select(f"{p}_{j}" for j in names).to_numpy() for p in ("q", "qd", "qdd"))
    damping = np.array([j.damping for j in model.joints])
    friction = np.array([j.friction for j in model.joints])
    effort = rnea(model, q, qd, qdd) + damping * qd + friction * np.sign(qd)
    effort += np.random.default_rng(SEED).normal(0, NOISE, effort.shape)
    columns = {c: arm[c].to_numpy() for c in arm.columns} | {f"effort_{j}": effort[:, i] for i, j in enumerate(names)}
    with open(os.path.join(HERE, "arm7_tool_measured.csv"), "w") as f:
        f.write(",".join(columns) + "\n")
        for k in range(len(effort)):
            f.write(",".join(repr(float(columns[c][k])) for c in columns) + "\n")


if __name__ == "__main__":
    main()
