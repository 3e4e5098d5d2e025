"""From trajectory chunks to everything the commands print: torques in the trajectory's
coordinates (mimic followers reflected), the floating base's wrench, actuator terms, joint wrenches."""

from dataclasses import dataclass, field

import numpy as np

from . import actuators
from .errors import TrajectoryError
from .kinematics import link_wrenches_to_bodies
from .rnea import GRAVITY, inverse_dynamics


class Peaks:
    """Per column: largest |x|, the sample and time where it first occurs, and the RMS."""

    def __init__(self, n):
        self.peak = np.zeros(n)
        self.sample = np.zeros(n, dtype=int)
        self.time = np.full(n, np.nan)
        self.sumsq = np.zeros(n)
        self.count = 0
        self.t_first = self.t_last = None

    def update(self, start, time, x):
        """x: (N, n) values of samples start .. start+N-1; time: (N,) or None."""
        if len(x) == 0:
            return
        a = np.abs(x)
        k = a.argmax(axis=0)
        value = a[k, np.arange(a.shape[1])]
        better = value > self.peak
        self.peak[better] = value[better]
        self.sample[better] = start + k[better]
        if time is not None:
            self.time[better] = time[k[better]]
            self.t_first = time[0] if self.t_first is None else self.t_first
            self.t_last = time[-1]
        self.sumsq += np.einsum("ij,ij->j", x, x)
        self.count += len(x)

    @property
    def rms(self):
        return np.sqrt(self.sumsq / max(self.count, 1))


@dataclass
class Options:
    gravity: tuple = GRAVITY
    floating: bool = False
    wrench_frame: str = "world"
    friction: bool = False  # URDF <dynamics damping friction>
    drives: dict = field(default_factory=dict)  # joint -> actuators.Drive
    wrenches: bool = False  # joint reaction wrenches
    fixed: "FixedJoints | None" = None  # wrenches across fixed joints too (see with_fixed_joints)


@dataclass(frozen=True)
class FixedJoints:
    """The model with its fixed joints kept as joints (load_urdf(fixed_joints=True)), computed in
    place of the folded one: same torques, and a joint wrench across every fixed joint."""

    model: object
    index: list  # column of each of the folded model's joints
    order: list  # joints whose wrenches are reported: the folded model's, then the fixed ones
    names: list  # their names


def with_fixed_joints(model, kept):
    index = [kept.index(name) for name in model.joint_names]
    fixed = [i for i, j in enumerate(kept.joints) if j.type == "fixed"]
    return FixedJoints(kept, index, index + fixed, [kept.joints[i].name for i in index + fixed])


@dataclass
class Block:
    """Results for one chunk; arrays (N, ...) with wrenches as [n; f]."""

    chunk: object
    tau: np.ndarray  # (N, m) rigid-body torque in the coordinates' joints
    base_wrench: np.ndarray | None = None  # (N, 6)
    friction: np.ndarray | None = None  # (N, m)
    armature: np.ndarray | None = None
    motor: np.ndarray | None = None
    joint_wrenches: np.ndarray | None = None  # (N, n, 6), the model's movable joints (then any fixed ones)


