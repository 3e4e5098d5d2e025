"""Actuator terms, opt-in and kept apart from the rigid-body torque: joint friction (URDF
<dynamics damping friction>) and per-joint drives from a YAML file.

    friction  = damping qd + friction sign(qd)      sign(0) = 0: no torque at rest (no stiction model)
    armature  = ratio^2 rotor_inertia qdd            the rotor's inertia seen at the joint
    effort    = tau + friction + armature            what the drive delivers at the joint
    motor     = effort / (ratio eta)  when the motor drives the load (effort qd >= 0: at rest too),
                effort eta / ratio    when the load drives the motor back (effort qd < 0)
    speed     = ratio qd                             at the motor, rad/s
    current   = motor / torque_constant              A
"""

from dataclasses import dataclass

import numpy as np

from . import options
from ..errors import RneaError
from ..model.jointfile import read_joint_file

KEYS = ("gear_ratio", "rotor_inertia", "viscous", "coulomb", "efficiency", "torque_constant", "peak_torque",
        "continuous_torque", "thermal_window", "max_speed", "envelope")
POSITIVE = ("gear_ratio", "torque_constant", "peak_torque", "continuous_torque", "thermal_window", "max_speed")
HUGE = 1e150  # a drive value whose products with a motion's values could overflow


@dataclass(frozen=True)
class Drive:
    gear_ratio: float = 1.0
    rotor_inertia: float = 0.0  # kg m^2 (or kg for a linear motor), at the motor
    viscous: float = 0.0  # joint side, N m s/rad (N s/m)
    coulomb: float = 0.0  # joint side, N m (N)
    efficiency: float = 1.0  # of the gearbox, 0 < eta <= 1
    torque_constant: float | None = None  # N m / A
    peak_torque: float | None = None  # at the motor, N m
    continuous_torque: float | None = None  # RMS at the motor, N m: over the run, or over thermal_window
    thermal_window: float | None = None  # s
    max_speed: float | None = None  # at the motor, rad/s
    envelope: tuple | None = None  # ((speed, peak torque), ...) at the motor, speeds increasing
    source: str | None = None  # the file it comes from, for messages

    @property
    def armature(self):
        """Reflected inertia ratio^2 J_m (Pinocchio's model.armature)."""
        return self.gear_ratio**2 * self.rotor_inertia

    def envelope_points(self):
        """(M, 2) [speed, torque] of the envelope from speed 0, the one definition of it that check,
        scale, payload and the pictures use: linear between its points, its first torque below its
        first speed, nothing beyond its last speed."""
        points = np.array(self.envelope, dtype=float)
        return points if points[0, 0] == 0 else np.vstack([[0.0, points[0, 1]], points])

    def available(self, speed):
        """The peak torque the envelope allows at motor speeds |speed| (0 beyond its last speed)."""
        points = self.envelope_points()
        return np.interp(np.abs(speed), points[:, 0], points[:, 1], right=0.0)

    def effort_range(self, motor_limit, qd):
        """(lo, hi): the joint efforts e at joint velocities qd whose motor torque (see motor())
        is within ±motor_limit: |e| <= L r eta where the motor drives (e qd >= 0), |e| <= L r / eta
        where the load drives it back."""
        r, eta = self.gear_ratio, self.efficiency
        hi = np.where(qd >= 0, motor_limit * r * eta, motor_limit * r / eta)
        lo = -np.where(qd <= 0, motor_limit * r * eta, motor_limit * r / eta)
        return lo, hi


def load_drives(path, coords):
    """{joint: Drive} from YAML `joint: {gear_ratio: .., rotor_inertia: .., ...}`, every value checked."""
    followers = set(getattr(coords, "followers", ()))

    def why_not(name):
        if name in followers:
            return "it is a mimic follower, moved by its leader's drive (--no-mimic to give it a drive of its own)"
        return None

    entries = read_joint_file(options.path(path, "actuators"), coords.joint_names, KEYS, why_not=why_not,
                              lists=("envelope",))
    return {joint: _drive(path, joint, entry) for joint, entry in entries.items()}


