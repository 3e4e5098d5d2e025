"""Identification of inertial parameters and joint friction from measured joint efforts.

The effort of a fixed-base robot is linear in its parameters: effort = W(q, qd, qdd) theta, with
W the joint-torque regressor (`inertial.regressor`, 10 columns per body) followed by friction
columns per movable joint: viscous qd_j and Coulomb sign(qd_j) (the URDF's <dynamics damping
friction>, as `rnea torques --friction` adds them), and optionally a constant offset (1) and an
armature (qdd_j). Not every combination of theta shows in the efforts: `base_parameters` finds the
identifiable ones, beta = theta[independent] + K theta[dependent].
"""

import math
from dataclasses import dataclass

import numpy as np

from . import engine, inertial

FRICTION = ("viscous", "coulomb", "offset", "armature")
RANK_TOLERANCE = 1e-9  # |R_kk| / |R_00| below which a column of W is dependent (round-off: ~1e-15)
ZERO = 1e-10  # entries of K smaller than this (in their own units) are round-off, set to 0


@dataclass(frozen=True)
class Layout:
    """The columns of W: 10 per body of the model (`inertial.PARAMETERS`), then for each movable joint
    its friction terms (`terms`, a subset of FRICTION in that order)."""

    model: object
    terms: tuple

    @property
    def joints(self):
        """The joints with friction columns: the movable ones (a kept fixed joint has none)."""
        return [i for i, j in enumerate(self.model.joints) if j.type != "fixed"]

    @property
    def names(self):
        bodies = [f"{j.child_link}.{p}" for j in self.model.joints for p in inertial.PARAMETERS]
        return bodies + [f"{self.model.joints[i].name}.{t}" for i in self.joints for t in self.terms]

    @property
    def size(self):
        return 10 * self.model.n + len(self.terms) * len(self.joints)

    def parameters(self):
        """The model's own theta: its inertias, the URDF's damping (viscous) and friction (Coulomb),
        no offset, no armature."""
        own = {"viscous": lambda j: j.damping, "coulomb": lambda j: j.friction, "offset": lambda j: 0.0,
               "armature": lambda j: 0.0}
        friction = [own[t](self.model.joints[i]) for i in self.joints for t in self.terms]
        return np.concatenate([inertial.parameters(self.model, floating=False), friction])

    def regressor(self, q, qd, qdd, *, gravity=engine.GRAVITY):
        """W (N, movable joints, size) for (N, n) q, qd, qdd: effort = W theta. A kept fixed joint has
        no row: what it carries is no measured effort. The samples are W's fastest axis in memory."""
        Y = inertial.regressor(self.model, q, qd, qdd, gravity=gravity)
        rows, N = self.joints, len(Y)
        W = np.zeros((self.size, len(rows), N)).transpose(2, 1, 0)
        W[:, :, :Y.shape[2]] = Y[:, rows]
        column = {"viscous": lambda i: qd[:, i], "coulomb": lambda i: np.sign(qd[:, i]),
                  "offset": lambda i: np.ones(N), "armature": lambda i: qdd[:, i]}
        k = Y.shape[2]
        for r, i in enumerate(rows):
            for t in self.terms:
                W[:, r, k] = column[t](i)
                k += 1
        return W


def layout(model, *, friction=True, offset=False, armature=False):
    """The Layout of W for a model: friction adds viscous and Coulomb columns, offset and armature theirs."""
    terms = tuple(t for t, on in zip(FRICTION, (friction, friction, offset, armature)) if on)
    return Layout(model, terms)


