"""Excitation trajectories for identification: a periodic Fourier series per joint whose
coefficients make the base regressor well conditioned (Swevers, Ganseman, Tukel, de Schutter and
Van Brussel, 1997), within the joints' limits, starting and ending at rest.

    q_j(t)   = c_j + sum_l  a_jl / (l w) sin(l w t) - b_jl / (l w) cos(l w t)
    qd_j(t)  =       sum_l  a_jl cos(l w t) + b_jl sin(l w t)
    qdd_j(t) =       sum_l -a_jl l w sin(l w t) + b_jl l w cos(l w t)         (w = 2 pi / period)

At t = 0 (and every period) the joint is at rest: qd = sum_l a_jl = 0 and qdd = w sum_l l b_jl = 0,
so the first harmonic's coefficients are set by the others'. The search is a (1+1) evolution
strategy from a seeded random start: each step adds seeded noise to the coefficients (element-wise
arithmetic) and keeps the candidate when its condition number is lower, so the trajectory written
is the same bits on every machine (a tie between two condition numbers within rounding, the only
place LAPACK's bits could decide, has probability ~1e-15 a step)."""

import math
from dataclasses import dataclass, replace

import numpy as np

from ...dynamics import engine, spatial
from . import identify
from ...errors import RneaError

GRID = 160  # samples of one period on which the condition number is computed (5 harmonics: 32 a wave)


@dataclass(frozen=True)
class Fourier:
    """The coefficients of one excitation: centre (n,), a and b (n, H), its period (s)."""

    period: float
    centre: np.ndarray
    a: np.ndarray
    b: np.ndarray

    def motion(self, t):
        """(q, qd, qdd), each (N, n), at times t (N,), derivatives exact."""
        t = np.asarray(t, dtype=float)
        n, H = self.a.shape
        w = 2 * math.pi / self.period
        q = np.zeros((len(t), n)) + self.centre
        qd, qdd = np.zeros((len(t), n)), np.zeros((len(t), n))
        for l in range(1, H + 1):
            # the angle l w t, reduced by whole periods first so that it stays small and exact-ish
            phase = (t * l / self.period) % 1.0 * (2 * math.pi)
            c, s = spatial.cos_sin(phase, np.empty(len(t)), np.empty(len(t)), np.empty((5, len(t))))
            c, s = c[:, None], s[:, None]
            a, b, lw = self.a[:, l - 1], self.b[:, l - 1], l * w
            q += a / lw * s - b / lw * c
            qd += a * c + b * s
            qdd += -a * lw * s + b * lw * c
        return q, qd, qdd


def at_rest(a, b):
    """a, b (n, H) with the first harmonic set so that qd(0) = qdd(0) = 0."""
    a, b = a.copy(), b.copy()
    a[:, 0] = b[:, 0] = 0.0
    for l in range(1, a.shape[1]):  # summed in order, not by numpy's reduction
        a[:, 0] -= a[:, l]
        b[:, 0] -= b[:, l] * (l + 1)
    return a, b


@dataclass(frozen=True)
class Bounds:
    """Per joint (n,) the allowed |q - centre|, |qd|, |qdd| and |tau| (inf where unlimited), the
    margin already applied; centre the middle of the position range."""

    centre: np.ndarray
    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    effort: np.ndarray


def bounds(coords, limits, acceleration, margin):
    """Bounds from `limits.joint_limits` (per joint of the model), {joint: acceleration} and a
    margin, per column of coords: a mimic follower (q = m q_leader + offset) bounds its leader by
    its own range, velocity and acceleration over |m|."""
    model, n = coords.model, coords.n
    low, high = np.full(n, -math.pi), np.full(n, math.pi)
    velocity, accel, effort = np.full(n, np.inf), np.full(n, np.inf), np.full(n, np.inf)
    column = {i: k for k, i in enumerate(coords.columns)}
    ranged = np.zeros(n, dtype=bool)
    for i, (joint, lim) in enumerate(zip(model.joints, limits)):
        k, m, o = _leader(coords, i, column)
        if m == 0.0:  # a follower held at its offset: no bound on its leader, but it must be in its range
            if lim.lower is not None and lim.upper is not None and not lim.lower <= o <= lim.upper:
                raise RneaError(model.source, joint.name, f"its mimic offset {o:g} is outside its range "
                                                          f"[{lim.lower:g}, {lim.upper:g}]")
            continue
        if lim.lower is not None and lim.upper is not None:  # m q + o in [lower, upper]
            lo, hi = sorted(((lim.lower - o) / m, (lim.upper - o) / m))
            if ranged[k]:
                low[k], high[k] = max(low[k], lo), min(high[k], hi)
            else:
                low[k], high[k], ranged[k] = lo, hi, True
        elif i == coords.columns[k] and not joint.is_angular and not ranged[k]:
            low[k], high[k] = -0.5, 0.5  # m, a prismatic joint without a range
        if lim.velocity:
            velocity[k] = min(velocity[k], lim.velocity / abs(m))
        if joint.name in acceleration:
            accel[k] = min(accel[k], acceleration[joint.name] / abs(m))
        if i == coords.columns[k] and lim.effort:
            effort[k] = lim.effort
    if (high < low).any():
        k = int(np.argmax(high < low))
        raise RneaError(model.source, coords.joint_names[k], "its mimic followers' ranges leave it no position")
    return Bounds((low + high) / 2, (high - low) / 2 * margin, velocity * margin, accel * margin, effort * margin)


