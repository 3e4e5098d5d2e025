"""The estimates: physically consistent bodies (pseudo-inertia positive definite), the plain
least-squares base parameters (`ols`), and the consistent estimate with a prior around the URDF's
values (`estimate`, a log-barrier Newton method), every solve in a fixed order (fixed_linalg)."""

import math
from dataclasses import dataclass

import numpy as np

from ....dynamics import inertial
from .. import fixed_linalg as fl
from .parameters import IdentificationError

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

SIGMA_FLOOR = 1e-6  # a joint's noise is at least this fraction of its effort's RMS (noiseless data)
GAP = 1e-6  # the barrier's last duality gap, in units of the whitened cost (one noise sigma² is 1)
DEFICIENT = 1e-14  # a Cholesky pivot of W_b^T W_b below this of the largest: the data do not determine it
NEWTON = 5000  # Newton steps at most, over all barrier weights
ANCHOR = 1e-3  # the weight (square root) holding what the data cannot see at the URDF's
PLACEHOLDER = 1e-4  # a body's URDF mass at most this fraction of the heaviest one's is a placeholder: no prior
START_MARGIN = 1e-3  # the start's bodies: pseudo-inertia eigenvalues at least this fraction of its trace


@dataclass(frozen=True)
class Estimate:
    """What `ols` and `estimate` return. theta (size,) reproduces the fit through W theta (for OLS:
    the prior's dependent parameters, the independent ones solved); beta the base parameters."""

    theta: np.ndarray
    beta: np.ndarray
    se: np.ndarray  # (rank,) standard errors of the OLS base parameters
    sigma: np.ndarray  # (rows,) each row's noise (a row: a movable joint's effort, `Layout.equations`), from the OLS residuals
    rms_before: np.ndarray  # (rows,) RMS of effort - W theta_prior
    rms_after: np.ndarray  # (rows,) RMS of effort - W theta
    condition: float  # of the whitened base regressor (inf: the run does not determine every base parameter)
    factor: np.ndarray = None  # F F^T = the whitened W_b^T W_b: its Cholesky factor, or (rank, r) where deficient


def _checked(normal, base):
    model, layout = normal.layout.model, normal.layout
    still = [r for r in range(len(layout.leaders)) if not normal.moved[r]]
    if still and set(layout.terms) - {"offset"}:  # an offset shows on a joint at rest; qd and qdd terms do not
        r = still[0]
        fast = f" at {normal.slowest[r]:g} or faster" if normal.slowest[r] else ""
        raise IdentificationError(model.source, None, f"joint {model.joints[layout.leaders[r]].name} never moves{fast}: "
                                                      "its friction cannot be identified (give --no-friction, or a "
                                                      "run where it moves)")
    rows, joints = int(np.sum(normal.rows)), len(layout.leaders)
    if rows <= base.rank:
        if 0 < rows < normal.count * joints:  # samples left out of some joints' equations: more like these
            more = f"about {math.ceil((base.rank + 1 - rows) * normal.count / rows)} more like these"
        else:  # each sample one equation a joint: a bound
            more = f"at least {math.ceil((base.rank + 1 - rows) / max(joints, 1))} more"
        slow = f" ({rows} rows at their --min-speed or faster)" if rows < normal.count * joints else ""
        raise IdentificationError(model.source, None, f"{normal.count} samples of {joints} joints{slow} are too few "
                                                      f"for {base.rank} base parameters: give {more}")


def weighted(normal, base, sigma):
    """G_b, b_b of the base regressor with each joint's rows divided by its noise."""
    G = sum(G / s ** 2 for G, s in zip(normal.G, sigma))
    b = sum(b / s ** 2 for b, s in zip(normal.b, sigma))
    return G, b


