"""What was found per link named (`--links`): mass, centre of mass and inertia about it, with
standard errors propagated to first order from the base parameters' covariance."""

from dataclasses import dataclass

import numpy as np

from ....dynamics import inertial, spatial
from .estimate import weighted

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

    G, _ = weighted(normal, base, sigma)
    return cho_solve(cho_factor(G), np.eye(len(G)))


def links_found(normal, base, fit):
    """A LinkFound for each block of the layout: fit's values, with standard errors propagated
    (to first order) from the covariance of the base parameters that are a block's parameters alone."""
    cov = covariance(normal, base, fit.sigma) if np.isfinite(fit.condition) else None  # None: not determined
    alone = {int(k): r for r, k in enumerate(base.independent) if not np.any(base.K[r])}
    out = []
    for b, block in enumerate(base.layout.blocks):
        cols = range(10 * b, 10 * b + 10)
        known = np.array([k in alone for k in cols])
        pi = fit.theta[10 * b:10 * b + 10]
        m, c, I = mass_properties(pi)
        se = [None] * 10
        if cov is not None and known.any() and m != 0.0:
            rows = [alone[k] for k in cols if k in alone]
            J = _jacobian(pi)
            C = J[:, known] @ cov[np.ix_(rows, rows)] @ J[:, known].T
            se = [float(np.sqrt(max(C[i, i], 0.0))) if not np.any(J[i, ~known]) else None for i in range(10)]
        out.append(LinkFound(block.link, base.layout.model.joints[block.body].name, m, c, I, se[0], tuple(se[1:4]),
                             tuple(se[4:]), int(known.sum())))
    return out