@dataclass(frozen=True)
class BaseParameters:
    """The identifiable combinations of theta: beta = theta[independent] + K theta[dependent].

    W[..., dependent] = W[..., independent] K for every motion, so effort = W[..., independent] beta.
    A dependent parameter with a zero column of K does not show in the efforts at all."""

    layout: Layout
    rank: int
    independent: np.ndarray  # (rank,) columns of W, ascending
    dependent: np.ndarray  # (size - rank,) the others, ascending
    K: np.ndarray  # (rank, size - rank)
    tolerance: float

    def beta(self, theta):
        """(rank,) base parameters of a full theta."""
        theta = np.asarray(theta, dtype=float)
        return theta[self.independent] + self.K @ theta[self.dependent]

    def names(self):
        """Each base parameter written out, e.g. 'link2.mx + 0.425 link3.m'."""
        names = self.layout.names
        out = []
        for r, i in enumerate(self.independent):
            terms = [names[i]] + [f"{self.K[r, k]:+.6g} {names[j]}" for k, j in enumerate(self.dependent)
                                  if self.K[r, k] != 0.0]
            out.append(" ".join(terms))
        return out


def base_parameters(model, *, gravity=engine.GRAVITY, friction=True, offset=False, armature=False, samples=None,
                    seed=0, tolerance=RANK_TOLERANCE):
    """The identifiable combinations of a fixed-base model's parameters (and friction terms), found
    numerically: W stacked over random samples (q uniform in each joint's limits, [-pi, pi] for a
    continuous joint, [-1, 1] m for a prismatic one without limits; qd, qdd standard normal). The
    rank is that of QR with column pivoting (|R_kk| > tolerance |R_00|; W's columns are not scaled:
    scaling would blow round-off in a column that is zero but for it up to unit size); the
    independent columns are the first ones in W's order that are not combinations of those before
    them (unpivoted QR, the same test), and K the least-squares fit of the others on them, with
    entries below ZERO set to 0. samples: default enough for 4 rows a column. Returns a
    BaseParameters."""
    from scipy.linalg import qr, solve_triangular

    cols = layout(model, friction=friction, offset=offset, armature=armature)
    N = samples or max(100, math.ceil(4 * cols.size / max(model.n, 1)))
    q, qd, qdd = random_motion(model, N, np.random.default_rng(seed))
    W = cols.regressor(q, qd, qdd, gravity=gravity).reshape(-1, cols.size)
    R = qr(W, mode="r", pivoting=True)[0]
    diagonal = np.abs(np.diag(R))
    rank = int(np.sum(diagonal > tolerance * diagonal[0])) if diagonal.size and diagonal[0] > 0 else 0
    # which columns: the first ones in W's order (root to tip) that are not combinations of those
    # before them, as textbooks regroup (a body's m, mz into its parent's parameters)
    R = qr(W, mode="r")[0]
    independent = np.flatnonzero(np.abs(np.diag(R)) > tolerance * diagonal[0]) if rank else np.zeros(0, int)
    if len(independent) != rank:  # round-off at the edge of the tolerance: the pivoted choice instead
        independent = np.sort(qr(W, mode="r", pivoting=True)[1][:rank])
    dependent = np.setdiff1d(np.arange(cols.size), independent)
    # W[:, dependent] = W[:, independent] K, from the triangular factor of the independent columns
    Q, R = qr(W[:, independent], mode="economic")
    K = solve_triangular(R, Q.T @ W[:, dependent]) if rank else np.zeros((0, len(dependent)))
    K[np.abs(K) < ZERO] = 0.0
    return BaseParameters(cols, rank, independent, dependent, K, tolerance)


def random_motion(model, N, rng):
    """(q, qd, qdd), each (N, n): q uniform in each joint's range, qd and qdd standard normal; a kept
    fixed joint's are 0."""
    q = np.empty((N, model.n))
    for i, j in enumerate(model.joints):
        lower, upper = j.limits.lower, j.limits.upper
        if lower is None or upper is None or lower >= upper:
            lower, upper = (-math.pi, math.pi) if j.is_angular else (-1.0, 1.0)
        q[:, i] = rng.uniform(lower, upper, N)
    qd, qdd = rng.standard_normal((N, model.n)), rng.standard_normal((N, model.n))
    fixed = [i for i, j in enumerate(model.joints) if j.type == "fixed"]
    q[:, fixed] = qd[:, fixed] = qdd[:, fixed] = 0.0
    return q, qd, qdd
