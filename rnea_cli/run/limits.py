"""Joint limits (URDF, overridden by a YAML file) and a streaming check of a trajectory against them.

Quantities: `effort` (|tau| <= margin * effort), `velocity` (|qd| <= margin * velocity), `position`
(lower <= q <= upper; revolute and prismatic joints), `rms_effort` (RMS of tau over the whole
trajectory <= margin * rms_effort) and `acceleration` (|qdd| <= margin * acceleration), the last
two only when a limits file gives them (URDF has neither). tau is the rigid-body torque,
with friction and armature added when asked for. With drives (--actuators): `motor_torque`
(|motor torque| <= margin * peak_torque), `motor_rms` (its RMS over the run, or over every
thermal_window, <= margin * continuous_torque), `motor_speed` (|ratio qd| <= margin * max_speed)
and `envelope` (|motor torque| <= margin * the envelope's torque at that speed).
"""

from dataclasses import dataclass, field

import numpy as np

from . import options
from ..errors import RneaError
from ..model.jointfile import read_joint_file
from ..text import time_text
from .stats import Peaks, ThermalWindow

QUANTITIES = ("effort", "velocity", "position", "rms_effort", "acceleration")
MOTOR = {"motor_torque": "peak_torque", "motor_rms": "continuous_torque", "motor_speed": "max_speed",
         "envelope": "envelope"}  # quantity: the drive's key
EXPECTED = ("effort", "velocity", "position")  # reported as unchecked when a joint has no such limit
KEYS = ("effort", "velocity", "lower", "upper", "rms_effort", "acceleration")


@dataclass
class JointLimits:
    effort: float | None = None
    velocity: float | None = None
    lower: float | None = None
    upper: float | None = None
    rms_effort: float | None = None
    acceleration: float | None = None
    origin: dict = field(default_factory=dict)  # key -> the file that gave it (the URDF, --limits)


def joint_limits(model, overrides=None, source=None):
    """Per joint of the model, the limits to check, and warnings. URDF limits of 0, and a URDF
    range with lower >= upper, count as absent; an override that leaves lower >= upper is an error
    naming `source`."""
    limits, notes = [], []
    for joint in model.joints:
        u = joint.limits
        lim = JointLimits(u.effort, u.velocity, u.lower, u.upper, origin=dict.fromkeys(KEYS, model.source))
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
            lim.origin[key] = source
        if lim.lower is not None and lim.upper is not None and lim.lower >= lim.upper:
            raise RneaError(source, joint.name, f"lower {lim.lower:g} is not below upper {lim.upper:g} "
                                                "(with the URDF's limits)")
        if (lim.lower is None) != (lim.upper is None):  # (only an override leaves one: a URDF gives both)
            given, null = ("upper", "lower") if lim.lower is None else ("lower", "upper")
            raise RneaError(source or model.source, joint.name, f"{given} is {getattr(lim, given):g} but {null} is "
                                                                "null: a position limit has both bounds (null both "
                                                                "to check no position)")
        limits.append(lim)
    return limits, notes


def load_limits_file(path, model):
    """{joint: {key: value or None}} from YAML: `joint: {effort: .., velocity: .., lower: .., upper: ..,
    rms_effort: ..}`; null removes a limit."""
    out = read_joint_file(options.path(path, "limits"), model.joint_names, KEYS, nullable=True)
    for joint, entry in out.items():
        for key, value in entry.items():
            if value is not None and key in ("effort", "velocity", "rms_effort", "acceleration") and value <= 0:
                raise RneaError(path, f"{joint}.{key}", f"must be positive, got {value!r}")
        lower, upper = entry.get("lower"), entry.get("upper")
        if lower is not None and upper is not None and lower >= upper:
            raise RneaError(path, joint, f"lower {lower!r} is not below upper {upper!r}")
    return out