def _leader(coords, i, column):
    """(column, multiplier, offset) of model joint i: q_i = multiplier q_column + offset."""
    if i in column:
        return column[i], 1.0, 0.0
    return int(coords._column[i]), float(coords._multiplier[i]), float(coords._offset[i])


class Problem:
    """What the search needs of a robot: its coordinates, the base columns of W, the bounds."""

    def __init__(self, coords, period, harmonics, limits, *, friction=True, gravity=engine.GRAVITY):
        if harmonics < 2:
            raise RneaError(None, "--harmonics", "needs at least 2: with one, starting at rest leaves no motion")
        self.coords, self.model, self.period, self.harmonics = coords, coords.model, period, harmonics
        self.limits, self.gravity = limits, gravity
        self.layout = identify.layout(self.model, friction=friction)
        self.base = identify.base_parameters(self.model, gravity=gravity, friction=friction, coords=coords)
        self.grid = np.arange(GRID) * (period / GRID)

    def feasible(self, fourier, t=None):
        """The excitation scaled down, joint by joint, until every sample of t (default: the grid)
        is within the position, velocity and acceleration bounds, then as a whole until within the
        effort bounds; None where even the middle pose breaks an effort bound. Each scale is
        checked on the samples themselves (1/need may round a value one ulp past its bound)."""
        t = self.grid if t is None else t
        L = self.limits
        for _ in range(8):
            q, qd, qdd = fourier.motion(t)
            with np.errstate(divide="ignore", invalid="ignore"):
                need = np.nanmax(np.stack([np.abs(q - fourier.centre).max(axis=0) / L.position,
                                           np.abs(qd).max(axis=0) / L.velocity,
                                           np.abs(qdd).max(axis=0) / L.acceleration]), axis=0)
            if (need <= 1.0).all():
                break
            shrink = np.where(need > 1.0, (1.0 - 2.0 ** -40) / np.where(need > 1.0, need, 1.0), 1.0)[:, None]
            fourier = replace(fourier, a=fourier.a * shrink, b=fourier.b * shrink)
        else:
            raise RneaError(self.model.source, None, "no excitation within the limits (the scaling did not settle)")
        if np.isfinite(L.effort).any():
            for _ in range(60):  # effort is not linear in the amplitude: shrink until within
                tau = self.torques(*fourier.motion(t))
                if (np.abs(tau) <= L.effort).all():
                    break
                if not np.any(fourier.a) and not np.any(fourier.b):
                    return None
                fourier = replace(fourier, a=fourier.a * 0.9, b=fourier.b * 0.9)
            else:
                return None
        return fourier

    def filled(self, fourier):
        """The excitation scaled, joint by joint, so that its first bound binds on the grid (up or
        down); a joint whose bounds allow no motion stays still."""
        q, qd, qdd = fourier.motion(self.grid)
        L = self.limits
        with np.errstate(divide="ignore", invalid="ignore"):
            need = np.nanmax(np.stack([np.abs(q - fourier.centre).max(axis=0) / L.position,
                                       np.abs(qd).max(axis=0) / L.velocity,
                                       np.abs(qdd).max(axis=0) / L.acceleration]), axis=0)
            scale = np.where((need > 0) & np.isfinite(need), 1.0 / need, 0.0)[:, None]
        if not np.isfinite(scale).all() or not scale.any():
            k = int(np.argmin(np.isfinite(scale[:, 0]) & (scale[:, 0] > 0)))
            raise RneaError(self.model.source, self.coords.joint_names[k], "the limits leave it no motion to "
                                                                           "excite")
        return replace(fourier, a=fourier.a * scale, b=fourier.b * scale)

    def torques(self, q, qd, qdd):
        return self.coords.reflect(engine.rnea(self.model, *self.coords.expand(q, qd, qdd), gravity=self.gravity))

    def condition(self, fourier):
        """The condition number of the base regressor over one period (inf where it is singular)."""
        q, qd, qdd = self.coords.expand(*fourier.motion(self.grid))
        W = self.layout.regressor(q, qd, qdd, gravity=self.gravity)[..., self.base.independent]
        R = np.linalg.qr(W.reshape(-1, W.shape[-1]), mode="r")  # W's singular values are R's (not those
        sv = np.linalg.svd(R, compute_uv=False)  # of W^T W, whose eigenvalues square the condition number)
        return float(sv[0] / sv[-1]) if sv[-1] > 0 else math.inf


