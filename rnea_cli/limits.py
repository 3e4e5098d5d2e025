"""Joint limits (URDF, overridden by a YAML file) and a streaming check of a trajectory against them.

Quantities: `effort` (|tau| <= margin * effort), `velocity` (|qd| <= margin * velocity), `position`
(lower <= q <= upper; revolute and prismatic joints) and `rms_effort` (RMS of tau over the whole
trajectory <= margin * rms_effort, only when a limits file gives it). tau is the rigid-body torque,
with friction and armature added when asked for.
"""

from dataclasses import dataclass

import numpy as np

from .errors import RneaError
from .jointfile import read_joint_file
from .stats import Peaks

QUANTITIES = ("effort", "velocity", "position", "rms_effort")
EXPECTED = ("effort", "velocity", "position")  # reported as unchecked when a joint has no such limit
KEYS = ("effort", "velocity", "lower", "upper", "rms_effort")


@dataclass
class JointLimits:
    effort: float | None = None
    velocity: float | None = None
    lower: float | None = None
    upper: float | None = None
    rms_effort: float | None = None


def joint_limits(model, overrides=None, source=None):
    """Per joint of the model, the limits to check, and warnings. URDF limits of 0, and a URDF
    range with lower >= upper, count as absent; an override that leaves lower >= upper is an error
    naming `source`."""
    limits, notes = [], []
    for joint in model.joints:
        u = joint.limits
        lim = JointLimits(u.effort, u.velocity, u.lower, u.upper)
        for key in ("effort", "velocity"):
            if getattr(lim, key) == 0:
                setattr(lim, key, None)
                notes.append(f"{joint.name}: URDF {key} limit is 0, treated as absent")
        if joint.type == "continuous":
            lim.lower = lim.upper = None
        elif lim.lower is not None and lim.upper is not None and lim.lower >= lim.upper:
            notes.append(f"{joint.name}: URDF position limits [{lim.lower:g}, {lim.upper:g}] leave no range, "
                         "treated as absent")
            lim.lower = lim.upper = None
        for key, value in (overrides or {}).get(joint.name, {}).items():
            setattr(lim, key, value)
        if lim.lower is not None and lim.upper is not None and lim.lower >= lim.upper:
            raise RneaError(source, joint.name, f"lower {lim.lower:g} is not below upper {lim.upper:g} "
                                                "(with the URDF's limits)")
        limits.append(lim)
    return limits, notes


def load_limits_file(path, model):
    """{joint: {key: value or None}} from YAML: `joint: {effort: .., velocity: .., lower: .., upper: ..,
    rms_effort: ..}`; null removes a limit."""
    out = read_joint_file(path, model.joint_names, KEYS, nullable=True)
    for joint, entry in out.items():
        for key, value in entry.items():
            if value is not None and key in ("effort", "velocity", "rms_effort") and value <= 0:
                raise RneaError(path, f"{joint}.{key}", f"must be positive, got {value!r}")
        lower, upper = entry.get("lower"), entry.get("upper")
        if lower is not None and upper is not None and lower >= upper:
            raise RneaError(path, joint, f"lower {lower!r} is not below upper {upper!r}")
    return out


@dataclass
class Check:
    """One joint and quantity: its limit, worst value over the trajectory, and the violations."""

    joint: str
    quantity: str
    limit: object  # float, or (lower, upper) for position
    margin: float = 1.0
    worst: float = 0.0  # the value with the highest utilisation
    utilisation: float = -1.0  # |x|/limit; for position |q - middle| / half range (1 = at a bound)
    worst_sample: int = 0
    worst_time: float | None = None
    count: int = 0  # samples over the limit
    first_sample: int | None = None
    first_time: float | None = None
    terms: tuple = ()  # effort and rms_effort: what the torque includes besides the rigid body's

    @property
    def ok(self):
        return self.count == 0

    @property
    def allowed(self):
        """What the worst value is measured against: margin * limit, or for position the nearer bound."""
        if self.quantity != "position":
            return self.margin * self.limit
        lower, upper = self.limit
        return upper if self.worst >= 0.5 * (lower + upper) else lower

    def describe(self, time_known=True):
        """'arm7_joint2 effort -51.37 exceeds 48 (margin 0.15 x 320) in 56 samples, first at t=0.1 s'."""
        text = f"{self.joint} {self.quantity}" + (f" (tau + {' + '.join(self.terms)})" if self.terms else "")
        text += f" {self.worst:.6g}"
        if self.quantity == "position":
            text += f" outside [{self.limit[0]:g}, {self.limit[1]:g}]"
        else:
            text += f" exceeds {self.allowed:.6g}" + (f" (margin {self.margin:g} x {self.limit:g})"
                                                      if self.margin != 1 else "")
        if self.quantity == "rms_effort":
            return text + " (RMS over the whole trajectory)"
        text += f" in {self.count} sample{'s' if self.count != 1 else ''}"
        if self.first_sample is not None:
            text += (f", first at t={self.first_time:.6g} s" if time_known and self.first_time is not None
                     else f", first at sample {self.first_sample}")
        return text


