"""The problem an excitation solves: a periodic Fourier series per joint (`Fourier`), starting and
ending at rest (`at_rest`), within the joints' limits times a margin (`bounds`), and the smooth
stand-in for the condition number of its base regressor that the search minimises, with its
gradient (`Problem`; see excite.py for the search and the formulas).

    q_j(t)   = c_j + sum_l  a_jl / (l w) sin(l w t) - b_jl / (l w) cos(l w t)
    qd_j(t)  =       sum_l  a_jl cos(l w t) + b_jl sin(l w t)
    qdd_j(t) =       sum_l -a_jl l w sin(l w t) + b_jl l w cos(l w t)         (w = 2 pi / period)

Every number here is made of +, -, *, / and sqrt in a fixed order (fixed_linalg), so the same bits
on every CPU; LAPACK computes only the condition numbers reported."""

import math
from dataclasses import dataclass, replace

import numpy as np

from ...dynamics import engine, spatial
from ...errors import RneaError
from . import fixed_linalg as fl
from . import identify

GRID = 160  # samples of one period on which the condition number is computed (5 harmonics: 32 a wave)
POWER = 8  # k of the spread tr(G^k) tr(G^-k): its 2k-th root is within rank^(1/k) of cond(W)
SMOOTH = 32  # the norm of the search's fill: a power of 2
COULOMB = 0.01  # rad/s (m/s): the search's Coulomb columns are smooth below about this speed
FD = 1e-6  # rad, rad/s (m, m/s): the step of W's central differences in q and qd


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
        # the rows identify fits: a mimic follower's torque in its leader's effort (`Layout.equations`)
        self.base = identify.base_parameters(self.model, gravity=gravity, friction=friction, mimic=coords)
        self.layout = self.base.layout
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
        need = self.need(fourier)[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where((need > 0) & np.isfinite(need), 1.0 / need, 0.0)[:, None]
        if not np.isfinite(scale).all() or not scale.any():
            k = int(np.argmin(np.isfinite(scale[:, 0]) & (scale[:, 0] > 0)))
            raise RneaError(self.model.source, self.coords.joint_names[k], "the limits leave it no motion to "
                                                                           "excite")
        return replace(fourier, a=fourier.a * scale, b=fourier.b * scale)

    def need(self, fourier, smooth=False):
        """Per joint (n,) the largest ratio on the grid of |q - centre|, |qd| or |qdd| to its bound,
        and (n, 2 H) its gradient in the joint's (a, b). smooth: the SMOOTH-norm of the ratios
        instead (above the largest, by at most the count of the samples near it to the 1/SMOOTH),
        whose gradient moves smoothly when another sample binds."""
        q, qd, qdd = fourier.motion(self.grid)
        L = self.limits
        values = np.stack([q - fourier.centre, qd, qdd])  # (3, N, n)
        bounds = np.stack([L.position, L.velocity, L.acceleration])[:, None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.nan_to_num(np.abs(values) / bounds, nan=0.0, posinf=np.inf)  # 0/0: no motion, no bound
            slope = np.where(np.isfinite(bounds) & (bounds > 0), np.sign(values) / bounds, 0.0)  # d ratio / d value
        n, N = self.coords.n, len(self.grid)
        flat = ratios.reshape(-1, n)
        largest = flat.max(axis=0)
        if not smooth:
            where = flat.argmax(axis=0)
            kind, sample, joint = where // N, where % N, np.arange(n)
            return largest, self.basis[kind, sample] * slope[kind, sample, joint][:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.where(largest > 0, flat / largest, 0.0)  # in [0, 1]
        powers = [u]
        for _ in range(SMOOTH.bit_length() - 1):
            powers.append(powers[-1] * powers[-1])
        total = fl.ordered_sum(powers[-1])  # >= 1 where the joint moves
        norm = total.copy()
        for _ in range(SMOOTH.bit_length() - 1):
            norm = np.sqrt(norm)
        need = largest * norm
        # d need / d ratio = (ratio / need)^(SMOOTH - 1) = u^(SMOOTH - 1) / norm^(SMOOTH - 1)
        below = powers[0]
        for p in powers[1:-1]:
            below = below * p
        with np.errstate(divide="ignore", invalid="ignore"):
            weight = np.where(total > 0, below / (total / norm), 0.0).reshape(3, N, n) * slope
        gradient = fl.ordered_sum((weight.reshape(-1, n)[:, :, None] * self.basis.reshape(3 * N, -1)[:, None, :]))
        return need, gradient

    @property
    def basis(self):
        """(3, N, 2 H) q - centre, qd and qdd on the grid per unit of each coefficient a_l, b_l."""
        if not hasattr(self, "_basis"):
            H, N, w = self.harmonics, len(self.grid), 2 * math.pi / self.period
            basis = np.empty((3, N, 2 * H))
            for l in range(1, H + 1):
                phase = (self.grid * l / self.period) % 1.0 * (2 * math.pi)
                c, s = spatial.cos_sin(phase, np.empty(N), np.empty(N), np.empty((5, N)))
                lw = l * w
                basis[:, :, l - 1] = s / lw, c, -lw * s
                basis[:, :, H + l - 1] = -c / lw, s, lw * c
            self._basis = basis
        return self._basis

    def regressor(self, q, qd, qdd, smooth=False):
        """(N, rows, rank) the base columns of W at these column coordinates. smooth: each Coulomb
        column sign(qd) as qd / sqrt(qd^2 + COULOMB^2) (the search's: a sign flipping at one sample
        would make its objective jump)."""
        q, qd, qdd = self.coords.expand(q, qd, qdd)
        W = self.layout.regressor(q, qd, qdd, gravity=self.gravity)[..., self.base.independent]
        if smooth:
            for column, row, joint, m in self.coulomb:
                W[:, row, column] = qd[:, joint] / np.sqrt(qd[:, joint] * qd[:, joint] + COULOMB * COULOMB)
                if m != 1.0:  # a mimic follower's, in its leader's row
                    W[:, row, column] *= m
        return W

    @property
    def coulomb(self):
        """(base column, row of W, model joint, its multiplier there) of each Coulomb friction column."""
        terms, first = self.layout.terms, self.layout.inertial
        if "coulomb" not in terms:
            return []
        row_of = {i: (r, m) for r, equation in enumerate(self.layout.equations) for i, m in equation}
        out = []
        for k, c in enumerate(self.base.independent):
            if c >= first and (c - first) % len(terms) == terms.index("coulomb"):
                joint = self.layout.joints[(c - first) // len(terms)]
                row, m = row_of[joint]
                out.append((k, row, joint, m))
        return out

    def spread(self, fourier, gradient=False):
        """s = tr(G^k) tr(G^-k), k = POWER, of G = W^T W over the grid (scaled to trace 1: s does not
        change), W with its Coulomb columns smoothed (`regressor`): s^(1 / 2k) lies between cond(W)
        and rank^(1 / k) cond(W), and is smooth where cond is not (two singular values crossing).
        inf where G is singular. From +, -, *, / and sqrt in
        a fixed order, the same bits on every CPU. With gradient, also d log s / dW (N, rows, rank)."""
        W = self.regressor(*fourier.motion(self.grid), smooth=True)
        flat = W.reshape(-1, W.shape[-1])
        G = fl.ordered_sum(flat[:, :, None] * flat[:, None, :])
        trace = float(fl.ordered_sum(np.diag(G).copy()))
        root = _cholesky(G / trace) if trace > 0 else None  # (None: G is not positive definite)
        if root is None:
            return (math.inf, None) if gradient else math.inf
        inverse = fl.solve_lower(root, np.eye(len(root)))
        powers = [G / trace]
        inverses = [fl.matmul(inverse.T, inverse)]
        while len(powers) < POWER.bit_length() - 1:  # G, G^2, ... G^(k / 2)
            powers.append(fl.matmul(powers[-1], powers[-1]))
            inverses.append(fl.matmul(inverses[-1], inverses[-1]))
        up, down = fl.matmul(powers[-1], powers[-1]), fl.matmul(inverses[-1], inverses[-1])
        tr_up, tr_down = (float(fl.ordered_sum(np.diag(x).copy())) for x in (up, down))
        value = tr_up * tr_down
        if not math.isfinite(value) or not value > 0:
            return (math.inf, None) if gradient else math.inf
        if not gradient:
            return value
        below = powers[0]  # G^(k - 1) = G G^2 G^4 ... G^(k / 2), scaled
        for p in powers[1:]:
            below = fl.matmul(below, p)
        S = (POWER / trace) * (below / tr_up - fl.matmul(down, inverses[0]) / tr_down)
        return value, (2.0 * fl.matmul(flat, S)).reshape(W.shape)

    def descent(self, x):
        """(log-spread order value s, its gradient in x, the excitation) at free coefficients x
        (`_free`): the excitation at rest, filled to the bounds, then within the effort bounds; s
        inf (gradient 0) where singular or beyond the effort bounds."""
        n, H = self.coords.n, self.harmonics
        a, b = np.zeros((n, H)), np.zeros((n, H))
        a[:, 1:], b[:, 1:] = x[:n * (H - 1)].reshape(n, H - 1), x[n * (H - 1):].reshape(n, H - 1)
        a, b = at_rest(a, b)
        raw = Fourier(self.period, self.limits.centre, a, b)
        need, slope = self.need(raw, smooth=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where((need > 0) & np.isfinite(need), 1.0 / need, 0.0)
        filled = replace(raw, a=a * scale[:, None], b=b * scale[:, None])
        fourier = self.feasible(filled)
        if fourier is None:
            return math.inf, np.zeros_like(x), None
        value, Z = self.spread(fourier, gradient=True)
        if Z is None:
            return math.inf, np.zeros_like(x), fourier
        g = self._coefficient_gradient(fourier, Z)  # (n, 2 H), of fourier's coefficients
        mine = np.concatenate([fourier.a, fourier.b], axis=1)
        theirs = np.concatenate([filled.a, filled.b], axis=1)
        k = np.abs(theirs).argmax(axis=1)
        rows = np.arange(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            shrink = np.where(theirs[rows, k] != 0, mine[rows, k] / theirs[rows, k], 0.0)
        g = g * shrink[:, None]  # of filled's (the effort's shrink taken as constant)
        # filled = raw / need(raw): d/draw = (g - (g . filled) d need) / need
        along = fl.ordered_sum((g * np.concatenate([filled.a, filled.b], axis=1)).T.copy())
        g = (g - along[:, None] * slope) * scale[:, None]
        ga, gb = g[:, :H], g[:, H:]
        free_a = ga[:, 1:] - ga[:, :1]  # at_rest: a_1 = -sum a_l, b_1 = -sum l b_l
        free_b = gb[:, 1:] - gb[:, :1] * np.arange(2, H + 1)
        return value, np.concatenate([free_a.ravel(), free_b.ravel()]), fourier

    def _coefficient_gradient(self, fourier, Z):
        """(n, 2 H) d log spread / d (a, b) from Z = d log spread / dW (N, rows, rank): W's
        derivatives in one joint's q, qd (central differences of FD) or qdd (forward by 1: W is
        linear in it) at every grid sample at once, contracted with Z sample by sample, then with
        the basis of each coefficient."""
        motion = fourier.motion(self.grid)
        W = self.regressor(*motion, smooth=True)
        N, n = len(self.grid), self.coords.n
        E = np.empty((3, N, n))  # d log spread / d (q, qd, qdd)_j at each sample
        for kind, h in enumerate((FD, FD, 1.0)):
            for j in range(n):
                up, x_up = _moved(motion, kind, j, h)
                down, x_down = _moved(motion, kind, j, -h) if kind < 2 else (motion, motion[kind][:, j])
                low = W if kind == 2 else self.regressor(*down, smooth=True)
                dW = (self.regressor(*up, smooth=True) - low) / (x_up - x_down)[:, None, None]
                E[kind, :, j] = fl.ordered_sum((Z * dW).reshape(N, -1).T.copy())
        B = self.basis
        return fl.ordered_sum(E[0][:, :, None] * B[0][:, None, :] + E[1][:, :, None] * B[1][:, None, :]
                                 + E[2][:, :, None] * B[2][:, None, :])

    def torques(self, q, qd, qdd):
        return self.coords.reflect(engine.rnea(self.model, *self.coords.expand(q, qd, qdd), gravity=self.gravity))

    def condition(self, fourier, t=None):
        """The condition number of the base regressor at times t (default: the grid, one period;
        inf where it is singular), by LAPACK: reported, never compared."""
        W = self.regressor(*fourier.motion(self.grid if t is None else t))
        R = np.linalg.qr(W.reshape(-1, W.shape[-1]), mode="r")  # W's singular values are R's (not those
        sv = np.linalg.svd(R, compute_uv=False)  # of W^T W, whose eigenvalues square the condition number)
        return float(sv[0] / sv[-1]) if sv[-1] > 0 else math.inf


def _moved(motion, kind, j, h):
    """(q, qd, qdd) with joint j's q, qd or qdd (kind 0, 1, 2) moved by h at every sample, and
    that joint's moved values."""
    moved = list(motion)
    moved[kind] = motion[kind].copy()
    moved[kind][:, j] += h
    return moved, moved[kind][:, j]


def _cholesky(G):
    """L with L L^T = G in a fixed order (fixed_linalg), or None where G is not positive definite."""
    try:
        return fl.cholesky(G)
    except np.linalg.LinAlgError:
        return None
