"""Identification of inertial parameters and joint friction from measured joint efforts.

The effort of a fixed-base robot is linear in its parameters: effort = W(q, qd, qdd) theta, with
W the joint-torque regressor (`inertial.regressor`, 10 columns per body) followed by friction
columns per movable joint: viscous qd_j and Coulomb sign(qd_j) (the URDF's <dynamics damping
friction>, as `rnea torques --friction` adds them), and optionally a constant offset (1) and an
armature (qdd_j). Not every combination of theta shows in the efforts: `base_parameters` finds the
identifiable ones, beta = theta[independent] + K theta[dependent].

Efforts stream in chunks into per-joint normal equations (`NormalEquations`); `ols` gives the
noise-weighted least-squares base parameters with standard errors, `estimate` the physically
consistent parameters of every body (pseudo-inertia positive definite) with a prior around the
URDF's values.
"""

import math
from dataclasses import dataclass

import numpy as np

from ...dynamics import engine, inertial, spatial
from ...errors import RneaError, shown
from . import fixed_linalg as fl
from .fixed_linalg import BLOCK, block_grams

FRICTION = ("viscous", "coulomb", "offset", "armature")
RANK_TOLERANCE = 1e-9  # |R_kk| / |R_00| below which a column of W is dependent (round-off: ~1e-15)
ZERO = 1e-10  # entries of K smaller than this (in their own units) are round-off, set to 0
STEP = 8 * BLOCK  # samples whose regressor is made at once (memory: 7 joints, 84 columns, 38 MB)


@dataclass(frozen=True, eq=False)
class Block:
    """Ten columns of W: one link's parameters (`inertial.PARAMETERS`) in its own frame. whole: they
    are its body's, every link fixed to it included; else the link's alone, the rest of its body
    held at the URDF's values. moved: the (10, 10) T with the body's parameters = T the link's
    (None: the link's frame is the body's)."""

    link: str
    body: int
    moved: np.ndarray | None = None
    whole: bool = True


@dataclass(frozen=True, eq=False)
class Layout:
    """The columns of W: 10 per block (by default each body of the model; with `links`, each link
    named, `Block`), then for each movable joint its friction terms (`terms`, a subset of FRICTION
    in that order). held: (10 n,) the parameters of each body that are not identified (the URDF's),
    whose effort is subtracted from the measured one (None: every body is identified)."""

    model: object
    terms: tuple
    links: tuple = ()  # Blocks of the links named; () for every body whole
    held: np.ndarray | None = None

    @property
    def blocks(self):
        """The Blocks of W's inertial columns, in their order."""
        return self.links or tuple(Block(j.child_link, i) for i, j in enumerate(self.model.joints))

    @property
    def joints(self):
        """The joints with friction columns: the movable ones (a kept fixed joint has none)."""
        return [i for i, j in enumerate(self.model.joints) if j.type != "fixed"]

    @property
    def names(self):
        bodies = [f"{b.link}.{p}" for b in self.blocks for p in inertial.PARAMETERS]
        return bodies + [f"{self.model.joints[i].name}.{t}" for i in self.joints for t in self.terms]

    @property
    def prior_weight(self):
        """The prior's default weight: PRIOR_WEIGHT on a CAD model's bodies; 0 on links named, whose
        URDF values are a guess (a payload's 0.1 kg, no inertia: a prior there outweighs the data)."""
        return 0.0 if self.links else PRIOR_WEIGHT

    @property
    def inertial(self):
        """The number of inertial columns: 10 a block; friction's follow."""
        return 10 * len(self.blocks)

    @property
    def size(self):
        return self.inertial + len(self.terms) * len(self.joints)

    def parameters(self):
        """The model's own theta: its inertias (a link's own for a link named), the URDF's damping
        (viscous) and friction (Coulomb), no offset, no armature."""
        own = {"viscous": lambda j: j.damping, "coulomb": lambda j: j.friction, "offset": lambda j: 0.0,
               "armature": lambda j: 0.0}
        friction = [own[t](self.model.joints[i]) for i in self.joints for t in self.terms]
        if not self.links:
            return np.concatenate([inertial.parameters(self.model, floating=False), friction])
        rows = {row.name: row for row in self.model.links}
        return np.concatenate([inertial.dynamic_parameters(rows[b.link].inertia) for b in self.links] + [friction])

    def regressor(self, q, qd, qdd, *, gravity=engine.GRAVITY):
        """W (N, movable joints, size) for (N, n) q, qd, qdd: effort = W theta (+ the held part,
        `regressor_and_held`). A kept fixed joint has no row: what it carries is no measured effort.
        The samples are W's fastest axis in memory."""
        return self.regressor_and_held(q, qd, qdd, gravity=gravity)[0]

    def regressor_and_held(self, q, qd, qdd, *, gravity=engine.GRAVITY):
        """W, and the effort (N, movable joints) of the parameters held at the URDF's (None when
        every body is identified): effort = W theta + held. A link's columns are its body's times
        its T, and the held effort the body columns times `held`, summed term by term in a fixed
        order (element-wise: a sample's bits do not depend on its chunk)."""
        Y = inertial.regressor(self.model, q, qd, qdd, gravity=gravity)
        rows, N = self.joints, len(Y)
        W = np.zeros((self.size, len(rows), N)).transpose(2, 1, 0)
        Y = Y[:, rows]
        if not self.links:
            W[:, :, :Y.shape[2]] = Y
        for k, block in enumerate(self.links):
            body = Y[:, :, 10 * block.body:10 * block.body + 10]
            for c in range(10):
                W[:, :, 10 * k + c] = body[:, :, c] if block.moved is None else _combination(body, block.moved[:, c])
        column = {"viscous": lambda i: qd[:, i], "coulomb": lambda i: np.sign(qd[:, i]),
                  "offset": lambda i: np.ones(N), "armature": lambda i: qdd[:, i]}
        k = self.inertial
        for r, i in enumerate(rows):
            for t in self.terms:
                W[:, r, k] = column[t](i)
                k += 1
        return W, None if self.held is None else _combination(Y, self.held)


