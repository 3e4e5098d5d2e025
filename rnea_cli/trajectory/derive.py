"""What a source does not give, derived from what it does: qd and qdd by finite differences (or by
local polynomial fits, `smooth`), the floating base's twist from its pose; and the conversions
every source shares (degrees, a sample period, unit quaternions). Streams across chunk
boundaries: each step keeps the few samples of overlap it needs."""

import math
from dataclasses import replace

import numpy as np

from ..errors import TrajectoryError
from .sources.base import Chunk, check_time
from .sources.clock import MOST_TIME
from ..dynamics.spatial import quaternion_matrix

QUATERNION_WARN, QUATERNION_ERROR = 1e-6, 1e-2


def prepare(traj, coords, *, degrees=False, dt=None, floating=False, static=False, smooth=None, resample=None):
    """A new trajectory (the one given is not changed) with q, qd, qdd (and the base twist)
    complete, in radians and seconds. static: q only; qd = qdd = 0 (poses held still). smooth: a
    window in seconds for local cubic fits (see smoothing.py); resample: a rate in Hz to
    interpolate onto first."""
    label = traj.label
    if dt is not None and traj.has_time:
        raise TrajectoryError(label, None, "--dt is for a trajectory without a time column, and this one has one")
    has_time = traj.has_time or dt is not None
    if (smooth is not None or resample is not None) and not has_time:
        raise TrajectoryError(label, None, "--smooth and --resample need a time column (or --dt)")
    derived = tuple(g for g in traj.derived if g not in ("qd", "qdd")) if static else traj.derived
    if smooth is not None:  # the fits give qd and qdd; the base twist, if missing, still by differences
        derived = tuple(g for g in derived if g.startswith("base"))
    elif derived and not has_time:
        what, _ = describe(derived)
        lacking = "no time column and no velocities" if "qd" in derived else "no time column"
        raise TrajectoryError(label, None, f"{lacking}: cannot derive {what} (give --dt or the columns)")
    # what the chunks below see: the trajectory as it will be (samples are no longer rows once resampled)
    out = replace(traj, has_time=has_time, derived=derived, line=None if resample is not None else traj.line)
    chunks = traj.chunks
    if dt is not None:
        chunks = _with_time(chunks, dt)
    if has_time:
        chunks = _plausible_time(chunks, out, "--dt" if dt is not None else "another unit? see --time-unit")
    if degrees:
        chunks = _to_radians(chunks, np.array([j.is_angular for j in coords.joints]))
    if floating:  # unit quaternions, each with the sign of the one before (for --resample and derivatives)
        chunks = _continuous_quaternions(_unit_quaternions(chunks, out))
    if static:
        if any(g in traj.groups for g in ("qd", "qdd")):
            out.notices.append("--static: the qd and qdd columns are ignored (the poses are held still)")
        chunks = _at_rest(chunks)
    if resample is not None:
        from .smoothing import resampled

        chunks = resampled(chunks, out, resample)
    if smooth is not None:
        from .smoothing import smoothed

        chunks = smoothed(chunks, out, smooth)
        out.notices.append(f"q, qd and qdd by local cubic fits over {smooth:g} s windows (--smooth)")
        if derived:
            chunks = _differentiate(_continuous_quaternions(chunks), out)
    elif derived:
        chunks = _differentiate(chunks, out)
        out.notices.append(f"{describe(derived)[1]} and time by second-order finite differences")
    elif has_time and dt is None:
        chunks = _forward_in_time(chunks, out)
    return replace(out, chunks=chunks)


def describe(derived):
    """(what is derived, what from what) for messages: ('qd and qdd', 'qd and qdd derived from q')."""
    joints = [x for x in derived if x in ("qd", "qdd")]
    base = {("base_twist", "base_dtwist"): ("the base twist and its derivative", "the base pose"),
            ("base_dtwist",): ("the base twist's derivative", "the twist")}.get(
        tuple(x for x in derived if x.startswith("base")))
    what = [" and ".join(joints)] if joints else []
    source = [f"{what[0]} derived from {'q' if 'qd' in joints else 'qd'}"] if joints else []
    if base:
        what.append(base[0])
        source.append(f"{base[0]} derived from {base[1]}")
    return ", ".join(what), "; ".join(source)


