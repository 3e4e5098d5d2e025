"""Payload capacity: the largest mass m >= 0 rigidly attached to a link for which every limit holds
at every sample of the trajectory.

RNEA is linear in the bodies' inertias, and a payload's inertia is m times a fixed unit inertia
(a point mass, or a uniform box), so each joint's effort is e(m) = e0 + m e1: e0 from the
trajectory as it is, e1 from one more pass with a model whose only mass is the unit payload. Peak
limits bound m linearly per sample; an RMS limit is a quadratic in m; a motor's RMS with gearbox
efficiency is convex and piecewise quadratic in m (bounds.convex_rms_limit). The capacity is the
first m at which a limit breaks as m grows from 0.
"""

from dataclasses import dataclass, field, replace

import numpy as np

from ...dynamics import spatial
from ...errors import RneaError, shown
from ..stats import ExactSum
from . import bounds

MAX_STORED = 1 << 26  # samples kept for a motor RMS limit (3 doubles each, per joint)
MAX_PAYLOAD = 1e6  # the capacities looked for, in robot masses (as scale's MAX_FACTOR)


@dataclass
class Payload:
    link: str
    at: tuple
    box: tuple | None
    max_payload: float | None  # kg; None when the motion breaks a limit without payload
    unbounded: bool
    limiting: dict | None  # {"joint", "quantity", "sample", "time"}
    feasible_without_payload: bool
    zero: object = field(repr=False, default=None)  # the LimitCheck of the motion without payload

    def to_json(self):
        return {"link": self.link, "at": list(self.at), "box": None if self.box is None else list(self.box),
                "max_payload": self.max_payload, "unbounded": self.unbounded, "limiting": self.limiting,
                "feasible_without_payload": self.feasible_without_payload}


def unit_model(model, link_name, at=(0.0, 0.0, 0.0), box=None):
    """The model with no mass but 1 kg at `at` in the link's frame (a point, or a uniform box of
    edge lengths `box` along the link's axes, centred there)."""
    links = {link.name: link for link in model.links}
    if link_name not in links:
        names = ", ".join(shown(name)[1:-1] for name in list(links)[:12])
        raise RneaError("--link", None, f"no link {shown(link_name)}; the robot's links: {names}"
                                        + (", ..." if len(links) > 12 else ""))
    link = links[link_name]
    R, p = link.body_H_link[:3, :3], link.body_H_link[:3, 3]
    Ic = np.zeros((3, 3)) if box is None else np.diag([box[1] ** 2 + box[2] ** 2, box[0] ** 2 + box[2] ** 2,
                                                        box[0] ** 2 + box[1] ** 2]) / 12.0
    I = spatial.mcI(1.0, spatial.dot(R, np.asarray(at, dtype=float)) + p, spatial.dot(spatial.dot(R, Ic), R.T))
    inertia = np.zeros_like(model.inertia)
    root = np.zeros((6, 6))
    if link.body < 0:
        root = I
    else:
        inertia[link.body] = I
    for a in (inertia, root):
        a.setflags(write=False)
    return replace(model, inertia=inertia, root_inertia=root), link