@dataclass(frozen=True)
class Excitation:
    fourier: Fourier
    condition: float  # of the base regressor over one period
    start_condition: float  # of the random start, scaled into the bounds likewise
    steps: int
    rank: int


def excite(problem, *, steps=400, starts=8, seed=0):
    """The (1+1) search (module docstring) from the best of `starts` seeded random starts; returns
    an Excitation."""
    n, H = problem.coords.n, problem.harmonics
    rng = np.random.default_rng(seed)

    def candidate(x):
        a, b = at_rest(x[:n * H].reshape(n, H), x[n * H:].reshape(n, H))
        fourier = problem.feasible(problem.filled(Fourier(problem.period, problem.limits.centre, a, b)))
        if fourier is None:
            return None, math.inf
        return fourier, problem.condition(fourier)

    x, best, best_cond, held = None, None, math.inf, False
    for _ in range(max(starts, 1)):
        y = rng.standard_normal(2 * n * H)
        fourier, cond = candidate(y)
        held = held or fourier is not None
        if cond < best_cond:
            x, best, best_cond = y, fourier, cond
    if best is None and held:
        raise RneaError(problem.model.source, None, "no excitation makes the base regressor regular here: the "
                                                   "limits leave too little motion to see every base parameter")
    if best is None:
        raise RneaError(problem.model.source, None, "no excitation within the effort limits: the robot cannot "
                                                   "hold its middle pose within them")
    start, sigma = best_cond, 0.3
    for _ in range(steps):
        y = x + sigma * rng.standard_normal(x.size)
        fourier, cond = candidate(y)
        if cond < best_cond:
            x, best, best_cond = y, fourier, cond
            sigma *= 1.5
        else:
            sigma *= 1.5 ** -0.25  # the 1/5 success rule
    return Excitation(best, best_cond, start, steps, problem.base.rank)


def samples(excitation, problem, duration, rate):
    """(t, q, qd, qdd) at `rate` over `duration` (whole periods and whole samples: the last at the
    end, at rest), scaled so that every one of these samples is within the bounds."""
    count = round(duration * rate)
    t = np.arange(count + 1) / rate
    fourier = problem.feasible(excitation.fourier, t)
    if fourier is None:
        raise RneaError(problem.model.source, None, "no excitation within the effort limits at these samples: the "
                                                   "robot cannot hold its middle pose within them")
    # the condition number of what is written (scaled on these samples, not the search's grid)
    return (t, *fourier.motion(t)), replace(excitation, fourier=fourier, condition=problem.condition(fourier))


def periods(duration, period, rate, harmonics):
    """The period (default: the duration), checked: it divides the duration (so that the run ends
    at rest, as it starts), the duration is whole samples (the last one at its end), and the rate
    samples the highest harmonic more than twice a period. click.BadParameter otherwise."""
    import click

    period = duration if period is None else period
    whole = duration / period
    if abs(whole - round(whole)) > 1e-9 * max(whole, 1.0) or round(whole) < 1:
        raise click.BadParameter(f"{period:g} s does not divide the duration {duration:g} s into whole periods (the "
                                 "run would not end at rest)", param_hint="--period")
    samples = duration * rate
    if abs(samples - round(samples)) > 1e-9 * max(samples, 1.0):
        raise click.BadParameter(f"{duration:g} s at {rate:g} Hz is not a whole number of samples (the last would "
                                 "not fall at the end, at rest)", param_hint="--rate")
    if rate * period <= 2 * harmonics:
        raise click.BadParameter(f"{rate:g} Hz samples the {harmonics}th harmonic of a {period:g} s period no more "
                                 f"than twice (above {2 * harmonics / period:g} Hz needed)", param_hint="--rate")
    return period


__all__ = ["Fourier", "Problem", "Excitation", "excite", "samples", "bounds", "periods"]
