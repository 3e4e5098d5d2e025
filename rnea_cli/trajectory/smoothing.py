"""Measured positions in, q, qd, qdd out: local cubic least-squares fits (Savitzky-Golay) on the
actual timestamps, and linear resampling onto a uniform grid. Both stream: a chunk's samples are
finished once the window of each has been read, and only a window's worth is kept.

For sample i, the cubic p(t) = c0 + c1 u + c2 u² + c3 u³, u = (t - t_i) / h with h = window / 2, is
fitted to the samples with |t - t_i| <= h; then q_i = c0, qd_i = c1 / h, qdd_i = 2 c2 / h². The fit
passes cubics exactly, so a smooth motion loses only what its higher derivatives carry over the
window, while noise is averaged over every sample of it.
"""

import numpy as np

from ..errors import TrajectoryError
from .sources.base import Chunk, check_time

DEGREE = 3
MAX_WINDOW = 20_000  # samples a window may hold: the fits cost that much per sample
MAX_UPSAMPLING = 1_000  # samples --resample may make of one


def fit(t, q, h, centers, begin=None, end=None):
    """(q, qd, qdd) of the cubic fits at the samples `centers` (indices into t), each over the
    samples within h of it; t (N,), q (N, n). Near the trajectory's first time `begin` (or last,
    `end`) the window keeps its length 2h and slides inward. Raises ValueError(center) for a
    window with too few samples."""
    left = t[centers] - h
    if begin is not None:
        left = np.maximum(left, begin)
    if end is not None:
        left = np.minimum(left, end - 2 * h)
        left = np.maximum(left, begin if begin is not None else -np.inf)
    lo = np.searchsorted(t, left, side="left")
    hi = np.searchsorted(t, left + 2 * h, side="right")
    if len(centers) and (hi - lo).min() < DEGREE + 1:
        raise ValueError(int(centers[np.argmin(hi - lo)]))
    reach = int(max((centers - lo).max(initial=0), (hi - 1 - centers).max(initial=0)))
    if reach > MAX_WINDOW:
        raise OverflowError(int(centers[0]))
    M = np.zeros((len(centers), DEGREE + 1, DEGREE + 1))  # sum of w u^(a+b)
    B = np.zeros((len(centers), DEGREE + 1, q.shape[1]))  # sum of w u^a q
    for d in range(-reach, reach + 1):
        j = centers + d
        ok = (j >= lo) & (j < hi)
        jj = np.clip(j, 0, len(t) - 1)
        u = np.where(ok, (t[jj] - t[centers]) / h, 0.0)
        w = ok.astype(float)
        powers = [w]
        for _ in range(2 * DEGREE):  # w u^k by products in order (pow is libm's)
            powers.append(powers[-1] * u)
        powers = np.stack(powers, axis=1)  # (m, 7)
        for a in range(DEGREE + 1):
            M[:, a] += powers[:, a:a + DEGREE + 1]
            B[:, a] += powers[:, a:a + 1] * q[jj]
    c = solve_positive(M, B)  # (m, 4, n)
    return c[:, 0], c[:, 1] / h, 2.0 * c[:, 2] / h ** 2


def solve_positive(M, B):
    """x with M x = B for symmetric positive definite M (m, k, k) and B (m, k, n), by Cholesky in
    element-wise operations over the m systems: LAPACK's solve rounds by the CPU's BLAS kernels
    (with or without FMA). np.linalg.LinAlgError where a pivot is not positive."""
    m, k = M.shape[:2]
    L = np.zeros_like(M)
    for j in range(k):
        s = M[:, j, j].copy()
        for p in range(j):
            s -= L[:, j, p] * L[:, j, p]
        if not (s > 0).all():
            raise np.linalg.LinAlgError("not positive definite")
        L[:, j, j] = np.sqrt(s)
        for i in range(j + 1, k):
            s = M[:, i, j].copy()
            for p in range(j):
                s -= L[:, i, p] * L[:, j, p]
            L[:, i, j] = s / L[:, j, j]
    y = np.empty_like(B)
    for i in range(k):  # L y = B
        s = B[:, i].copy()
        for p in range(i):
            s -= L[:, i, p, None] * y[:, p]
        y[:, i] = s / L[:, i, i, None]
    x = np.empty_like(B)
    for i in range(k - 1, -1, -1):  # L^T x = y
        s = y[:, i].copy()
        for p in range(i + 1, k):
            s -= L[:, p, i, None] * x[:, p]
        x[:, i] = s / L[:, i, i, None]
    return x