def checked_drives(drives, coords, source="actuators"):
    """{joint: Drive} given to the library, checked as a YAML file's are (joints of the trajectory,
    every value in its range)."""
    from ..errors import shown

    if not isinstance(drives, dict):
        raise RneaError(source, None, f"expected {{joint: rnea_cli.run.actuators.Drive}} or a YAML path, got "
                                      f"{type(drives).__name__}")
    out = {}
    for joint, drive in drives.items():
        if joint not in coords.joint_names:
            raise RneaError(source, None, f"no joint {shown(joint)} among the trajectory's joints")
        if not isinstance(drive, Drive):
            raise RneaError(source, joint, f"expected a rnea_cli.run.actuators.Drive, got {type(drive).__name__}")
        entry = {key: getattr(drive, key) for key in KEYS if getattr(drive, key) is not None}
        if "envelope" in entry:
            entry["envelope"] = [list(pair) if isinstance(pair, (tuple, list)) else pair for pair in entry["envelope"]]
        for key, value in entry.items():
            if key != "envelope" and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise RneaError(source, f"{joint}.{key}", f"expected a number, got {shown(value)}")
        out[joint] = _drive(drive.source or source, joint, entry)
    return out


def _drive(path, joint, entry):
    """The Drive of one joint's entry {key: number, envelope: [[speed, torque], ...]}, every value checked."""
    entry = dict(entry)
    for key, value in entry.items():
        where = f"{joint}.{key}"
        if key == "envelope":
            entry[key] = _envelope(path, where, value)
        elif key in POSITIVE and not value > 0:
            raise RneaError(path, where, f"must be above 0, got {value!r}")
        elif key == "efficiency" and not 0 < value <= 1:
            raise RneaError(path, where, f"must be in (0, 1], got {value!r}")
        elif not value >= 0:
            raise RneaError(path, where, f"must be at least 0, got {value!r}")
        elif abs(value) > HUGE:
            raise RneaError(path, where, f"{value!r} is too large: the torques it takes part in would overflow")
    drive = Drive(**{k: float(v) if k != "envelope" else v for k, v in entry.items()}, source=str(path))
    for what, value in (("1 / (gear_ratio efficiency)", 1.0 / (drive.gear_ratio * drive.efficiency)),
                        ("1 / torque_constant", 1.0 / (drive.torque_constant or 1.0)),
                        ("gear_ratio^2 rotor_inertia", drive.armature), ("gear_ratio", drive.gear_ratio)):
        if not abs(value) <= HUGE:
            raise RneaError(path, joint, f"{what} is {value:.3g}: the torques it takes part in would overflow")
    if drive.thermal_window is not None and drive.continuous_torque is None:
        raise RneaError(path, f"{joint}.thermal_window", "is the window of continuous_torque, which is not given")
    return drive


def _envelope(path, where, value):
    if not isinstance(value, list) or len(value) < 2:
        raise RneaError(path, where, "expected a list of at least two [speed, torque] pairs")
    points = []
    for k, pair in enumerate(value):
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, (int, float)) and
                                                                  not isinstance(x, bool) for x in pair)):
            raise RneaError(path, f"{where}[{k}]", "expected [speed, torque], two numbers")
        speed, torque = (float(x) for x in pair)
        if not (0 <= speed <= HUGE and 0 <= torque <= HUGE):
            raise RneaError(path, f"{where}[{k}]", "speed and torque must be finite and at least 0")
        if points and speed <= points[-1][0]:
            raise RneaError(path, f"{where}[{k}]", "speeds must increase (the envelope is sorted by speed)")
        points.append((speed, torque))
    return tuple(points)


def friction(joints, qd, drives=None, urdf=True):
    """(N, n): URDF damping/friction (if urdf) plus the drives' viscous/coulomb, for these joints."""
    drives = drives or {}
    d = np.array([(j.damping if urdf else 0.0) + drives.get(j.name, Drive()).viscous for j in joints])
    c = np.array([(j.friction if urdf else 0.0) + drives.get(j.name, Drive()).coulomb for j in joints])
    return d * qd + c * np.sign(qd)


def armature(joints, qdd, drives):
    return np.array([drives.get(j.name, Drive()).armature for j in joints]) * qdd


def motor(joints, effort, qd, drives):
    """Torque at the motor shaft: effort / (ratio eta) driving, effort eta / ratio driven back."""
    ratio = np.array([drives.get(j.name, Drive()).gear_ratio for j in joints])
    eta = np.array([drives.get(j.name, Drive()).efficiency for j in joints])
    driving = effort * qd >= 0
    return np.where(driving, effort / (ratio * eta), effort * eta / ratio)


def motor_speed(joints, qd, drives):
    return qd * np.array([drives.get(j.name, Drive()).gear_ratio for j in joints])


def current(joints, motor_torque, drives):
    """(N, n) motor current, NaN-free: joints without a torque_constant get 0 (their column is not written)."""
    kt = np.array([drives.get(j.name, Drive()).torque_constant or 1.0 for j in joints])
    return motor_torque / kt