def _solve(G, b, source, deficient=False):
    """x with G x = b and a factor F of G (G = F F^T): G's Cholesky factor L, in a fixed order
    (`fixed_linalg`). Where G is not positive definite beyond round-off (the run does not determine
    every base parameter): an IdentificationError, or with deficient=True (for `estimate`, whose
    prior holds what the data do not say) the pivoted Cholesky factor (k, r) of what the data do
    determine and the solution x = F z of least norm in F's columns."""
    # each pivot is judged against its own column's scale, not against the largest pivot: S G S with
    # S = diag(1 / sqrt(G_ii)) rounded to powers of two, whose factor is exactly S L (so the same bits
    # as unscaled where every pivot passes). Unscaled, a joint whose effort is 1e5 times another's
    # (a PR2's torso beside its fingers) made the other joint's parameters look undetermined.
    scale = np.ldexp(1.0, -np.frexp(np.sqrt(np.diagonal(G)))[1])
    try:
        L = fl.cholesky(G)
        pivots = (np.diagonal(L) * scale) ** 2
        if pivots.min() > DEFICIENT * pivots.max():
            return fl.solve_upper(L.T, fl.solve_lower(L, b)), L
    except np.linalg.LinAlgError:
        pass
    if not deficient:
        raise IdentificationError(source, None, "the data do not determine the base parameters (the trajectory "
                                                "does not excite them)")
    F = fl.pivoted_cholesky(scale[:, None] * G * scale, DEFICIENT) / scale[:, None]
    C = fl.cholesky(fl.matmul(F.T, F))  # F^T F z = y, F^T F y = F^T b: G x = b for x = F z
    y = fl.solve_upper(C.T, fl.solve_lower(C, fl.matvec(F.T, b)))
    return fl.matvec(F, fl.solve_upper(C.T, fl.solve_lower(C, y))), F


def _theta(base, beta, prior):
    """A full theta with these base parameters: the prior's dependent ones, the independent solved."""
    theta = np.array(prior, dtype=float)
    theta[base.independent] = beta - fl.matvec(base.K, theta[base.dependent])
    return theta


def ols(normal, base, prior=None, *, deficient=False):
    """Weighted least-squares base parameters: OLS, each joint's noise from its residuals, then the
    fit again with every joint's rows divided by its noise; standard errors from (W_b^T W_b)^-1.
    deficient: a run that does not determine every base parameter gets a solution of least norm
    (`_solve`), no standard errors (nan) and an infinite condition number, not an error."""
    _checked(normal, base)
    prior = base.layout.parameters() if prior is None else np.asarray(prior, dtype=float)
    ones = np.ones(len(normal.c))
    source = base.layout.model.source
    beta, _ = _solve(*weighted(normal, base, ones), source, deficient)
    rows = np.maximum(normal.rows, 1)  # each joint's
    dof = rows - base.rank / len(ones)
    rss = normal.rss(_theta(base, beta, prior))
    sigma = np.sqrt(np.maximum(rss, 0.0) / np.maximum(dof, 1.0))
    sigma = np.maximum(sigma, SIGMA_FLOOR * np.sqrt(normal.c / rows) + np.finfo(float).tiny)
    G, b = weighted(normal, base, sigma)
    beta, L = _solve(G, b, source, deficient)
    theta = _theta(base, beta, prior)
    if L.shape[1] < len(beta):  # what the data do not determine has no standard error
        return Estimate(theta, beta, np.full(len(beta), np.nan), sigma,
                        np.sqrt(np.maximum(normal.rss(prior), 0.0) / rows),
                        np.sqrt(np.maximum(normal.rss(theta), 0.0) / rows), math.inf, L)
    # diag(G^-1) = column sums of (L^-1)². L is lower triangular with its rows in pivot order: as it is
    # from Cholesky, permuted where the pivoted factor (`_solve`) kept every column
    order = np.argsort([np.flatnonzero(row)[-1] for row in L], kind="stable")
    inverse_L = fl.solve_lower(L[order], np.eye(len(beta))[order])
    se = np.sqrt(fl.ordered_sum(inverse_L * inverse_L))
    # cond(W_b) = sqrt(cond(G)) = cond(L), from the factor the fit used (G = L L^T): finite wherever the
    # fit goes on (G's own eigenvalues by LAPACK were not: near 1/eps the smallest came out negative),
    # and reported in the same bits on every CPU (fixed-order iterations, no LAPACK)
    condition = fl.factor_condition(L[order])
    return Estimate(theta, beta, se, sigma, np.sqrt(np.maximum(normal.rss(prior), 0.0) / rows),
                    np.sqrt(np.maximum(normal.rss(theta), 0.0) / rows), condition, L)


