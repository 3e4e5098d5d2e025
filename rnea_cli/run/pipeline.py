"""From trajectory chunks to results: the library object every command runs.

Per chunk: mimic followers expanded from their leaders (once), external wrenches moved into body
frames, inverse dynamics, torques reflected back to the trajectory's coordinates, actuator terms,
and the effort the drive delivers (tau + friction + armature). Running peaks and RMS are kept
for the reports.
"""

from dataclasses import dataclass, field

import numpy as np

from . import actuators
from ..dynamics.engine import GRAVITY, inverse_dynamics
from ..dynamics.spatial import MAX_ANGLE, beyond_max_angle
from ..dynamics.workspace import Workspace
from ..errors import TrajectoryError
from ..dynamics.kinematics import link_wrenches_to_bodies
from ..model.tree import Coordinates
from .stats import Peaks

SPLIT = ("gravity", "inertia", "coriolis", "external")


@dataclass
class Block:
    """Results for one chunk; arrays (N, ...) in the coordinates' joints, wrenches [n; f]."""

    chunk: object
    motion: tuple  # (q, qd, qdd) of every joint of the model, followers expanded: (N, model.n) each
    tau: np.ndarray  # rigid-body torque
    effort: np.ndarray  # what the drive delivers: tau (+ friction) (+ armature)
    base_wrench: np.ndarray | None = None  # (N, 6)
    friction: np.ndarray | None = None
    armature: np.ndarray | None = None
    motor: np.ndarray | None = None  # at the motor shaft (drives only)
    power: np.ndarray | None = None  # effort x qd (drives only)
    current: np.ndarray | None = None  # motor / torque_constant (drives only; 0 where none is given)
    joint_wrenches: np.ndarray | None = None  # (N, n, 6), the model's movable joints (then any fixed ones)
    split: dict = field(default_factory=dict)  # SPLIT part -> tau of that part (with split=True)
    base_split: dict = field(default_factory=dict)  # the same for the base wrench


@dataclass(frozen=True)
class FixedJoints:
    """The model with its fixed joints kept (load_urdf(fixed_joints=True)), computed in place of
    the folded one: same torques, and a joint wrench across every fixed joint."""

    model: object
    index: list  # column of each of the folded model's joints
    order: list  # joints whose wrenches are reported: the folded model's, then the fixed ones
    names: list

    @classmethod
    def of(cls, model, kept):
        index = [kept.index(name) for name in model.joint_names]
        fixed = [i for i, j in enumerate(kept.joints) if j.type == "fixed"]
        return cls(kept, index, index + fixed, [kept.joints[i].name for i in index + fixed])