class PayloadSolver:
    """Streams Blocks of the trajectory (and the unit payload's torques) into the capacity."""

    def __init__(self, check, unit_pipeline, drives, has_time):
        self.check, self.unit, self.drives = check, unit_pipeline, drives
        self.best = (np.inf, None)  # (m, limiting)
        n = unit_pipeline.coords.n
        self.sums = ExactSum(3 * n)  # of e1², e0 e1, e0², exact: the same bits in any chunks
        self.count = 0
        self.stored = {}  # joint column -> lists of (e0, e1, qd, time) for motor RMS limits
        self.has_time = has_time

    def update(self, block, traj):
        chunk = block.chunk
        e1 = self.unit.compute(chunk, _NoWrenches(traj)).tau
        e0 = block.effort
        self.sums.add(np.concatenate([e1 * e1, e0 * e1, e0 * e0], axis=1))
        self.count += len(e0)
        for check, i, quantity in self.check.plan:
            if quantity in ("effort", "motor_torque", "envelope"):
                lo, hi = self._bounds(check, i, quantity, chunk)
                m = bounds.first_exit_linear(e0[:, i], e1[:, i], lo, hi)
                self._consider(m, check, quantity, chunk)
            elif quantity == "motor_rms":
                kept = self.stored.setdefault(i, [])
                kept.append((e0[:, i].copy(), e1[:, i].copy(), chunk.qd[:, i].copy(),
                             None if chunk.time is None else chunk.time.copy()))
                if sum(len(k[0]) for k in kept) > MAX_STORED:
                    raise RneaError(traj.label, None, f"more than {MAX_STORED:,} samples for a motor RMS limit")

    def _bounds(self, check, i, quantity, chunk):
        """[lo, hi] the joint's effort must stay in at each sample."""
        if quantity == "effort":
            return -check.allowed, check.allowed
        drive = self.drives[check.joint]
        qd = chunk.qd[:, i]
        limit = check.margin * (drive.peak_torque if quantity == "motor_torque"
                                else drive.available(drive.gear_ratio * qd))
        return drive.effort_range(limit, qd)

    def _consider(self, m, check, quantity, chunk):
        k = int(np.argmin(m))
        if m[k] < self.best[0]:
            self.best = (float(m[k]), {"joint": check.joint, "quantity": quantity, "sample": chunk.start + k,
                                       "time": None if chunk.time is None else float(chunk.time[k])})

    def result(self, link, at, box, robot_mass=0.0):
        """The Payload; unbounded where no limit binds below MAX_PAYLOAD times the robot's mass
        (at least 1 kg): a capacity of 1.6e272 kg, from a motion of 1e-270 rad, is no answer."""
        zero = self.check
        feasible = not zero.violations
        if feasible:
            self._rms_limits()
        m, limiting = self.best
        bounded = m <= MAX_PAYLOAD * max(robot_mass, 1.0)
        unbounded = feasible and not bounded
        return Payload(link, tuple(float(x) for x in at), None if box is None else tuple(float(x) for x in box),
                       float(m) if feasible and bounded else None, bool(unbounded),
                       limiting if feasible and not unbounded else None, feasible, zero)

    def _rms_limits(self):
        A, B, C = self.sums.values().reshape(3, -1) / max(self.count, 1)
        for check, i, quantity in self.check.plan:
            if quantity == "rms_effort":
                m = bounds.largest_within_rms(A[i], B[i], C[i], check.allowed)
            elif quantity == "motor_rms":
                m = self._motor_rms(check, i)
            else:
                continue
            if m < self.best[0]:
                self.best = (float(m), {"joint": check.joint, "quantity": quantity, "sample": None, "time": None})

    def _motor_rms(self, check, i):
        e0, e1, qd, time = (np.concatenate(x) if x[0] is not None else None for x in zip(*self.stored[i]))
        drive = self.drives[check.joint]
        r, eta = drive.gear_ratio, drive.efficiency
        factor = (np.full(len(e0), 1 / (r * eta)), np.full(len(e0), eta / r), np.where(qd >= 0, 1.0, -1.0))
        if check.window and time is not None and time[-1] - time[0] >= check.window:
            ends = np.arange(1, len(time) + 1)
            starts = np.searchsorted(time, time - check.window, side="right")
            full = time - time[0] >= check.window
            windows = (starts[full], ends[full])
        else:
            windows = (np.array([0]), np.array([len(e0)]))
        return bounds.convex_rms_limit(e0, e1, factor, windows, check.allowed)


class _NoWrenches:
    """The trajectory as the unit payload's pass sees it: no external wrenches (they are in e0)."""

    def __init__(self, traj):
        self.label, self.where, self.wrenched = traj.label, traj.where, ()
