"""Feasible speed: the largest uniform time-scaling factor k > 0 for which every limit holds.

Running the same path k times as fast gives q̇ -> k q̇ and q̈ -> k² q̈, so each joint's effort is
e(k) = c + b k + a k²: c = g(q) (+ external wrenches) + Coulomb friction, b = viscous friction q̇,
a = tau - g(q) - tau_ext + armature. Velocity limits bound k linearly, peak effort and motor
limits per sample through a quadratic, the envelope per segment of the torque-speed curve; an RMS
limit is a quartic in k. The factor is the first k at which a limit breaks as k grows from 0.
A motor's RMS with gearbox efficiency below 1, or over a thermal window (which covers other
samples at every speed), is piecewise in k: it is found numerically, by a scan of k and bisection
to 1e-12 relative, on the samples kept for it. Factors are looked for up to MAX_FACTOR: a motion
whose limits allow more (one of 1e-270 rad, or none that depends on the speed) is unbounded.
"""

from dataclasses import dataclass, field

import numpy as np

from ..stats import ExactSum
from . import bounds

MAX_FACTOR = 1e6  # the factors looked for: beyond, a motion is too slow for its limits to say how fast it may go


@dataclass
class Scale:
    factor: float | None  # None when the motion breaks a limit even at rest (holding its poses)
    duration: float | None  # of the motion run at the factor, s
    limiting: dict | None
    unbounded: bool = False
    skipped: list = field(default_factory=list)  # limits scale does not consider

    def to_json(self):
        return {"factor": self.factor, "duration": self.duration, "limiting": self.limiting,
                "unbounded": self.unbounded, "not_considered": self.skipped}