def _with_time(chunks, dt):
    for c in chunks:
        yield Chunk(c.start, (c.start + np.arange(len(c))) * float(dt), c.data)


def _to_radians(chunks, angular):
    scale = np.where(angular, math.pi / 180.0, 1.0)
    for c in chunks:
        yield Chunk(c.start, c.time, {k: x * scale if k in ("q", "qd", "qdd") else x for k, x in c.data.items()})


def _at_rest(chunks):
    for c in chunks:
        zero = np.zeros_like(c.q, order="F")
        yield Chunk(c.start, c.time, c.data | {"qd": zero, "qdd": zero})


def _unit_quaternions(chunks, traj):
    """Normalise base quaternions: a warning above QUATERNION_WARN off unit norm, an error above QUATERNION_ERROR."""
    warned = False
    for c in chunks:
        quat = c.data["base_pose"][:, 3:]
        norm = np.sqrt(quat[:, 0] * quat[:, 0] + quat[:, 1] * quat[:, 1] + quat[:, 2] * quat[:, 2]
                       + quat[:, 3] * quat[:, 3])  # in order (np.linalg.norm's sum may be BLAS's)
        off = np.abs(norm - 1.0)
        bad = np.flatnonzero(~(off <= QUATERNION_ERROR))
        if bad.size:
            k = int(bad[0])
            raise TrajectoryError(traj.label, traj.where(c.start + k),
                                  f"base quaternion has norm {norm[k]:.6g}, not 1 (more than {QUATERNION_ERROR:g} off)")
        if not warned and off.size and off.max() > QUATERNION_WARN:
            k = int(off.argmax())
            traj.notices.append(f"warning: base quaternions normalised (norm {norm[k]:.9g} at {traj.where(c.start + k)})")
            warned = True
        c.data["base_pose"] = np.column_stack([c.data["base_pose"][:, :3], quat / norm[:, None]])
        yield c


def _continuous_quaternions(chunks):
    """Base quaternions with the sign of the one before (q and -q are the same orientation), so
    that they can be differentiated."""
    last = None
    for c in chunks:
        Q = c.data["base_pose"][:, 3:]
        before = np.concatenate([Q[:1] if last is None else last, Q[:-1]])
        dots = Q[:, 0] * before[:, 0] + Q[:, 1] * before[:, 1] + Q[:, 2] * before[:, 2] + Q[:, 3] * before[:, 3]
        flips = np.logical_xor.accumulate(dots < 0)  # an odd number of sign changes so far in this chunk
        if flips.any():
            pose = c.data["base_pose"].copy()
            pose[:, 3:] *= np.where(flips, -1.0, 1.0)[:, None]
            c.data["base_pose"] = pose
        last = c.data["base_pose"][-1:, 3:]
        yield c


def derivative(t, f):
    """df/dt at every t (axis 0), second order on a non-uniform grid: 3-point Lagrange, one-sided at the ends."""
    h = np.diff(t)[:, None] if f.ndim == 2 else np.diff(t)
    h1, h2 = h[:-1], h[1:]
    s = np.diff(f, axis=0) / h  # the slopes between samples: exactly 0 where f stands still
    d = np.empty_like(f)
    # interior: f'_i = -h2/(h1(h1+h2)) f_{i-1} + (h2-h1)/(h1 h2) f_i + h1/(h2(h1+h2)) f_{i+1},
    # written as the weighted mean of the slopes on either side
    d[1:-1] = (h2 * s[:-1] + h1 * s[1:]) / (h1 + h2)
    # ends: the derivative of the quadratic through the first / last three points (Newton's form)
    a, b = h[0], h[1]
    d[0] = s[0] - a * (s[1] - s[0]) / (a + b)
    a, b = h[-2], h[-1]
    d[-1] = s[-1] + b * (s[-1] - s[-2]) / (a + b)
    return d