def _combination(Y, w):
    """sum_k Y[..., k] w[k] over the nonzero w[k], in order: element-wise, so each sample's bits
    are its own (a BLAS product may group terms by CPU and size)."""
    out = np.zeros(Y.shape[:-1])
    for k in np.flatnonzero(w):
        out += Y[..., k] * w[k]
    return out


def layout(model, *, friction=True, offset=False, armature=False, links=None):
    """The Layout of W for a model: friction adds viscous and Coulomb columns, offset and armature
    theirs. links: names of the links whose parameters (10 each, in the link's own frame) are
    identified, everything else held at the URDF's values (default: every body's). A link fixed
    to a moving one (a payload on the tool) is identified alone, the rest of its body held; a
    link of the fixed base, a name that is no link, or two links of one body (only their sum
    shows in the efforts) are refused."""
    terms = tuple(t for t, on in zip(FRICTION, (friction, friction, offset, armature)) if on)
    if links is None:
        return Layout(model, terms)
    links = [links] if isinstance(links, str) else list(links)
    blocks = tuple(_block(model, name, links) for name in dict.fromkeys(links))
    if not blocks:
        raise IdentificationError(model.source, None, "--links names no link")
    held = inertial.parameters(model, floating=False)
    chosen = {b.link for b in blocks}
    for body in {b.body for b in blocks}:  # the rest of a body with a link named: its other links
        rest = [inertial.dynamic_parameters(spatial.inertia_to(row.inertia, spatial.xup(row.body_H_link)))
                for row in model.links if row.body == body and row.name not in chosen]
        held[10 * body:10 * body + 10] = np.sum(rest, axis=0) if rest else 0.0
    return Layout(model, terms, blocks, held)