def limit_check(model, coords, pipeline, limits_file=None, margin=1.0):
    """(LimitCheck of a pipeline's efforts against the URDF's limits and those of limits_file, the
    notes on the URDF's limits): what `rnea check` and frames.check_frame both check."""
    overrides = load_limits_file(limits_file, model) if limits_file is not None else None
    limits, notes = joint_limits(model, overrides, limits_file)
    check = LimitCheck(model, coords, limits, margin, effort_terms=pipeline.effort_terms, drives=pipeline.drives)
    return check, notes


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
    first_value: float | None = None  # the value at the first violation
    first_at: float | None = None  # its time, or its sample index without time (for plots)
    allowed_at_worst: float | None = None  # envelope: the torque the envelope allows at the worst sample
    window: float | None = None  # motor_rms: the thermal window (s), None for the whole run
    origin: str | None = None  # the file of the limit, for messages

    @property
    def ok(self):
        return self.count == 0

    @property
    def allowed(self):
        """What the worst value is measured against: margin * limit, or for position the nearer bound."""
        if self.quantity == "envelope":
            return self.allowed_at_worst
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
        elif self.quantity == "envelope":
            text += f" exceeds the {self.allowed:.6g} of the torque-speed envelope" + (
                f" (margin {self.margin:g})" if self.margin != 1 else "")
        else:
            text += f" exceeds {self.allowed:.6g}" + (f" (margin {self.margin:g} x {self.limit:g})"
                                                      if self.margin != 1 else "")
        if self.quantity in ("rms_effort", "motor_rms"):
            return text + (f" (RMS over {self.window:g} s)" if self.window else " (RMS over the whole trajectory)")
        text += f" in {self.count} sample{'s' if self.count != 1 else ''}"
        if self.first_sample is not None:
            text += (f", first at t={time_text(self.first_time)} s" if time_known and self.first_time is not None
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
        margin = options.positive(margin, "margin")
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
                              terms=self.effort_terms if on_torque else (),
                              origin=lim.origin.get("lower" if quantity == "position" else quantity))
                _finite_allowed(check)
                self.checks.append(check)
                self.plan.append((check, columns[joint.name] if on_torque else i, quantity))
        for k, joint in enumerate(coords.joints):
            drive = (drives or {}).get(joint.name)
            for quantity, key in MOTOR.items() if drive is not None else ():
                limit = getattr(drive, key)
                if limit is None:
                    continue
                check = Check(joint.name, quantity, limit, margin,
                              window=drive.thermal_window if quantity == "motor_rms" else None, origin=drive.source)
                _finite_allowed(check)
                self.checks.append(check)
                self.plan.append((check, k, quantity))
        self.drives = drives or {}
        self._tau = Peaks(coords.n)  # for the RMS over the whole trajectory
        self._motor = Peaks(coords.n)
        self._windows = {c.joint: ThermalWindow(c.window, c.allowed) for c, _, q in self.plan
                         if q == "motor_rms" and c.window}

    def update(self, block):
        """Check a pipeline Block: its effort, and the motion of every joint (followers expanded)."""
        with np.errstate(all="ignore"):  # a ratio that overflows is an error of its own (_measurable)
            self._update(block)

    def _update(self, block):
        chunk, tau = block.chunk, block.effort
        self._tau.update(chunk.start, chunk.time, tau)
        q, qd, qdd = block.motion
        if block.motor is not None:
            self._motor.update(chunk.start, chunk.time, block.motor)
        for check, i, quantity in self.plan:
            if quantity == "rms_effort" or (quantity == "motor_rms" and not check.window):
                continue
            if quantity in MOTOR:
                self._motor_check(check, i, quantity, block)
                continue
            if quantity == "position":
                lower, upper = check.limit
                x = q[:, i]
                middle, half = 0.5 * (lower + upper), 0.5 * (upper - lower)
                over = ~((x >= lower) & (x <= upper))  # NaN counts as over
                use = np.abs(x - middle) / half
            else:
                x = tau[:, i] if quantity == "effort" else qd[:, i] if quantity == "velocity" else qdd[:, i]
                size = np.abs(x)
                over = ~(size <= check.allowed)  # NaN counts as over
                use = size / check.allowed
            self._record(check, chunk, x, over, use)

    def _motor_check(self, check, i, quantity, block):
        chunk, drive = block.chunk, self.drives[check.joint]
        torque = block.motor[:, i]
        if quantity == "motor_rms":
            if chunk.time is None:  # no time, no window: the RMS over the whole run
                check.window = None
                return
            x = self._windows[check.joint].update(chunk.time, torque)
            if x is None:
                return
            use = x / check.allowed
            self._record(check, chunk, x, ~(x <= check.allowed), use, offset=len(torque) - len(x))
            return
        if quantity == "envelope":
            speed = drive.gear_ratio * chunk.qd[:, i]
            allowed = check.margin * drive.available(speed)  # 0 beyond the envelope's last speed
            over = ~(np.abs(torque) <= allowed) | (np.abs(speed) > drive.envelope[-1][0])
            # |torque| / allowed; where nothing is allowed, above 1 by the speed's share of the last
            use = np.where(allowed > 0, np.abs(torque) / np.where(allowed > 0, allowed, 1.0),
                           np.where(over, 1.0 + np.abs(speed) / max(drive.envelope[-1][0], 1e-300), 0.0))
            k = self._record(check, chunk, torque, over, use)
            if k is not None:
                check.allowed_at_worst = float(allowed[k])
            return
        x = torque if quantity == "motor_torque" else drive.gear_ratio * chunk.qd[:, i]
        self._record(check, chunk, x, ~(np.abs(x) <= check.allowed), np.abs(x) / check.allowed)

    def _record(self, check, chunk, x, over, use, offset=0):
        """Worst and first violation of one check in a chunk; the worst's index if it is the run's worst."""
        if not len(use):
            return None
        k = int(use.argmax())
        _measurable(check, use[k], x[k])
        better = use[k] > check.utilisation
        if better:
            check.utilisation, check.worst = float(use[k]), float(x[k])
            check.worst_sample = chunk.start + offset + k
            check.worst_time = None if chunk.time is None else float(chunk.time[offset + k])
        n_over = int(over.sum())
        if n_over:
            if check.first_sample is None:
                first = int(over.argmax())
                check.first_sample = chunk.start + offset + first
                check.first_time = None if chunk.time is None else float(chunk.time[offset + first])
                check.first_value = float(x[first])
                check.first_at = check.first_time if check.first_time is not None else float(check.first_sample)
            check.count += n_over
        return k if better else None

    def finish(self):
        """Complete the whole-trajectory checks (RMS) once every chunk has been seen."""
        index = {name: i for i, name in enumerate(self.coords.joint_names)}
        for check in self.checks:
            if check.quantity == "motor_rms" and check.window and check.worst_time is None:
                check.window = None  # the run is shorter than the window: its RMS over the whole run
            if check.quantity == "rms_effort" or (check.quantity == "motor_rms" and not check.window):
                rms = (self._tau if check.quantity == "rms_effort" else self._motor).rms
                value = float(rms[index[check.joint]])
                check.worst = value
                with np.errstate(all="ignore"):
                    check.utilisation = value / check.allowed
                _measurable(check, check.utilisation, value)
                check.count = int(check.utilisation > 1)
        return self

    @property
    def violations(self):
        return [c for c in self.checks if not c.ok]

    @property
    def samples(self):
        return self._tau.count

    def squares(self, check):
        """The exact sum of squares (stats.ExactSum of one column) a whole-run RMS check is of."""
        from .stats import ExactSum

        column = next(i for c, i, _ in self.plan if c is check)
        source = self._tau if check.quantity == "rms_effort" else self._motor
        one = ExactSum(1)
        one.buckets = source.squares.buckets[column:column + 1].copy()
        return one


def _finite_allowed(check):
    """margin x limit is finite (--margin 1e308 with a limit of 320 is not): else an error naming both."""
    if check.quantity == "position":
        return
    largest = max(t for _, t in check.limit) if check.quantity == "envelope" else check.limit
    if not np.isfinite(check.margin * largest):
        raise RneaError("--margin", None, f"{check.margin:g} x the {check.quantity} limit {largest:g} of "
                                          f"{check.joint} overflows")


def _measurable(check, use, value):
    """A finite value's utilisation is finite: a limit too small to measure it against (1e-320) is
    an error naming the limit, not an infinite percentage in a report."""
    if np.isfinite(value) and not abs(use) <= 1e306:  # (x 100 as a percentage: finite too)
        limit = (f"the limit [{check.limit[0]:g}, {check.limit[1]:g}]" if check.quantity == "position"
                 else "the torque-speed envelope" if check.quantity == "envelope" else f"the limit {check.limit:g}")
        if check.margin != 1 and check.quantity != "position":
            limit += f" x --margin {check.margin:g}"
        what = f"{check.joint} {check.quantity}"
        raise RneaError(check.origin or what, what if check.origin else None,
                        f"{limit} is too small to measure {value:.6g} against (their ratio is beyond 1e306)")