class Pipeline:
    """Inverse dynamics of a trajectory, block by block, with what the commands report.

    coords: the trajectory's columns (Coordinates; default: every movable joint). floating: the
    chunks carry base_pose, base_twist, base_dtwist. friction: the URDF's <dynamics>; drives:
    {joint: actuators.Drive}; wrenches: joint wrenches too; fixed: FixedJoints for the wrenches
    across fixed joints; split: tau split into SPLIT parts; threads: for the engine's chunks."""

    def __init__(self, model, coords=None, *, gravity=GRAVITY, floating=False, wrench_frame="world",
                 friction=False, drives=None, wrenches=False, fixed=None, split=False, threads=1):
        self.model, self.coords = model, coords if coords is not None else Coordinates(model)
        self.gravity, self.floating, self.wrench_frame = np.asarray(gravity, dtype=float), floating, wrench_frame
        self.friction, self.drives, self.wrenches, self.fixed = friction, drives or {}, wrenches, fixed
        self.split, self.threads = split, threads
        self.workspace = Workspace(fixed.model if fixed is not None else model, wrenches=wrenches)
        m = self.coords.n
        tau = Peaks(m)
        self.peaks = {"tau": tau, "effort": tau}  # without other terms the effort is tau: one Peaks
        if self.effort_terms:
            self.peaks |= {k: Peaks(m) for k in ("effort", "friction", "armature", "motor")}
        if floating:
            self.peaks["base"] = Peaks(2)  # |force|, |moment|

    @property
    def effort_terms(self):
        """What the effort includes besides the rigid-body torque: (), ('friction',) or ('friction', 'armature')."""
        return (("friction",) if self.friction or self.drives else ()) + (("armature",) if self.drives else ())

    def blocks(self, traj):
        """A Block per chunk of `traj` (a trajectory opened for self.coords), peaks updated."""
        for chunk in traj.chunks:
            block = self.compute(chunk, traj)
            self._update(block)
            yield block

    def motions(self, traj):
        """A Block per chunk of `traj` with its motion only (no dynamics: tau and effort None), for
        what computes its own (identification's regressor)."""
        for chunk in traj.chunks:
            yield Block(chunk, self._motion(chunk, traj), None, None)

    def _motion(self, chunk, traj):
        """(q, qd, qdd) of every model joint, followers expanded, its angles checked."""
        motion = self.coords.expand(chunk.q, chunk.qd, chunk.qdd)
        _check_angles(traj, chunk, self.model, motion[0])
        return motion

    def compute(self, chunk, traj):
        coords = self.coords
        motion = self._motion(chunk, traj)
        base = (chunk.data["base_pose"], chunk.data["base_twist"], chunk.data["base_dtwist"]) if self.floating else None
        applied = {link: (chunk.data["fext:" + link], chunk.data.get("fext_at:" + link)) for link in traj.wrenched}
        result, f_ext = self._dynamics(motion, base, applied, self.gravity, self.wrenches)
        tau, W = result.tau, result.joint_wrenches
        if self.fixed is not None:
            tau, W = tau[:, self.fixed.index], None if W is None else W[:, self.fixed.order]
        _check_finite(traj, chunk, {"torques": tau, "base wrench": result.base_wrench, "wrenches": W},
                      self._cause(chunk, motion))
        block = Block(chunk, motion, coords.reflect(tau), None, result.base_wrench, joint_wrenches=W)
        if self.split:
            self._split(block, base, f_ext, traj)
        with np.errstate(all="ignore"):  # an overflow is reported below, naming its cause
            block.effort = self._drive_terms(block, chunk, motion)
        for what, x, source in (("friction", block.friction, "its damping and friction (URDF <dynamics>, "
                                                            "--actuators viscous and coulomb)"),
                                ("armature", block.armature, "--actuators gear_ratio² rotor_inertia"),
                                ("motor torque", block.motor, "--actuators gear_ratio and efficiency"),
                                ("effort", block.effort, "the sum of its terms"),
                                ("power", block.power, "its effort"),
                                ("current", block.current, "--actuators torque_constant")):
            if x is not None and not np.isfinite(x).all():
                bad = ~np.isfinite(x)
                k, j = (int(a[0]) for a in np.nonzero(bad))
                raise TrajectoryError(traj.label, traj.where(chunk.start + k),
                                      f"{what} of joint {coords.joint_names[j]} overflows (not finite): {source} "
                                      "times this sample's motion is too large")
        return block

    def _drive_terms(self, block, chunk, motion):
        """Friction, armature and motor torque into the block; returns the effort."""
        coords = self.coords
        effort = block.tau
        if self.effort_terms:
            block.friction = actuators.friction(coords.joints, chunk.qd, self.drives, urdf=False)
            if self.friction:
                block.friction = block.friction + coords.reflect(actuators.friction(self.model.joints, motion[1]))
            effort = effort + block.friction
        if self.drives:
            block.armature = actuators.armature(coords.joints, chunk.qdd, self.drives)
            effort = effort + block.armature
            block.motor = actuators.motor(coords.joints, effort, chunk.qd, self.drives)
            block.power = effort * chunk.qd
            block.current = actuators.current(coords.joints, block.motor, self.drives)
        return effort

    def _cause(self, chunk, motion):
        """What makes a sample's torques overflow, for the message: the sample, or the robot's numbers."""
        model = self.workspace.model
        robot = max(float(np.abs(model.inertia).max(initial=0)), float(np.abs(model.root_inertia).max()))

        lengths = max((float(np.abs(j.parent_H_stator[:3, 3]).max()) for j in self.model.joints), default=0.0)
        gravity = float(np.abs(self.gravity).max())

        def cause(k):
            """Every factor beyond 1e30 (no robot, planet or motion comes near), else the sample."""
            size = max(float(np.abs(x[k]).max(initial=0)) for x in motion)
            factors = []
            if robot > 1e30 or lengths > 1e30:
                factors.append(f"the robot's masses and inertias (up to {robot:.3g}) and lengths (up to "
                               f"{lengths:.3g} m) in {model.source}")
            if gravity > 1e30:
                factors.append(f"--gravity (up to {gravity:.3g})")
            if size > 1e30 or not factors:
                factors.append(f"the values of this sample (up to {size:.3g})")
            alone = len(factors) == 1 and factors[0].startswith("--gravity")
            return " with ".join(factors) + (" is too large" if alone else " are too large")
        return cause

    def _wide(self, motion):
        """The motion of the model's joints as that of the fixed-joints model (0 at its fixed joints)."""
        if self.fixed is None:
            return motion
        wide = tuple(np.zeros((len(x), self.fixed.model.n)) for x in motion)
        for w, x in zip(wide, motion):
            w[:, self.fixed.index] = x
        return wide

    def _dynamics(self, motion, base, applied, gravity, wrenches):
        """(engine result, f_ext) for the model's motion; a fixed-joints model gets zeros for its fixed joints."""
        motion = self._wide(motion)
        engine_model = self.workspace.model
        with np.errstate(all="ignore"):  # overflow is reported by the caller, as an input error
            f_ext = link_wrenches_to_bodies(engine_model, applied, self.wrench_frame, motion[0], base and base[0])
            result = inverse_dynamics(engine_model, *motion, gravity=gravity, base=base, f_ext=f_ext,
                                      wrenches=wrenches, workspace=self.workspace, threads=self.threads)
        return result, f_ext

    def _split(self, block, base, f_ext, traj):
        """tau = g(q) + M(q) qdd + C(q, qd) qd + tau_ext, each an RNEA call on the same engine."""
        q, qd, qdd = block.motion
        zero = np.zeros_like(q)
        zero6 = None if base is None else np.zeros_like(base[1])
        no_gravity = np.zeros(3)
        parts = {
            "gravity": ((q, zero, zero), None if base is None else (base[0], zero6, zero6), self.gravity, {}),
            "inertia": ((q, zero, qdd), None if base is None else (base[0], zero6, base[2]), no_gravity, {}),
            "coriolis": ((q, qd, zero), None if base is None else (base[0], base[1], zero6), no_gravity, {}),
        }
        if traj.wrenched:
            parts["external"] = ((q, zero, zero), None if base is None else (base[0], zero6, zero6), no_gravity, f_ext)
        for name, (motion, base_k, gravity, fext) in parts.items():
            motion = self._wide(motion)
            with np.errstate(all="ignore"):
                result = inverse_dynamics(self.workspace.model, *motion, gravity=gravity, base=base_k, f_ext=fext,
                                          workspace=self.workspace, threads=self.threads)
            tau = result.tau if self.fixed is None else result.tau[:, self.fixed.index]
            _check_finite(traj, block.chunk, {f"{name} torques": tau})
            block.split[name] = self.coords.reflect(tau)
            if base is not None:
                block.base_split[name] = result.base_wrench

    def _update(self, block):
        chunk, peaks = block.chunk, self.peaks
        peaks["tau"].update(chunk.start, chunk.time, block.tau)
        if peaks["effort"] is not peaks["tau"]:
            peaks["effort"].update(chunk.start, chunk.time, block.effort)
        for key in ("friction", "armature", "motor"):
            if key in peaks and getattr(block, key) is not None:
                peaks[key].update(chunk.start, chunk.time, getattr(block, key))
        if "base" in peaks:
            W = block.base_wrench
            # hypot: the size of a force of 1e300 N is no overflow
            peaks["base"].update(chunk.start, chunk.time, np.column_stack([np.hypot.reduce(W[:, 3:], axis=1),
                                                                           np.hypot.reduce(W[:, :3], axis=1)]))


def _check_angles(traj, chunk, model, q):
    """An angle beyond spatial.MAX_ANGLE (21 million turns) is an error naming the sample: its cos
    and sin would not be (a time, an encoder count, in another unit?)."""
    far = beyond_max_angle(q, [i for i, j in enumerate(model.joints) if j.is_angular])
    if far is not None:
        k, i = far
        raise TrajectoryError(traj.label, traj.where(chunk.start + k),
                              f"q of {model.joints[i].name} is {float(q[k, i])!r} rad, more than "
                              f"{MAX_ANGLE:g} rad (21 million turns) from 0 (in another unit?)")


def _check_finite(traj, chunk, arrays, cause=None):
    """Every value that will reach an output is finite; else an error naming the sample and the cause."""
    for what, x in arrays.items():
        if x is None or np.isfinite(x).all():
            continue
        finite = np.isfinite(x.reshape(len(x), -1)).all(axis=1)
        k = int(np.argmin(finite))
        why = cause(k) if cause is not None else "the values of this sample are too large"
        raise TrajectoryError(traj.label, traj.where(chunk.start + k), f"{what} overflow (not finite): {why}")