def _block(model, name, names):
    """The Block of link `name`, or an IdentificationError saying why it cannot be identified."""
    rows = {row.name: row for row in model.links}
    row = rows.get(name)
    if row is None:
        known = ", ".join(r.name for r in model.links[:8]) + (", ..." if len(model.links) > 8 else "")
        raise IdentificationError(model.source, None, f"--links: no link {shown(name)} in the robot (its links: "
                                                      f"{known})")
    if row.body < 0:
        raise IdentificationError(model.source, None, f"--links: link {shown(name)} is the fixed base"
                                  + ("" if name == model.root_link else f" (fixed to {model.root_link})")
                                  + ": no joint moves it, no effort shows its mass")
    moving = model.joints[row.body].child_link
    for other in names:
        if other != name and rows.get(other) is not None and rows[other].body == row.body:
            raise IdentificationError(model.source, None, f"--links: links {shown(name)} and {shown(other)} are "
                                                          f"one rigid body (fixed to {moving}): only their sum "
                                                          "shows in the efforts; name one")
    same = np.array_equal(row.body_H_link, np.eye(4))
    return Block(name, row.body, None if same else inertial.moved(row.body_H_link), whole=False)


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
        return theta[self.independent] + fl.matvec(self.K, theta[self.dependent])

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
                    seed=0, tolerance=RANK_TOLERANCE, coords=None, links=None):
    """The identifiable combinations of a fixed-base model's parameters (and friction terms), found
    numerically: W stacked over random samples (q uniform in each joint's limits, [-pi, pi] for a
    continuous joint, [-1, 1] m for a prismatic one without limits; qd, qdd standard normal). The
    rank is that of QR with column pivoting (|R_kk| > tolerance |R_00|; W's columns are not scaled:
    scaling would blow round-off in a column that is zero but for it up to unit size); the
    independent columns are the first ones in W's order that are not combinations of those before
    them (unpivoted QR, the same test), and K the least-squares fit of the others on them, with
    entries below ZERO set to 0. samples: default enough for 4 rows a column. links: of those links
    only, the rest held (`layout`). Returns a BaseParameters."""
    from scipy.linalg import qr

    if not hasattr(model, "joints") or not hasattr(model, "inertia"):
        raise RneaError("base_parameters", None, f"expected a Model (rnea_cli.load_urdf), not {type(model).__name__}")
    if model.n == 0:
        raise IdentificationError(model.source, None, "the robot has no movable joint: no parameter shows in efforts")
    cols = layout(model, friction=friction, offset=offset, armature=armature, links=links)
    N = samples or max(100, math.ceil(4 * cols.size / max(model.n, 1)))
    if coords is not None and coords.followers:  # mimic followers move with their leaders: what shows then
        q, qd, qdd = coords.expand(*random_motion(coords, N, np.random.default_rng(seed)))
    else:
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
    # W[:, dependent] = W[:, independent] K, the least-squares fit in a fixed order (the same bits on
    # every CPU: K enters the estimate; the QRs above only decide the rank and which columns)
    K = fl.lstsq(W[:, independent], W[:, dependent], rcond=0.0) if rank else np.zeros((0, len(dependent)))
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


class IdentificationError(RneaError):
    """Data that cannot identify the parameters asked for (too few samples, a joint that never
    moves, no convergence); `source` names the robot."""