def smoothed(chunks, traj, window):
    """Chunks with q, qd, qdd from cubic fits over `window` seconds."""
    h = 0.5 * window
    pending = None  # samples read: the context before the first unfinished one, then the unfinished
    done = 0  # how many of pending's first samples were emitted already (context only)
    begin = None
    for c in chunks:
        check_time(traj, c, None if pending is None else pending.time[-1])
        begin = c.time[0] if begin is None else begin
        pending = c if pending is None else pending.then(c)
        t = pending.time
        # finished: every sample of the window was read (the window of an early sample ends at begin + 2h)
        right = np.maximum(t + h, begin + 2 * h)
        ready = int(np.searchsorted(right, t[-1], side="right"))
        if ready > done:
            yield _fitted(pending, done, ready, h, traj, window, begin, None)
        done = max(ready, done)
        keep = int(np.searchsorted(t, t[done] - 2 * h, side="left")) if done < len(pending) else done
        pending, done = pending.sliced(keep, len(pending)), done - keep
    if pending is None:
        raise TrajectoryError(traj.label, None, "no samples")
    if done < len(pending):
        yield _fitted(pending, done, len(pending), h, traj, window, begin, pending.time[-1])
    if pending.time[-1] - begin < window:
        traj.notices.append(f"warning: --smooth {window:g} s is longer than the run ({pending.time[-1] - begin:.6g} s): "
                            "one cubic is fitted to all of it")


def _fitted(c, i, j, h, traj, window, begin, end):
    try:
        q, qd, qdd = fit(c.time, c.q, h, np.arange(i, j), begin, end)
    except ValueError as exc:
        k = exc.args[0]
        raise TrajectoryError(traj.label, traj.where(c.start + k), f"fewer than {DEGREE + 1} samples within "
                                                                  f"--smooth {window:g} s: use a longer window") from None
    except OverflowError as exc:
        raise TrajectoryError(traj.label, traj.where(c.start + exc.args[0]), f"--smooth {window:g} s holds more than "
                                                                            f"{MAX_WINDOW:,} samples: use a shorter "
                                                                            "window") from None
    except np.linalg.LinAlgError:
        raise TrajectoryError(traj.label, traj.where(c.start + i), "the samples of a --smooth window do not "
                                                                  "determine a cubic (repeated times?)") from None
    out = c.sliced(i, j)
    out.data = out.data | {"q": np.asfortranarray(q), "qd": np.asfortranarray(qd), "qdd": np.asfortranarray(qdd)}
    return out


def resampled(chunks, traj, rate):
    """Chunks interpolated linearly onto t0 + k / rate, up to the last time (quaternions renormalised)."""
    step = 1.0 / rate
    last = None  # the last sample read, to interpolate across chunk boundaries
    k = 0  # next grid index
    t0 = None
    for c in chunks:
        check_time(traj, c, None if last is None else last.time[-1])
        t0 = c.time[0] if t0 is None else t0
        both = c if last is None else last.then(c)
        last_k = (both.time[-1] - t0) / step
        if not last_k - k < MAX_UPSAMPLING * (len(c) + 1):
            raise TrajectoryError(traj.label, traj.where(c.start), f"--resample {rate:g} Hz makes more than "
                                                                  f"{MAX_UPSAMPLING:,} samples of each one here")
        grid = t0 + step * np.arange(k, int(np.floor(last_k + 1e-9)) + 1)
        if len(grid):
            data = {g: _interpolate(both.time, x, grid) for g, x in both.data.items()}
            if "base_pose" in data:
                quat = data["base_pose"][:, 3:]
                norm = np.sqrt(quat[:, 0] * quat[:, 0] + quat[:, 1] * quat[:, 1] + quat[:, 2] * quat[:, 2]
                               + quat[:, 3] * quat[:, 3])
                data["base_pose"][:, 3:] = quat / norm[:, None]
            yield Chunk(k, grid, data)
            k += len(grid)
        last = c.sliced(len(c) - 1, len(c))
    if t0 is None:
        raise TrajectoryError(traj.label, None, "no samples")


def _interpolate(t, x, grid):
    out = np.empty((len(grid), x.shape[1]), order="F")
    for col in range(x.shape[1]):
        out[:, col] = np.interp(grid, t, x[:, col])
    return out