def blocks(model, coords, chunks, options, traj):
    """Yield a Block per chunk of `traj`, a trajectory opened for `coords` (with options.floating)."""
    fixed = options.fixed
    for chunk in chunks:
        q, qd, qdd = coords.expand(chunk.q, chunk.qd, chunk.qdd)
        motion = (q, qd, qdd)
        if fixed is not None:  # the model with its fixed joints: they stay at 0
            motion = tuple(np.zeros((len(x), fixed.model.n)) for x in motion)
            for wide, x in zip(motion, (q, qd, qdd)):
                wide[:, fixed.index] = x
        base = None
        if options.floating:
            base = (chunk.data["base_pose"], chunk.data["base_twist"], chunk.data["base_dtwist"])
        applied = {link: (chunk.data["fext:" + link], chunk.data.get("fext_at:" + link)) for link in traj.wrenched}
        # a wrench on a fixed root (body -1) is held by the world: the engine leaves it out
        engine_model = model if fixed is None else fixed.model
        with np.errstate(all="ignore"):  # overflow is reported below, as an input error
            f_ext = link_wrenches_to_bodies(engine_model, applied, options.wrench_frame, motion[0], base and base[0])
            result = inverse_dynamics(engine_model, *motion, gravity=options.gravity, base=base, f_ext=f_ext,
                                      wrenches=options.wrenches)
        tau, W = result.tau, result.joint_wrenches
        if fixed is not None:
            tau, W = tau[:, fixed.index], None if W is None else W[:, fixed.order]
        finite = np.isfinite(tau).all(axis=1)
        for x in (result.base_wrench, W):  # what else is written: a fixed joint's wrench may overflow alone
            if x is not None:
                finite &= np.isfinite(x.reshape(len(x), -1)).all(axis=1)
        if not finite.all():
            k = int(np.argmin(finite))
            what = "torques" if not np.isfinite(tau[k]).all() else "wrenches"
            raise TrajectoryError(traj.label, traj.where(chunk.start + k),
                                  f"{what} overflow (not finite): the values of this sample are too large")
        block = Block(chunk, coords.reflect(tau), result.base_wrench, joint_wrenches=W)
        if options.friction or options.drives:
            block.friction = (coords.reflect(actuators.friction(model.joints, qd)) if options.friction else 0.0) + \
                actuators.friction(coords.joints, chunk.qd, options.drives, urdf=False)
        if options.drives:
            block.armature = actuators.armature(coords.joints, chunk.qdd, options.drives)
            block.motor = actuators.motor(coords.joints, block.tau + block.friction + block.armature, options.drives)
        yield block


FORCE_MOMENT = ("fx", "fy", "fz", "tx", "ty", "tz")  # wrench columns: force first, as users read them


def force_first(W):
    """[f; n] from the library's [n; f] along the last axis."""
    return np.concatenate([W[..., 3:], W[..., :3]], axis=-1)


def torque_columns(coords, has_time, options):
    """(CSV names, JSON/YAML keys, function Block -> (N, len(names)) array) of `rnea torques`."""
    names, keys, parts = [], [], []
    if has_time:
        names.append("time")
        keys.append(("time",))
        parts.append(lambda b: b.chunk.time[:, None])
    if options.floating:
        names += [f"base_{c}" for c in FORCE_MOMENT]
        keys += [("base", c) for c in FORCE_MOMENT]
        parts.append(lambda b: force_first(b.base_wrench))
    groups = [("tau", lambda b: b.tau)]
    if options.friction or options.drives:
        groups.append(("tau_friction", lambda b: b.friction))
    if options.drives:
        groups += [("tau_armature", lambda b: b.armature), ("tau_motor", lambda b: b.motor)]
    for prefix, get in groups:
        names += [f"{prefix}_{j}" for j in coords.joint_names]
        keys += [(prefix, j) for j in coords.joint_names]
        parts.append(get)
    return names, keys, lambda b: _columns([p(b) for p in parts])


def _columns(parts):
    """np.concatenate(parts, axis=1), column-major: the CSV writer takes the table column by column."""
    out = np.empty((len(parts[0]), sum(p.shape[1] for p in parts)), order="F")
    k = 0
    for p in parts:
        out[:, k:k + p.shape[1]] = p
        k += p.shape[1]
    return out


def wrench_columns(joint_names, has_time):
    """Columns of `rnea wrenches`: <joint>_fx .. <joint>_tz in each joint's frame."""
    names, keys = (["time"], [("time",)]) if has_time else ([], [])
    names += [f"{j}_{c}" for j in joint_names for c in FORCE_MOMENT]
    keys += [(j, c) for j in joint_names for c in FORCE_MOMENT]

    def values(b):
        W = force_first(b.joint_wrenches).reshape(len(b.joint_wrenches), -1)
        return _columns([b.chunk.time[:, None], W] if has_time else [W])

    return names, keys, values