class ScaleSolver:
    """Streams Blocks into the factor; `check` is a LimitCheck whose plan names the limits."""

    def __init__(self, check, pipeline, drives):
        self.check, self.pipeline, self.drives = check, pipeline, drives
        self.best = (np.inf, None)
        self.hold = None  # the first sample whose poses cannot be held (k -> 0), or None
        n = pipeline.coords.n
        self.moments = ExactSum(6 * n)  # of c², b c, b², a c, a b, a²: exact, the same bits in any chunks
        self.count = 0
        self.t_first = self.t_last = None
        self.kept = {}  # column -> [(a, b, c, qd, time)] for the motor RMS limits solved numerically

    def update(self, block, traj):
        chunk = block.chunk
        if chunk.time is not None:
            self.t_first = chunk.time[0] if self.t_first is None else self.t_first
            self.t_last = chunk.time[-1]
        a, b, c = self._coefficients(block, traj)
        self.moments.add(np.concatenate([c * c, b * c, b * b, a * c, a * b, a * a], axis=1))
        self.count += len(c)
        q, qd, qdd = block.motion
        for check, i, quantity in self.check.plan:
            if quantity == "acceleration":  # qdd -> k² qdd
                with np.errstate(divide="ignore", over="ignore"):
                    k = np.where(qdd[:, i] != 0, np.sqrt(check.allowed / np.abs(qdd[:, i])), np.inf)
                self._consider(k, check, quantity, chunk)
            elif quantity in ("velocity", "motor_speed"):  # velocity: a joint of the model; motor_speed: a column
                speed = qd[:, i] if quantity == "velocity" else chunk.qd[:, i] * self.drives[check.joint].gear_ratio
                with np.errstate(divide="ignore", over="ignore"):  # inf: no bound from that sample
                    k = np.where(speed != 0, check.allowed / np.abs(speed), np.inf)
                self._consider(k, check, quantity, chunk)
            elif quantity in ("effort", "motor_torque"):
                lo, hi = self._bounds(check, i, quantity, chunk)
                self._hold(c[:, i], lo, hi, check, quantity, chunk)
                self._consider(bounds.first_exit_quadratic(a[:, i], b[:, i], c[:, i], lo, hi), check, quantity,
                               chunk)
            elif quantity == "envelope":
                self._envelope(a[:, i], b[:, i], c[:, i], check, i, chunk)
            elif quantity == "motor_rms" and self._numeric(check):
                self.kept.setdefault(i, []).append((a[:, i].copy(), b[:, i].copy(), c[:, i].copy(),
                                                    chunk.qd[:, i].copy(),
                                                    None if chunk.time is None else chunk.time.copy()))

    def _coefficients(self, block, traj):
        """a, b, c (N, n) of e(k) = c + b k + a k²."""
        coords, chunk, p = self.pipeline.coords, block.chunk, self.pipeline
        q = block.motion[0]
        zero = np.zeros_like(q)
        base = None
        if p.floating:
            zero6 = np.zeros_like(chunk.data["base_twist"])
            base = (chunk.data["base_pose"], zero6, zero6)
        f_ext = p._dynamics((q, zero, zero), base, {l: (chunk.data["fext:" + l], chunk.data.get("fext_at:" + l))
                                                    for l in traj.wrenched}, p.gravity, False)[0].tau
        if p.fixed is not None:
            f_ext = f_ext[:, p.fixed.index]
        still = coords.reflect(f_ext)  # gravity and external wrenches: the torque of holding the poses
        sign = np.sign(chunk.qd)
        drives = self.drives
        viscous = np.array([drives[j.name].viscous if j.name in drives else 0.0 for j in coords.joints])
        coulomb = np.array([drives[j.name].coulomb if j.name in drives else 0.0 for j in coords.joints])
        if p.friction:
            d = coords.reflect(np.array([j.damping for j in p.model.joints]) * block.motion[1])
            f = coords.reflect(np.array([j.friction for j in p.model.joints]) * np.sign(block.motion[1]))
        else:
            d = f = 0.0
        c = still + coulomb * sign + f
        b = viscous * chunk.qd + d
        a = block.tau - still + (block.armature if block.armature is not None else 0.0)
        return a, b, c

    def _bounds(self, check, i, quantity, chunk):
        if quantity == "effort":
            return -check.allowed, check.allowed
        drive = self.drives[check.joint]
        return drive.effort_range(check.margin * drive.peak_torque, chunk.qd[:, i])

    def _envelope(self, a, b, c, check, i, chunk):
        """Per segment of the envelope, over the k that put the motor speed in it, the first exit."""
        drive = self.drives[check.joint]
        points = drive.envelope_points()  # from speed 0
        speed = np.abs(drive.gear_ratio * chunk.qd[:, i])
        qd = chunk.qd[:, i]
        self._hold(c, *drive.effort_range(check.margin * points[0, 1], qd), check, "envelope", chunk)  # k -> 0
        minus_down, up = drive.effort_range(1.0, qd)  # joint effort per unit of motor torque allowed
        down = -minus_down
        best = np.full(len(c), np.inf)
        with np.errstate(divide="ignore", invalid="ignore"):
            for (w0, t0), (w1, t1) in zip(points[:-1], points[1:]):
                # the k that put the motor speed in [w0, w1]; a motor at rest stays in the first segment
                k0 = np.where(speed > 0, w0 / speed, 0.0 if w0 == 0 else np.inf)
                k1 = np.where(speed > 0, w1 / speed, np.inf)
                slope = (t1 - t0) / (w1 - w0)  # allowed(k) = t0 + slope (k speed - w0), linear in k
                L0, L1 = check.margin * (t0 - slope * w0), check.margin * slope * speed
                # e(k) <= up (L0 + L1 k) and e(k) >= -down (L0 + L1 k): quadratics in k from k0
                for side, scale in ((1.0, up), (-1.0, down)):
                    A, B, C = side * a, side * b - scale * L1, side * c - scale * L0
                    shifted = bounds._first_root(A, 2 * A * k0 + B, A * k0 * k0 + B * k0 + C)
                    exit_k = np.where(A * k0 * k0 + B * k0 + C > 0, k0, k0 + shifted)
                    best = np.minimum(best, np.where(exit_k <= k1, exit_k, np.inf))
            last = np.where(speed > 0, points[-1, 0] / speed, np.inf)  # beyond the envelope's last speed
        self._consider(np.minimum(best, last), check, "envelope", chunk)

    def _hold(self, c, lo, hi, check, quantity, chunk):
        bad = np.flatnonzero(~((c >= lo) & (c <= hi)))
        if bad.size and self.hold is None:
            k = int(bad[0])
            self.hold = {"joint": check.joint, "quantity": quantity, "sample": chunk.start + k,
                         "time": None if chunk.time is None else float(chunk.time[k])}

    def _consider(self, k, check, quantity, chunk):
        j = int(np.argmin(k))
        if k[j] < self.best[0]:
            self.best = (float(k[j]), {"joint": check.joint, "quantity": quantity, "sample": chunk.start + j,
                                       "time": None if chunk.time is None else float(chunk.time[j])})

    def result(self):
        skipped = []
        for check in self.check.checks:  # position does not change with speed
            if check.quantity == "position" and not check.ok and self.hold is None:
                self.hold = {"joint": check.joint, "quantity": "position", "sample": check.first_sample,
                             "time": check.first_time}
        cc, bc, bb, ac, ab, aa = self.moments.values().reshape(6, -1)
        moments = np.stack([cc, 2 * bc, bb + 2 * ac, 2 * ab, aa]) / max(self.count, 1)  # of e(k)², k^0 .. k^4
        for check, i, quantity in self.check.plan:
            if quantity not in ("rms_effort", "motor_rms"):
                continue
            if quantity == "motor_rms" and self._numeric(check):
                k = self._motor_rms(check, i)
                if k is None:
                    self.hold = self.hold or {"joint": check.joint, "quantity": quantity, "sample": None,
                                              "time": None}
                elif k < self.best[0]:
                    self.best = (k, {"joint": check.joint, "quantity": quantity, "sample": None, "time": None})
                continue
            scale = 1.0 if quantity == "rms_effort" else 1.0 / self.drives[check.joint].gear_ratio ** 2
            # mean e(k)² <= allowed², both sides over allowed² (a limit of 1e308 has no finite square)
            k = _quartic_limit(moments[:, i] * scale / check.allowed / check.allowed, 1.0)
            if k is None:
                self.hold = self.hold or {"joint": check.joint, "quantity": quantity, "sample": None, "time": None}
            elif k < self.best[0]:
                self.best = (k, {"joint": check.joint, "quantity": quantity, "sample": None, "time": None})
        if self.hold is not None:
            return Scale(None, None, self.hold, skipped=skipped)
        k, limiting = self.best
        if not k <= MAX_FACTOR:  # (a motion of 1e-270 rad "could run" 6e135 times as fast: no answer)
            return Scale(None, None, None, unbounded=True, skipped=skipped)
        duration = None if self.t_first is None else float((self.t_last - self.t_first) / k)
        return Scale(k, duration, limiting, skipped=skipped)


    def _numeric(self, check):
        return bool(check.window) or self.drives[check.joint].efficiency != 1

    def _motor_rms(self, check, i):
        """The first k where the motor's RMS (whole run or worst thermal window) exceeds its limit."""
        a, b, c, qd, time = (np.concatenate(x) if x[0] is not None else None for x in zip(*self.kept[i]))
        drive = self.drives[check.joint]
        r, eta = drive.gear_ratio, drive.efficiency
        limit = check.allowed

        def worst(k):
            e = (a * k + b) * k + c
            torque = np.where(e * qd >= 0, e / (r * eta), e * eta / r)
            sq = np.concatenate([[0.0], np.cumsum(torque * torque)])
            if check.window and time is not None and (time[-1] - time[0]) / k >= check.window:
                t = time / k  # the scaled motion's times
                ends = np.arange(1, len(t) + 1)
                starts = np.searchsorted(t, t - check.window, side="right")
                full = t - t[0] >= check.window
                return np.sqrt(((sq[ends] - sq[starts]) / (ends - starts))[full].max())
            return np.sqrt(sq[-1] / len(torque))

        return _first_crossing(worst, limit, self.best[0])