def placeholders(bodies):
    """The bodies (rows of (n, 10) parameters) whose URDF mass is no estimate: at most PLACEHOLDER
    of the heaviest body's (a URDF's 0 or 1e-5 kg on a link that moves). The prior leaves them
    free; what the data cannot see of them at all stays at the URDF's (the anchor)."""
    masses = np.asarray(bodies, dtype=float).reshape(-1, 10)[:, 0]
    heaviest = float(masses.max(initial=0.0))
    return [k for k, m in enumerate(masses) if not m > PLACEHOLDER * heaviest]


def prior_scale(pi):
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
    to about 1/sqrt(prior_weight) of their scale); friction has no prior, nor has a body the URDF
leaves massless (`placeholders`: its 0 kg is no estimate of the body). prior_weight 0: none,
    but for the last term, which holds the directions the data cannot see at all (N spans the null
    space of beta(theta), in scaled parameters) at the URDF's, and bounds the problem there.
    Default: the layout's (`Layout.prior_weight`).

    The problem is convex (a quadratic over a product of cones); it is solved by Newton's method
    on the log-barrier -mu (sum log det J + sum log f), mu going down to a duality gap of GAP, so
    that every iterate, and the answer, is strictly consistent."""
    first = ols(normal, base, prior, deficient=True)
    layout = base.layout
    prior_weight = layout.prior_weight if prior_weight is None else prior_weight
    n, p = len(layout.blocks), layout.size
    prior = layout.parameters() if prior is None else np.asarray(prior, dtype=float)
    prior_bodies = [made_consistent(prior[10 * k:10 * k + 10]) for k in range(n)]
    L = first.factor  # of G = the whitened W_b^T W_b, the data's whole say
    select = np.zeros((base.rank, p))
    select[np.arange(base.rank), base.independent] = 1.0
    select[:, base.dependent] += base.K  # beta = select theta
    # the cost |A theta - t|² + sum weight (theta - anchor)², summed as squares (no cancellation)
    A, t = fl.matmul(L.T, select), fl.matvec(L.T, first.beta)
    # what the data cannot see stays at the prior: |N^T D (theta - prior)|² = |P D (theta - prior)|²
    # over the null space of beta (orthonormal N, P = N N^T, in the scaled parameters), whatever
    # prior_weight
    D = np.ones(p)
    D[:10 * n] = np.concatenate([prior_scale(b) for b in prior_bodies])
    anchor = np.concatenate(prior_bodies + [prior[10 * n:]])
    P = _null_projector(select / D)
    A, t = np.vstack([A, ANCHOR * P * D]), np.concatenate([t, ANCHOR * fl.matvec(P, D * anchor)])
    weight = np.zeros(p)
    weight[:10 * n] = prior_weight * D[:10 * n] ** 2
    for k in placeholders(prior[:10 * n].reshape(n, 10)):  # a URDF's massless body is no estimate of one
        weight[10 * k:10 * k + 10] = 0.0
    friction = np.arange(10 * n, p)
    bounded = friction[[term != "offset" for _ in layout.joints for term in layout.terms]]
    # start from the unconstrained solution, its bodies moved into the consistent set
    root_w = np.sqrt(weight)
    start = fl.lstsq(np.vstack([A, np.diag(root_w)]) / D, np.concatenate([t, root_w * anchor]), rcond=1e-15) / D
    start[:10 * n] = np.concatenate([made_consistent(start[10 * k:10 * k + 10], START_MARGIN) for k in range(n)])
    start[bounded] = np.maximum(start[bounded], 1e-3 * np.maximum(np.abs(start[bounded]), 1e-3))
    theta = _barrier(A, t, weight, anchor, n, bounded, start, layout.model.source)
    rows = np.maximum(normal.rows, 1)
    return Estimate(theta, fl.matvec(select, theta), first.se, first.sigma, first.rms_before,
                    np.sqrt(np.maximum(normal.rss(theta), 0.0) / rows), first.condition, first.factor)


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


