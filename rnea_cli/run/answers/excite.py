"""Excitation trajectories for identification: a periodic Fourier series per joint whose
coefficients make the base regressor well conditioned (Swevers, Ganseman, Tukel, de Schutter and
Van Brussel, 1997), within the joints' limits, starting and ending at rest.

    q_j(t)   = c_j + sum_l  a_jl / (l w) sin(l w t) - b_jl / (l w) cos(l w t)
    qd_j(t)  =       sum_l  a_jl cos(l w t) + b_jl sin(l w t)
    qdd_j(t) =       sum_l -a_jl l w sin(l w t) + b_jl l w cos(l w t)         (w = 2 pi / period)

At t = 0 (and every period) the joint is at rest: qd = sum_l a_jl = 0 and qdd = w sum_l l b_jl = 0,
so the first harmonic's coefficients are set by the others'.

The search draws STARTS random Fourier series (`random_fourier`: what a user would otherwise run)
and goes on from the one of the lowest spread with L-BFGS over the free coefficients. The spread
tr(G^k) tr(G^-k) of G = W^T W (W the base regressor over one period) is a smooth stand-in for
cond(W)^(2k): cond(W) itself has kinks where its extreme singular values cross. Each iterate is
filled to the bounds joint by joint through a smooth norm of the ratios to the bounds (the max
would make a kink where another sample binds), its Coulomb columns are smoothed below COULOMB (a
sign flipping at one sample would make the spread jump), and its gradient comes from W's
derivatives in each joint's q, qd, qdd at all samples at once. Every number the search compares
or steps with is made of +, -, *, / and sqrt in a fixed order (sums in `fixed_linalg.ordered_sum`'s tree,
no BLAS, LAPACK or SIMD reduction), so the trajectory written is the same bits on every machine;
LAPACK computes only the condition numbers reported."""

import math
from dataclasses import dataclass, replace

import numpy as np

from ...errors import RneaError
from . import fixed_linalg as fl
from .excitation import Fourier, Problem, at_rest, bounds  # noqa: F401  (the problem the search solves)

STARTS = 8  # random starts; the search goes on from the one of the lowest spread
STEPS = 100  # quasi-Newton steps
LINE = 30  # halvings of a step at most


@dataclass(frozen=True)
class Excitation:
    fourier: Fourier
    condition: float  # of the base regressor over one period
    start_condition: float  # of the random start the search began from, scaled into the bounds likewise
    random_condition: float  # the median of the random starts' (random Fourier series filling the same bounds)
    drawn: int  # how many random starts that median is of (those within the effort bounds)
    steps: int
    rank: int


def random_fourier(problem, rng):
    """A random excitation as a user would draw one: standard normal coefficients of the same
    harmonics and period (`fixed_linalg.normal`: the same bits on every machine), at rest at both ends, each joint scaled until its first bound binds, then within the effort bounds (None
    where even the middle pose breaks one)."""
    n, H = problem.coords.n, problem.harmonics
    a, b = at_rest(fl.normal(rng, (n, H)), fl.normal(rng, (n, H)))
    return problem.feasible(problem.filled(Fourier(problem.period, problem.limits.centre, a, b)))


def excite(problem, *, steps=STEPS, starts=STARTS, seed=0):
    """The search (module docstring): `starts` seeded random Fourier series (`random_fourier`), then
    `steps` quasi-Newton steps on the spread of the best; returns an Excitation."""
    rng = np.random.default_rng(seed)
    drawn = [random_fourier(problem, rng) for _ in range(max(starts, 1))]
    held = [f for f in drawn if f is not None]
    if not held:
        raise RneaError(problem.model.source, None, "no excitation within the effort limits: the robot cannot "
                                                   "hold its middle pose within them")
    spreads = [problem.spread(f) for f in held]
    regular = [k for k, s in enumerate(spreads) if s < math.inf]
    if not regular:
        raise RneaError(problem.model.source, None, "no excitation makes the base regressor regular here: the "
                                                   "limits leave too little motion to see every base parameter")
    first = min(regular, key=lambda k: spreads[k])  # the first of equal spreads: a rule on exact bits
    best = _descend(problem, held[first], steps)
    if best is not held[first]:  # a step was kept: its fill was smooth, a little short of the bounds
        refilled = problem.feasible(problem.filled(best))
        if refilled is not None and problem.spread(refilled) < problem.spread(best):
            best = refilled
    conditions = sorted(problem.condition(f) for f in held)
    median = conditions[len(conditions) // 2] if len(conditions) % 2 else \
        (conditions[len(conditions) // 2 - 1] + conditions[len(conditions) // 2]) / 2
    return Excitation(best, problem.condition(best), problem.condition(held[first]), median, len(held), steps,
                      problem.base.rank)


def _descend(problem, fourier, steps, memory=8):
    """L-BFGS on log spread over the free coefficients (the first harmonic's are set by at_rest),
    each iterate filled to the bounds: a step is kept only when its spread is lower (halved up to
    LINE times otherwise), so every decision compares spreads, exact element-wise bits."""
    x = _free(fourier)
    value, gradient, _ = problem.descent(x)
    if value == math.inf:
        return fourier
    pairs = []  # fourier stays the start's (filled exactly) until a step is kept
    for _ in range(steps):
        direction = _two_loop(gradient, pairs)
        slope = fl.dot(direction, gradient)
        if not slope < 0:
            direction, slope, pairs = -gradient, -fl.dot(gradient, gradient), []
            if not slope < 0:
                break
        step = 1.0 if pairs else min(1.0, 0.1 * math.sqrt(fl.dot(x, x) / -slope))
        for _ in range(LINE):
            trial = x + step * direction
            got = problem.descent(trial)
            if got[0] < value:
                break
            step *= 0.5
        else:
            break
        s, y = trial - x, got[1] - gradient
        if fl.dot(s, y) > 0:
            pairs = (pairs + [(s, y, 1.0 / fl.dot(s, y))])[-memory:]
        x, (value, gradient, fourier) = trial, got
    return fourier


def _two_loop(gradient, pairs):
    """-H gradient of L-BFGS from its (s, y, 1 / y.s) pairs, oldest first."""
    d = -gradient
    alphas = []
    for s, y, rho in reversed(pairs):
        alpha = rho * fl.dot(s, d)
        d = d - alpha * y
        alphas.append(alpha)
    if pairs:
        s, y, rho = pairs[-1]
        d = d * (1.0 / (rho * fl.dot(y, y)))
    for (s, y, rho), alpha in zip(pairs, reversed(alphas)):
        d = d + (alpha - rho * fl.dot(y, d)) * s
    return d


def _free(fourier):
    """The coefficients the search moves: a, b of the harmonics 2 .. H, flattened."""
    return np.concatenate([fourier.a[:, 1:].ravel(), fourier.b[:, 1:].ravel()])


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


__all__ = ["Fourier", "Problem", "Excitation", "excite", "random_fourier", "samples", "bounds", "periods"]
