"""Actuator terms, opt-in and kept apart from the rigid-body torque: joint friction (URDF
<dynamics damping friction>) and per-joint drives from a YAML file (gear ratio, rotor inertia,
friction).

    friction  = damping qd + friction sign(qd)      sign(0) = 0: no torque at rest (no stiction model)
    armature  = ratio^2 rotor_inertia qdd            the rotor's inertia seen at the joint
    motor     = (tau + friction + armature) / ratio  torque at the motor shaft
"""

from dataclasses import dataclass

import numpy as np

from .errors import RneaError
from .jointfile import read_joint_file

KEYS = ("gear_ratio", "rotor_inertia", "viscous", "coulomb")


@dataclass(frozen=True)
class Drive:
    gear_ratio: float = 1.0
    rotor_inertia: float = 0.0  # kg m^2 (or kg for a linear motor), at the motor
    viscous: float = 0.0  # joint side, N m s/rad (N s/m)
    coulomb: float = 0.0  # joint side, N m (N)

    @property
    def armature(self):
        """Reflected inertia ratio^2 J_m (Pinocchio's model.armature)."""
        return self.gear_ratio**2 * self.rotor_inertia


def load_drives(path, coords):
    """{joint: Drive} from YAML `joint: {gear_ratio: .., rotor_inertia: .., viscous: .., coulomb: ..}`."""
    drives = {}
    followers = set(getattr(coords, "followers", ()))

    def why_not(name):
        if name in followers:
            return "it is a mimic follower, moved by its leader's drive (--no-mimic to give it a drive of its own)"
        return None

    for joint, entry in read_joint_file(path, coords.joint_names, KEYS, why_not=why_not).items():
        for key, value in entry.items():
            if value < 0 or (key == "gear_ratio" and value == 0):
                raise RneaError(path, f"{joint}.{key}",
                                f"must be {'positive' if key == 'gear_ratio' else 'at least 0'}")
        drives[joint] = Drive(**entry)
    return drives


def friction(joints, qd, drives=None, urdf=True):
    """(N, n): URDF damping/friction (if urdf) plus the drives' viscous/coulomb, for these joints."""
    drives = drives or {}
    d = np.array([(j.damping if urdf else 0.0) + drives.get(j.name, Drive()).viscous for j in joints])
    c = np.array([(j.friction if urdf else 0.0) + drives.get(j.name, Drive()).coulomb for j in joints])
    return d * qd + c * np.sign(qd)


def armature(joints, qdd, drives):
    return np.array([drives.get(j.name, Drive()).armature for j in joints]) * qdd


def motor(joints, tau_total, drives):
    return tau_total / np.array([drives.get(j.name, Drive()).gear_ratio for j in joints])