class NormalEquations:
    """Per joint j the normal equations of W theta = effort, summed chunk by chunk:
    G[j] = sum W_j^T W_j, b[j] = sum W_j^T effort_j, c[j] = sum effort_j², with W_j joint j's row.

    Samples are summed in blocks of `fixed_linalg.BLOCK` by their index in the whole run, each
    block's sums within about an ulp of exact and the same bits on every CPU (`block_grams`), the
    blocks added in order: the same bits however the run is cut into chunks, on whatever CPU. A row
    of W is zero outside the columns of the bodies the joint carries and its own friction: only
    those are multiplied."""

    def __init__(self, layout, gravity=engine.GRAVITY):
        self.layout, self.gravity = layout, np.asarray(gravity, dtype=float)
        model, p = layout.model, layout.size
        chains = inertial.plan(model, False).chain
        friction = {i: layout.inertial + r * len(layout.terms) for r, i in enumerate(layout.joints)}
        self.columns = [np.array([10 * b + k for b, block in enumerate(layout.blocks) if i in chains[block.body]
                                  for k in range(10)]
                                 + [friction[i] + t for t in range(len(layout.terms))], dtype=int)
                        for i in layout.joints]
        n = len(layout.joints)
        self.G, self.b, self.c = np.zeros((n, p, p)), np.zeros((n, p)), np.zeros(n)
        # per joint [[G, b], [b^T, c]] over its own columns: what the blocks are added to
        self._totals = [np.zeros((len(cols) + 1, len(cols) + 1)) for cols in self.columns]
        self.count = 0
        self.moved = np.zeros(n, dtype=bool)  # each joint's qd was not 0 somewhere
        self._pending = None  # (W, effort) of samples not yet a whole block

    def add(self, q, qd, qdd, effort):
        """One chunk of samples: (N, n) q, qd, qdd of every model joint, (N, movable) effort. The
        effort of what the layout holds at the URDF's values is taken off it: the equations are
        those of the parameters identified."""
        q, qd, qdd, effort = (np.asarray(x, dtype=float) for x in (q, qd, qdd, effort))
        for start in range(0, max(len(q), 1), STEP):  # W a STEP at a time: bounded memory
            rows = slice(start, start + STEP)
            self._add(q[rows], qd[rows], qdd[rows], effort[rows])

    def _add(self, q, qd, qdd, effort):
        W, held = self.layout.regressor_and_held(q, qd, qdd, gravity=self.gravity)
        if effort.shape != W.shape[:2]:
            raise ValueError(f"effort has shape {effort.shape}; expected {W.shape[:2]}")
        if held is not None:
            effort = effort - held
        self.moved |= np.any(qd[:, self.layout.joints] != 0.0, axis=0)
        if self._pending is not None:  # complete the block begun in the chunk before
            need = BLOCK - len(self._pending[0])
            head = np.concatenate([self._pending[0], W[:need]]), np.concatenate([self._pending[1], effort[:need]])
            self._pending = None
            if len(head[0]) < BLOCK:
                self._pending = head
                return
            self._sum(*head)
            W, effort = W[need:], effort[need:]
        whole = len(W) // BLOCK * BLOCK
        if whole:
            self._sum(W[:whole], effort[:whole])
        self._pending = (W[whole:].copy(), effort[whole:].copy()) if whole < len(W) else None

    def finish(self):
        """Adds the last, partial block; returns self."""
        if self._pending is not None:
            self._sum(*self._pending)
            self._pending = None
        return self

    def _sum(self, W, effort):
        """Adds the samples of W (N, movable, size) and effort (N, movable): whole blocks, or the
        run's last partial one, each block's sums added in order to the totals."""
        N = len(W)
        self.count += N
        K = min(N, BLOCK)
        Wt = W.transpose(2, 1, 0)  # (size, movable, N): the regressor's own memory order
        for r, cols in enumerate(self.columns):
            Z = np.empty((len(cols) + 1, N))
            Z[:-1], Z[-1] = Wt[cols, r], effort[:, r]
            total = self._totals[r]
            for gram in block_grams(Z.reshape(len(cols) + 1, N // K, K)):
                total += gram
            self.G[r][np.ix_(cols, cols)] = total[:-1, :-1]
            self.b[r, cols] = total[:-1, -1]
            self.c[r] = total[-1, -1]

    def rss(self, theta):
        """(movable,) each joint's sum of squared residuals of effort - W theta."""
        return np.array([fl.dot(theta, fl.matvec(G, theta)) - 2 * fl.dot(theta, b) + c
                         for G, b, c in zip(self.G, self.b, self.c)])


# -- physically consistent bodies --------------------------------------------------------------
#
# A body's pseudo-inertia J = [[S, h], [h^T, m]], S = tr(I_o)/2 1 - I_o (the second moment of its
# mass), is positive definite exactly when a positive mass density has these parameters
# (Wensing, Kim & Slotine 2017). J is linear in the body's parameters.

def pseudo_inertia(pi):
    """(4, 4) J of one body's (10,) parameters."""
    m, h, I = pi[0], pi[1:4], inertial.spatial_inertia(pi)[:3, :3]
    J = np.empty((4, 4))
    J[:3, :3] = 0.5 * np.trace(I) * np.eye(3) - I
    J[:3, 3] = J[3, :3] = h
    J[3, 3] = m
    return J


def from_pseudo_inertia(J):
    """(10,) parameters of a pseudo-inertia: I_o = tr(S) 1 - S."""
    S = J[:3, :3]
    I = np.trace(S) * np.eye(3) - S
    return np.array([J[3, 3], J[0, 3], J[1, 3], J[2, 3], I[0, 0], I[0, 1], I[1, 1], I[0, 2], I[1, 2], I[2, 2]])


UNIT_J = np.array([pseudo_inertia(e) for e in np.eye(10)])  # dJ / dpi_k


def consistent(pi, tolerance=0.0):
    """A body is physically consistent: its pseudo-inertia's eigenvalues are above tolerance times its trace."""
    J = pseudo_inertia(pi)
    return bool(fl.symmetric_eigen(J)[0][0] > tolerance * np.trace(J))


def made_consistent(pi, margin=1e-6):
    """The body's parameters, or those of its pseudo-inertia moved into the positive definite cone
    (eigenvalues at least margin times its trace, 1e-6 kg m² for a massless body): a start and a
    prior for bodies a URDF gives as massless or impossible."""
    J = pseudo_inertia(pi)
    w, V = fl.symmetric_eigen(J)
    floor = margin * max(np.trace(J), 1.0)
    return pi if w[0] > floor else from_pseudo_inertia(fl.matmul(V * np.maximum(w, floor), V.T))


# -- the estimates ----------------------------------------------------------------------------

PRIOR_WEIGHT = 10.0  # the prior's weight: the URDF's values known to about 1/sqrt(10) = 30 % of their scale
SIGMA_FLOOR = 1e-6  # a joint's noise is at least this fraction of its effort's RMS (noiseless data)
GAP = 1e-6  # the barrier's last duality gap, in units of the whitened cost (one noise sigma² is 1)
NEWTON = 5000  # Newton steps at most, over all barrier weights
ANCHOR = 1e-3  # the weight (square root) holding what the data cannot see at the URDF's
START_MARGIN = 1e-3  # the start's bodies: pseudo-inertia eigenvalues at least this fraction of its trace


@dataclass(frozen=True)
class Estimate:
    """What `ols` and `estimate` return. theta (size,) reproduces the fit through W theta (for OLS:
    the prior's dependent parameters, the independent ones solved); beta the base parameters."""

    theta: np.ndarray
    beta: np.ndarray
    se: np.ndarray  # (rank,) standard errors of the OLS base parameters
    sigma: np.ndarray  # (movable,) each joint's noise, from the OLS residuals
    rms_before: np.ndarray  # (movable,) RMS of effort - W theta_prior
    rms_after: np.ndarray  # (movable,) RMS of effort - W theta
    condition: float  # of the whitened base regressor


def _checked(normal, base):
    model, layout = normal.layout.model, normal.layout
    rows = normal.count * len(layout.joints)
    if rows <= base.rank:
        raise IdentificationError(model.source, None, f"{normal.count} samples of {len(layout.joints)} joints are too "
                                                      f"few for {base.rank} base parameters")
    still = [model.joints[i].name for r, i in enumerate(layout.joints) if not normal.moved[r]]
    if still and layout.terms:
        raise IdentificationError(model.source, None, f"joint {still[0]} never moves: its friction cannot be "
                                                      "identified (give --no-friction, or a run where it moves)")


def _weighted(normal, base, sigma):
    """G_b, b_b of the base regressor with each joint's rows divided by its noise."""
    i = base.independent
    G = sum(G[np.ix_(i, i)] / s ** 2 for G, s in zip(normal.G, sigma))
    b = sum(b[i] / s ** 2 for b, s in zip(normal.b, sigma))
    return G, b


def _solve(G, b, source):
    """x with G x = b and G's Cholesky factor L (G = L L^T), in a fixed order (`fixed_linalg`)."""
    try:
        L = fl.cholesky(G)
    except np.linalg.LinAlgError:
        raise IdentificationError(source, None, "the data do not determine the base parameters (the trajectory "
                                                "does not excite them)") from None
    return fl.solve_upper(L.T, fl.solve_lower(L, b)), L


def _theta(base, beta, prior):
    """A full theta with these base parameters: the prior's dependent ones, the independent solved."""
    theta = np.array(prior, dtype=float)
    theta[base.independent] = beta - fl.matvec(base.K, theta[base.dependent])
    return theta


def ols(normal, base, prior=None):
    """Weighted least-squares base parameters: OLS, each joint's noise from its residuals, then the
    fit again with every joint's rows divided by its noise; standard errors from (W_b^T W_b)^-1."""
    _checked(normal, base)
    prior = base.layout.parameters() if prior is None else np.asarray(prior, dtype=float)
    ones = np.ones(len(normal.c))
    source = base.layout.model.source
    beta, _ = _solve(*_weighted(normal, base, ones), source)
    rows, dof = normal.count, normal.count - base.rank / len(ones)
    rss = normal.rss(_theta(base, beta, prior))
    sigma = np.sqrt(np.maximum(rss, 0.0) / max(dof, 1.0))
    sigma = np.maximum(sigma, SIGMA_FLOOR * np.sqrt(normal.c / rows) + np.finfo(float).tiny)
    G, b = _weighted(normal, base, sigma)
    beta, L = _solve(G, b, source)
    inverse_L = fl.solve_lower(L, np.eye(len(beta)))  # diag(G^-1) = column sums of (L^-1)²
    se = np.sqrt(fl.ordered_sum(inverse_L * inverse_L))
    theta = _theta(base, beta, prior)
    eig = np.linalg.eigvalsh(G)  # LAPACK: the condition number reported only, not used
    return Estimate(theta, beta, se, sigma, np.sqrt(np.maximum(normal.rss(prior), 0.0) / rows),
                    np.sqrt(np.maximum(normal.rss(theta), 0.0) / rows), float(np.sqrt(eig[-1] / eig[0])))


def _prior_scale(pi):
    """(10,) 1 / the scale of each of a body's parameters: m, m L, m L² with L its size."""
    m = max(pi[0], 1e-3)
    L = max(math.sqrt(max(pi[4] + pi[6] + pi[9], 0.0) / (2 * m)), 1e-2)
    return 1.0 / np.array([m] + [m * L] * 3 + [m * L * L] * 6)


def estimate(normal, base, *, prior_weight=None, prior=None):
    """The physically consistent estimate: theta minimising

        |L^T (beta(theta) - beta_ols)|² + prior_weight sum_bodies |D (pi - pi_prior)|²
                                        + ANCHOR² |N^T D (theta - theta_prior)|²

    with every body's pseudo-inertia positive definite and the viscous, Coulomb and armature terms
    >= 0. L L^T = W_b^T W_b of the noise-weighted base regressor (the data's whole say, as in
    `ols`); D divides each body's parameters by their scale (m, m L, m L², L its radius of gyration
    about its origin); pi_prior is the URDF's (moved into the consistent set where it is not). A
    direction the data determine well hardly feels the prior; one they hardly see stays near the
    URDF's, in proportion to how little they see it (the MAP estimate with the URDF's values known
    to about 1/sqrt(prior_weight) of their scale); friction has no prior. prior_weight 0: none,
    but for the last term, which holds the directions the data cannot see at all (N spans the null
    space of beta(theta), in scaled parameters) at the URDF's, and bounds the problem there.
    Default: the layout's (`Layout.prior_weight`).

    The problem is convex (a quadratic over a product of cones); it is solved by Newton's method
    on the log-barrier -mu (sum log det J + sum log f), mu going down to a duality gap of GAP, so
    that every iterate, and the answer, is strictly consistent."""
    first = ols(normal, base, prior)
    layout = base.layout
    prior_weight = layout.prior_weight if prior_weight is None else prior_weight
    n, p = len(layout.blocks), layout.size
    prior = layout.parameters() if prior is None else np.asarray(prior, dtype=float)
    prior_bodies = [made_consistent(prior[10 * k:10 * k + 10]) for k in range(n)]
    G, _ = _weighted(normal, base, first.sigma)
    select = np.zeros((base.rank, p))
    select[np.arange(base.rank), base.independent] = 1.0
    select[:, base.dependent] += base.K  # beta = select theta
    # the cost |A theta - t|² + sum weight (theta - anchor)², summed as squares (no cancellation)
    L = fl.cholesky(G)
    A, t = fl.matmul(L.T, select), fl.matvec(L.T, first.beta)
    # what the data cannot see stays at the prior: |N^T D (theta - prior)|² = |P D (theta - prior)|²
    # over the null space of beta (orthonormal N, P = N N^T, in the scaled parameters), whatever
    # prior_weight
    D = np.ones(p)
    D[:10 * n] = np.concatenate([_prior_scale(b) for b in prior_bodies])
    anchor = np.concatenate(prior_bodies + [prior[10 * n:]])
    P = _null_projector(select / D)
    A, t = np.vstack([A, ANCHOR * P * D]), np.concatenate([t, ANCHOR * fl.matvec(P, D * anchor)])
    weight = np.zeros(p)
    weight[:10 * n] = prior_weight * D[:10 * n] ** 2
    friction = np.arange(10 * n, p)
    bounded = friction[[term != "offset" for _ in layout.joints for term in layout.terms]]
    # start from the unconstrained solution, its bodies moved into the consistent set
    root_w = np.sqrt(weight)
    start = fl.lstsq(np.vstack([A, np.diag(root_w)]) / D, np.concatenate([t, root_w * anchor]), rcond=1e-15) / D
    start[:10 * n] = np.concatenate([made_consistent(start[10 * k:10 * k + 10], START_MARGIN) for k in range(n)])
    start[bounded] = np.maximum(start[bounded], 1e-3 * np.maximum(np.abs(start[bounded]), 1e-3))
    theta = _barrier(A, t, weight, anchor, n, bounded, start, layout.model.source)
    rows = normal.count
    return Estimate(theta, fl.matvec(select, theta), first.se, first.sigma, first.rms_before,
                    np.sqrt(np.maximum(normal.rss(theta), 0.0) / rows), first.condition)


def _null_projector(S):
    """(p, p) the orthogonal projector onto the null space of S (rank, p) of full row rank: I - Q Q^T,
    Q (p, rank) an orthonormal basis of S's rows (S^T = Q R, Householder in a fixed order)."""
    rank, p = S.shape
    if rank == 0:
        return np.eye(p)
    R = fl.householder(S.T)
    Qt = fl.solve_lower(R.T, S)  # Q^T = R^-T S
    return np.eye(p) - fl.matmul(Qt.T, Qt)


def _barrier(A, t, weight, anchor, n, bounded, theta, source):
    """argmin |A theta - t|² + sum weight (theta - anchor)² over consistent bodies (the first 10 n
    entries) and theta[bounded] >= 0, by the barrier method from a strictly feasible theta. Every
    product, sum, factorisation and log in a fixed order (`fixed_linalg`): the same bits on every CPU."""
    m = 4 * n + len(bounded)  # the barrier's degree: the duality gap is mu m
    root_w = np.sqrt(weight)
    # the quadratic's Hessian 2 R0^T R0, [A; diag(root_w)] = Q R0 (once): a step's least squares has
    # R0's rows for A's and diag(root_w)'s
    R0 = fl.householder(np.vstack([A, np.diag(root_w)]))
    unit = np.broadcast_to(UNIT_J.transpose(1, 0, 2).reshape(4, 40), (n, 4, 40))

    def barrier(theta):
        """-sum log det J - sum log f, and its square root: rows B, v with Hessian B^T B and gradient
        B^T v (for J = Lj Lj^T, B's columns are Lj^-1 dJ/dpi_k Lj^-T, v = -vec(1)); inf outside."""
        J = fl.ordered_sum(theta[:10 * n].reshape(n, 10)[:, :, None, None] * UNIT_J, axis=1)
        f = theta[bounded]
        try:
            Lj = fl.cholesky(J)
        except np.linalg.LinAlgError:
            return math.inf, None, None
        if np.any(f <= 0):
            return math.inf, None, None
        logs = fl.log(np.concatenate([np.diagonal(Lj, axis1=1, axis2=2).ravel(), f]))
        value = -2.0 * fl.ordered_sum(logs[:4 * n]) - fl.ordered_sum(logs[4 * n:])
        Y = fl.solve_lower(Lj, unit).reshape(n, 4, 10, 4).transpose(0, 3, 2, 1).reshape(n, 4, 40)
        X = fl.solve_lower(Lj, Y).reshape(n, 4, 10, 4).transpose(0, 1, 3, 2).reshape(n, 16, 10)
        B = np.zeros((16 * n + len(f), len(theta)))
        for k in range(n):
            B[16 * k:16 * k + 16, 10 * k:10 * k + 10] = X[k]
        B[16 * n + np.arange(len(f)), bounded] = 1.0 / f
        v = np.concatenate([np.tile(-np.eye(4).ravel(), n), -np.ones(len(f))])
        return float(value), B, v

    def quadratic(theta):
        r, d = fl.matvec(A, theta) - t, theta - anchor
        return fl.dot(r, r) + fl.dot(weight, d * d)

    def newton_step(theta, mu, B, vb):
        """The Newton step of quadratic + mu barrier as a least-squares problem (conditioned like the
        data, not squared): Hessian 2 M^T M, gradient 2 M^T v; and its decrement -gradient . step.
        M's first rows are R0, v's R0^-T times the quadratic's gradient computed from A, as the
        quadratic is (R0 theta - Q^T t has other round-off: Newton stalled on it)."""
        M = np.vstack([R0, np.sqrt(mu / 2) * B])
        gradient = fl.matvec(A.T, fl.matvec(A, theta) - t) + weight * (theta - anchor)
        v = np.concatenate([fl.solve_lower(R0.T, gradient), np.sqrt(mu / 2) * vb])
        scale = 1.0 / np.maximum(np.sqrt(fl.ordered_sum(M * M)), 1e-300)  # parameters of unlike units
        step = -scale * fl.lstsq(M * scale, v, rcond=1e-15)
        return step, -2.0 * fl.dot(fl.matvec(M.T, v), step)

    mu, steps = max(quadratic(theta), 1.0) / m, 0
    while True:
        b, B, vb = barrier(theta)
        value = quadratic(theta) + mu * b
        while steps < NEWTON:  # centre: Newton's method with backtracking
            step, decrement = newton_step(theta, mu, B, vb)
            if decrement <= max(1e-12 * quadratic(theta), GAP / 10):  # below the last gap: centred
                break
            s = 1.0
            while s >= 1e-12:
                trial = theta + s * step
                b, B_trial, vb_trial = barrier(trial)
                new = quadratic(trial) + mu * b if np.isfinite(b) else math.inf
                if new < value and new <= value - 0.25 * s * decrement:  # strictly: a step too small for
                    break  # round-off to see would be taken again and again
                s *= 0.5
            else:
                break  # no progress left at this mu (the decrement is at the round-off of the value)
            theta, value, B, vb = trial, new, B_trial, vb_trial
            steps += 1
        else:
            raise IdentificationError(source, None, f"the consistent estimate did not converge in {NEWTON} Newton "
                                                    "steps")
        if mu * m <= GAP:
            return theta
        mu = max(mu / 8.0, GAP / m / 2)


# -- what was found, per link named --------------------------------------------------------------

INERTIA_ENTRIES = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")  # the URDF's order of <inertia>
_ORIGIN_ENTRY = {"ixx": 4, "ixy": 5, "iyy": 6, "ixz": 7, "iyz": 8, "izz": 9}  # in inertial.PARAMETERS


@dataclass(frozen=True)
class LinkFound:
    """One block's mass, centre of mass and inertia about it (in the link's frame; URDF order of
    INERTIA_ENTRIES), as `identify_urdf.set_inertial` writes them, with standard errors: None where
    the data do not determine what it depends on (`identified`: the block's parameters that are
    base parameters alone, beta_r = theta_k)."""

    link: str
    body: str  # the joint that moves it
    mass: float
    com: tuple
    inertia: tuple
    mass_se: float | None
    com_se: tuple
    inertia_se: tuple
    identified: int


def mass_properties(pi):
    """(m, c (3,), the 6 entries of I about c) of one block's (10,) parameters."""
    m, c, Ic = spatial.mass_properties(inertial.spatial_inertia(pi))
    return float(m), tuple(map(float, c)), tuple(float(Ic[a, b]) for a, b in _entries())


def _entries():
    return [("xyz".index(e[1]), "xyz".index(e[2])) for e in INERTIA_ENTRIES]


def _jacobian(pi):
    """(10, 10) d(m, c, I_c entries) / d pi, I_c = I_o - (|h|² 1 - h h^T) / m and c = h / m."""
    m, h = pi[0], np.asarray(pi[1:4], dtype=float)
    J = np.zeros((10, 10))
    J[0, 0] = 1.0
    J[1:4, 0] = -h / m ** 2
    J[1:4, 1:4] = np.eye(3) / m
    S = (h @ h) * np.eye(3) - np.outer(h, h)
    for r, (a, b) in enumerate(_entries()):
        J[4 + r, 0] = S[a, b] / m ** 2
        J[4 + r, _ORIGIN_ENTRY[INERTIA_ENTRIES[r]]] = 1.0
        for j in range(3):  # d S_ab / d h_j = 2 h_j delta_ab - delta_aj h_b - h_a delta_bj
            J[4 + r, 1 + j] = -(2 * h[j] * (a == b) - (a == j) * h[b] - h[a] * (b == j)) / m
    return J


def covariance(normal, base, sigma):
    """(rank, rank) covariance of the weighted least-squares base parameters with noise sigma per
    joint: (W_b^T W_b)^-1 of the whitened base regressor (`Estimate.se` is its diagonal's root)."""
    from scipy.linalg import cho_factor, cho_solve

    G, _ = _weighted(normal, base, sigma)
    return cho_solve(cho_factor(G), np.eye(len(G)))


def links_found(normal, base, fit):
    """A LinkFound for each block of the layout: fit's values, with standard errors propagated
    (to first order) from the covariance of the base parameters that are a block's parameters alone."""
    cov = covariance(normal, base, fit.sigma)
    alone = {int(k): r for r, k in enumerate(base.independent) if not np.any(base.K[r])}
    out = []
    for b, block in enumerate(base.layout.blocks):
        cols = range(10 * b, 10 * b + 10)
        known = np.array([k in alone for k in cols])
        pi = fit.theta[10 * b:10 * b + 10]
        m, c, I = mass_properties(pi)
        se = [None] * 10
        if known.any() and m != 0.0:
            rows = [alone[k] for k in cols if k in alone]
            J = _jacobian(pi)
            C = J[:, known] @ cov[np.ix_(rows, rows)] @ J[:, known].T
            se = [float(np.sqrt(max(C[i, i], 0.0))) if not np.any(J[i, ~known]) else None for i in range(10)]
        out.append(LinkFound(block.link, base.layout.model.joints[block.body].name, m, c, I, se[0], tuple(se[1:4]),
                             tuple(se[4:]), int(known.sum())))
    return out