def _first_crossing(f, limit, upper):
    """The first k > 0 with f(k) > limit, scanning k geometrically up to `upper` (or MAX_FACTOR) and
    bisecting to 1e-12 relative; None if f is above the limit already near 0, inf if never."""
    tiny = 1e-6
    if f(tiny) > limit:
        return None
    top = min(upper, MAX_FACTOR)
    grid = np.geomspace(tiny, max(top, 2 * tiny), 400)
    lo = tiny
    for k in grid[1:]:
        if f(k) > limit:
            hi = k
            while hi - lo > 1e-12 * hi:
                mid = 0.5 * (lo + hi)
                lo, hi = (mid, hi) if f(mid) <= limit else (lo, mid)
            return float(hi)
        lo = k
    return np.inf


def _quartic_limit(coefficients, bound):
    """The first k > 0 where the mean of e(k)², m0 + m1 k + m2 k² + m3 k³ + m4 k⁴, exceeds bound;
    None if it does already at k -> 0."""
    m = np.asarray(coefficients, dtype=float)
    if m[0] > bound:
        return None
    poly = np.array([m[4], m[3], m[2], m[1], m[0] - bound])
    while len(poly) > 1 and poly[0] == 0:
        poly = poly[1:]
    if len(poly) == 1:
        return np.inf
    roots = np.roots(poly)
    real = sorted(r.real for r in roots if abs(r.imag) <= 1e-9 * max(1.0, abs(r)) and r.real > 0)
    for r in real:  # the first root past which the quartic is above the bound
        probe = r * (1 + 1e-9) + 1e-300
        if np.polyval(poly, probe) > 0:
            return float(r)
    return np.inf