def base_twist(t, pose):
    """(N, 6) [w; v] of the base in its own frame, from (N, 7) poses (x, y, z, qx, qy, qz, qw) at
    times t: w = 2 vec(conj(Q) dQ/dt), v = R^T dp/dt. The quaternions must not change sign
    between samples (see `_continuous_quaternions`)."""
    Q = pose[:, 3:]
    dQ, dp = derivative(t, Q), derivative(t, pose[:, :3])
    u, w = Q[:, :3], Q[:, 3:]
    omega = 2 * (w * dQ[:, :3] - dQ[:, 3:] * u - np.cross(u, dQ[:, :3]))
    R = quaternion_matrix(Q)  # R^T dp summed in order, element by element (an einsum may fuse and reorder)
    v = (R[0] * dp[:, 0] + R[1] * dp[:, 1] + R[2] * dp[:, 2]).T
    return np.concatenate([omega, v], axis=1)


def _plausible_time(chunks, traj, hint):
    """The chunks, their times checked to lie within MOST_TIME of 0, so that every span and rate
    of them is finite."""
    for c in chunks:
        bad = np.flatnonzero(~(np.abs(c.time) <= MOST_TIME))
        if bad.size:
            k = int(bad[0])
            raise TrajectoryError(traj.label, traj.where(c.start + k), f"time {float(c.time[k])!r} s is more than "
                                                                       f"{MOST_TIME:g} s from 0 ({hint})")
        yield c


def _forward_in_time(chunks, traj):
    """The chunks, their time (not differentiated: the rates are given) checked never to go back,
    as the thermal windows and the times of peaks need."""
    previous = None
    for c in chunks:
        if c.time is not None and len(c):
            check_time(traj, c, previous, strict=False)
            previous = c.time[-1]
        yield c


def _differentiate(chunks, traj):
    """Fill what traj.derived names across chunk boundaries, keeping 4 samples of overlap."""
    tail = None  # the last samples of the previous chunk, still to be finished
    first = True
    for c in chunks:
        check_time(traj, c, None if tail is None else tail.time[-1])
        if tail is not None:
            c = tail.then(c)
        if len(c) < 5:
            tail = c
            continue
        done = _derive(c, traj)
        yield done.sliced(0 if first else 2, len(c) - 2)  # rows before 2 were emitted with the last chunk
        tail = c.sliced(len(c) - 4, len(c))
        first = False
    if tail is None:
        raise TrajectoryError(traj.label, None, "no samples")
    if len(tail) < 3:
        raise TrajectoryError(traj.label, None, f"{len(tail)} sample{'s' if len(tail) > 1 else ''}: at least 3 are "
                                                f"needed to derive {describe(traj.derived)[0]}")
    yield _derive(tail, traj).sliced(0 if first else 2, len(tail))


def _derive(c, traj):
    t, data = c.time, dict(c.data)
    with np.errstate(all="ignore"):  # a step too small overflows: reported below, by the sample
        if "qd" in traj.derived:
            data["qd"] = derivative(t, c.q)
        if "qdd" in traj.derived:
            data["qdd"] = derivative(t, data["qd"])
        if "base_twist" in traj.derived:
            data["base_twist"] = base_twist(t, data["base_pose"])
        if "base_dtwist" in traj.derived:
            data["base_dtwist"] = derivative(t, data["base_twist"])
    for group in traj.derived:
        finite = np.isfinite(data[group]).all(axis=1)
        if not finite.all():
            k = int(np.argmin(finite))
            step = np.diff(t[max(k - 1, 0):k + 2]).min()
            raise TrajectoryError(traj.label, traj.where(c.start + k),
                                  f"{group} derived here is not finite: time steps of {step:.3g} s are too small "
                                  "for these values")
    return Chunk(c.start, t, data)
