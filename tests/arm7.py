"""The arm7 robot of robots/ with its trajectory as arrays, and its drivetrain's oracle from Pinocchio."""

import numpy as np
import polars as pl

from conftest import ROBOTS
from oracle import pin_model, pin_rnea
from rnea_cli import load_urdf

ARM = ROBOTS / "arm7.urdf"
ARM_CSV = ROBOTS / "arm7_traj.csv"
DRIVES = ROBOTS / "arm7_drives.yaml"
MODEL = load_urdf(ARM)
JOINTS = MODEL.joint_names
FRAME = pl.read_csv(ARM_CSV)
TIME = FRAME["time"].to_numpy()
Q, QD, QDD = (FRAME.select([f"{p}_{j}" for j in JOINTS]).to_numpy() for p in ("q", "qd", "qdd"))


def drive_oracle(drives, k, gravity=(0.0, 0.0, -9.81)):
    """The motion run k times as fast, from Pinocchio and the YAML numbers: the effort the joints
    need (rigid body + friction + rotor inertia), the motor torque (efficiency by direction), the
    motor speed, and the scaled time."""
    qd, qdd = k * QD, k * k * QDD
    d = [drives[j] for j in JOINTS]
    ratio, eta = np.array([x["gear_ratio"] for x in d]), np.array([x["efficiency"] for x in d])
    effort = pin_rnea(pin_model(ARM), JOINTS, Q, qd, qdd, gravity=gravity) + np.array([x["viscous"] for x in d]) * qd \
        + np.array([x["coulomb"] for x in d]) * np.sign(qd) + ratio ** 2 * np.array([x["rotor_inertia"] for x in d]) * qdd
    motor = np.where(effort * qd >= 0, effort / (ratio * eta), effort * eta / ratio)
    return effort, motor, ratio * qd, TIME / k