class LimitCheck:
    """Streams pipeline Blocks through the checks; `checks` and `unchecked` hold the outcome.
    tau is the torque each joint's drive delivers: the rigid-body torque, plus `effort_terms`.

    Velocity and position are checked on every joint of the model (mimic followers too, from
    their leaders' motion); effort and rms_effort on the trajectory's columns (`coords`), since a
    follower's torque is reflected to, and delivered by, its leader."""

    def __init__(self, model, coords, limits, margin=1.0, effort_terms=(), drives=None):
        """effort_terms: what the torques passed to `update` include besides the rigid-body
        torque ('friction', 'armature'), for the reports."""
        self.coords, self.margin, self.effort_terms = coords, margin, tuple(effort_terms)
        self.checks, self.unchecked = [], []
        self.plan = []  # (check, index into the model's joints or the columns, quantity)
        columns = {name: k for k, name in enumerate(coords.joint_names)}
        for i, (joint, lim) in enumerate(zip(model.joints, limits)):
            for quantity in QUANTITIES:
                on_torque = quantity in ("effort", "rms_effort")
                if on_torque and joint.name not in columns:
                    continue
                if quantity == "position":
                    limit = None if lim.lower is None or lim.upper is None else (lim.lower, lim.upper)
                else:
                    limit = getattr(lim, quantity)
                if limit is None:
                    if quantity in EXPECTED and not (quantity == "position" and joint.type == "continuous"):
                        self.unchecked.append((joint.name, quantity))
                    continue
                check = Check(joint.name, quantity, limit, margin if quantity != "position" else 1.0,
                              terms=self.effort_terms if on_torque else ())
                self.checks.append(check)
                self.plan.append((check, columns[joint.name] if on_torque else i, quantity))
        self._tau = Peaks(coords.n)  # for the RMS over the whole trajectory

    def update(self, block):
        """Check a pipeline Block: its effort, and the motion of every joint (followers expanded)."""
        chunk, tau = block.chunk, block.effort
        self._tau.update(chunk.start, chunk.time, tau)
        q, qd, _ = block.motion
        for check, i, quantity in self.plan:
            if quantity == "rms_effort":
                continue
            if quantity == "position":
                lower, upper = check.limit
                x = q[:, i]
                middle, half = 0.5 * (lower + upper), 0.5 * (upper - lower)
                over = ~((x >= lower) & (x <= upper))  # NaN counts as over
                use = np.abs(x - middle) / half
            else:
                x = tau[:, i] if quantity == "effort" else qd[:, i]
                size = np.abs(x)
                over = ~(size <= check.allowed)  # NaN counts as over
                use = size / check.allowed
            self._record(check, chunk, x, over, use)

    def _record(self, check, chunk, x, over, use):
        k = int(use.argmax())
        if use[k] > check.utilisation:
            check.utilisation, check.worst = float(use[k]), float(x[k])
            check.worst_sample = chunk.start + k
            check.worst_time = None if chunk.time is None else float(chunk.time[k])
        n_over = int(over.sum())
        if n_over:
            if check.first_sample is None:
                first = int(over.argmax())
                check.first_sample = chunk.start + first
                check.first_time = None if chunk.time is None else float(chunk.time[first])
            check.count += n_over

    def finish(self):
        """Complete the whole-trajectory checks (RMS) once every chunk has been seen."""
        rms = self._tau.rms
        index = {name: i for i, name in enumerate(self.coords.joint_names)}
        for check in self.checks:
            if check.quantity == "rms_effort":
                value = float(rms[index[check.joint]])
                check.worst = value
                check.utilisation = value / check.allowed
                check.count = int(check.utilisation > 1)
        return self

    @property
    def violations(self):
        return [c for c in self.checks if not c.ok]

    @property
    def samples(self):
        return self._tau.count
