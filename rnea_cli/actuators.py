"""Actuator terms, opt-in and kept apart from the rigid-body torque: joint friction (URDF
<dynamics damping friction>) and per-joint drives from a YAML file (gear ratio, rotor inertia,
friction).

    friction  = damping qd + friction sign(qd)      sign(0) = 0: no torque at rest (no stiction model)
    armature  = ratio^2 rotor_inertia qdd            the rotor's inertia seen at the joint
    motor     = (tau + friction + armature) / ratio  torque at the motor shaft
"""

import math
from dataclasses import dataclass

import numpy as np

from .errors import RneaError

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
    import yaml

    try:
        with open(path, "rb") as f:
            doc = yaml.safe_load(f)
    except OSError as exc:
        raise RneaError(path, None, f"cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        raise RneaError(path, where, f"invalid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(doc, dict):
        raise RneaError(path, None, "expected a mapping from joint name to its drive")
    drives = {}
    for joint, entry in doc.items():
        if joint not in coords.joint_names:
            raise RneaError(path, joint, f"no joint '{joint}' among the trajectory's joints")
        if not isinstance(entry, dict):
            raise RneaError(path, joint, f"expected a mapping with {', '.join(KEYS)}")
        for key, value in entry.items():
            if key not in KEYS:
                raise RneaError(path, f"{joint}.{key}", f"unknown key (expected one of {', '.join(KEYS)})")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise RneaError(path, f"{joint}.{key}", f"not a finite number: {value!r}")
            if value < 0 or (key == "gear_ratio" and value == 0):
                raise RneaError(path, f"{joint}.{key}", f"must be {'positive' if key == 'gear_ratio' else 'at least 0'}")
        drives[joint] = Drive(**{k: float(v) for k, v in entry.items()})
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
