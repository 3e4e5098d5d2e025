"""The largest value of a parameter for which limits hold, solved in closed form.

An effort e(x) that is linear (payload mass) or quadratic (time scaling) in a parameter x >= 0
must stay in [lo, hi] at every sample; its RMS must stay under a limit. Each function returns,
per sample or per limit, the first x at which the limit breaks as x grows from 0 (inf if never),
given that it holds at x = 0.
"""

import numpy as np


def first_exit_linear(e0, e1, lo, hi):
    """Per sample: the largest x >= 0 with lo <= e0 + x e1 <= hi."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # inf: no bound from that sample
        x = np.where(e1 > 0, (hi - e0) / e1, np.where(e1 < 0, (lo - e0) / e1, np.inf))
    return np.maximum(x, 0.0)


def first_exit_quadratic(a, b, c, lo, hi):
    """Per sample: the first x > 0 where a x² + b x + c leaves [lo, hi] (c inside it)."""
    return np.minimum(_first_root(a, b, c - hi), _first_root(-a, -b, lo - c))


def _first_root(a, b, c):
    """The first x > 0 where a x² + b x + c turns positive, for c <= 0 (it starts at or below 0):
    the smallest positive root (inf if none); 0 when it rises from 0 at once."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        disc = b * b - 4 * a * c
        q = -0.5 * (b + np.copysign(np.sqrt(np.maximum(disc, 0.0)), b))  # roots q/a and c/q, without cancellation
        roots = np.stack([np.where(a != 0, q / a, np.inf), np.where(q != 0, c / q, np.inf)])
        roots = np.where((disc > 0) & (roots > 0), roots, np.inf).min(axis=0)
        linear = np.where(b > 0, -c / b, np.inf)
        first = np.where(a == 0, np.where(linear >= 0, linear, np.inf), roots)
        rising = (c == 0) & ((b > 0) | ((b == 0) & (a > 0)))
    return np.where(rising, 0.0, np.where(np.isnan(first), np.inf, first))


def largest_within_rms(A, B, C, limit):
    """The largest x >= 0 with A x² + 2 B x + C <= limit² (A >= 0, C <= limit²)."""
    A, B, C = A / limit / limit, B / limit / limit, C / limit / limit  # <= 1: a limit of 1e308 has no square
    room = 1.0 - C
    if A == 0:
        return room / (2 * B) if B > 0 else np.inf
    root = np.sqrt(B * B + A * room)
    return room / (B + root) if B + root > 0 else (root - B) / A


def convex_rms_limit(e0, e1, factor, windows, limit):
    """The largest x >= 0 with every window's mean of (factor(x) (e0 + x e1))² <= limit², where
    factor(x) is per sample (driving, driven) by the sign of e0 + x e1: a convex function of x,
    piecewise quadratic between the samples' zeros of e. windows: (starts, ends) index arrays
    (sample ranges [start, end)). Exact: bisection over the zeros, then the quadratic of the segment."""
    driving, driven, sign = factor  # per sample; sign: +1 where a positive effort drives (qd >= 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        zeros = np.where(e1 != 0, -e0 / e1, -1.0)
    breaks = np.unique(zeros[zeros > 0])
    starts, ends = windows

    def coefficients(x):
        s = np.where((e0 + x * e1) * sign >= 0, driving, driven)
        s2 = s * s
        sums = [np.concatenate([[0.0], np.cumsum(s2 * v)]) for v in (e1 * e1, e0 * e1, e0 * e0)]
        count = ends - starts
        return [(acc[ends] - acc[starts]) / count for acc in sums]

    def worst(x):
        A, B, C = coefficients(x)
        return (A * x * x + 2 * B * x + C).max()

    lo, hi = 0, len(breaks)  # find the first break where the limit is broken
    while lo < hi:
        mid = (lo + hi) // 2
        if worst(breaks[mid]) > limit * limit:
            hi = mid
        else:
            lo = mid + 1
    left = breaks[lo - 1] if lo > 0 else 0.0
    right = breaks[lo] if lo < len(breaks) else np.inf
    probe = left + 1.0 if right == np.inf else 0.5 * (left + right)
    A, B, C = coefficients(probe)  # branches fixed within the segment
    best = min((largest_within_rms(a, b, c, limit) for a, b, c in zip(A, B, C)), default=np.inf)
    return float(min(max(best, left), right))
