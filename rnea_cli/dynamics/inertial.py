"""Inertial parameters and the joint-torque regressor Y(q, qd, qdd): tau = Y pi, linear in them.

(Not named regressor.py: importing a submodule `rnea_cli.regressor` would replace the exported
function `rnea_cli.regressor` by the module.)

pi holds 10 numbers per body (`PARAMETERS`): the mass m, the first moment h = m c (3) and the
rotational inertia about the body frame's origin (6, Pinocchio's order xx, xy, yy, xz, yz, zz),
all in the body's own (rotor) frame; `parameters(model)` is the model's own pi.

For body i with velocity [w; u] and acceleration [al; b] in its frame (gravity as a_0 = -a_g):

    f_i = I_i a_i + v_i x* I_i v_i = [I_o al + w x (I_o w) + h x b';  m b' + al x h + w x (w x h)]

with b' = b + w x u, the acceleration of the frame's origin: f_i = A_i pi_i, A_i (6, 10) in w, al
and b' alone. Joint j carries the bodies below it, tau_j = sum_i S_j^T jX_i^* f_i, so

    Y[j, body i] = s_ji^T A_i,      s_ji = iX_j S_j,

s_ji being joint j's column of body i's Jacobian, in body i's frame. The forward pass carries these
columns along with v and a (one transform of [v, a, J] per body) and needs no backward pass.

Like the engine (docs/engine.md), bodies are worked in their aligned frames (joint axis = z), the
samples are the last axis of every working array and the Python loop runs over bodies only. Every
operation on samples is an element-wise +, -, * of arrays (or by a per-model constant) in a fixed
order, never a product or sum that BLAS or a SIMD reduction could round by CPU or by length: a
sample's Y is the same bits alone, among others and in any chunk.
"""

import threading

import numpy as np

from . import engine, spatial

PARAMETERS = ("m", "mx", "my", "mz", "ixx", "ixy", "iyy", "ixz", "iyz", "izz")
CHUNK = 4096  # samples per pass: fewer numpy calls a sample, on working arrays that stay in L2 (1024-8192 measured)
UNTURNED = ((0, 1, 2), (False, False, False))  # `_signed_permutation` of the identity


def dynamic_parameters(I):
    """(10,) [m, h, I_o] of a (6, 6) spatial inertia [[I_o, skew(h)], [skew(h)^T, m 1]] (`spatial.mcI`)."""
    I = np.asarray(I, dtype=float)
    return np.array([I[5, 5], I[2, 4], I[0, 5], I[1, 3], I[0, 0], I[0, 1], I[1, 1], I[0, 2], I[1, 2], I[2, 2]])


def spatial_inertia(pi):
    """(6, 6) spatial inertia of one body's (10,) parameters: the inverse of `dynamic_parameters`."""
    m, hx, hy, hz, xx, xy, yy, xz, yz, zz = (float(x) for x in pi)
    H = spatial.skew((hx, hy, hz))
    I = np.zeros((6, 6))
    I[:3, :3] = [[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]
    I[:3, 3:] = H
    I[3:, :3] = H.T
    I[3:, 3:] = m * np.eye(3)
    return I


def moved(a_H_b):
    """(10, 10) T with pi_a = T pi_b: a body's parameters given in frame b, expressed in frame a."""
    X = spatial.xup(a_H_b)  # b_X_a; I_a = b_X_a^T I_b b_X_a, linear in I_b
    return np.column_stack([dynamic_parameters(spatial.inertia_to(spatial_inertia(e), X)) for e in np.eye(10)])


def bodies(model, floating=None):
    """The bodies of Y's columns, 10 each: -1 (the root) first for a floating base, then 0 .. n-1."""
    floating = model.floating if floating is None else floating
    return ([-1] if floating else []) + list(range(model.n))


def parameters(model, floating=None):
    """(10 · bodies,) the model's own pi, in the order of `bodies`."""
    return np.concatenate([dynamic_parameters(model.root_inertia if b < 0 else model.inertia[b])
                           for b in bodies(model, floating)] or [np.zeros(0)])


class Plan:
    """The constants of a Model for the regressor: per joint its parent, kind, alignment A (A e_z =
    axis), the fixed part of Xup as rot(E) xlt(p) between aligned frames, and the rows of Y (the
    base's six, then the joints of its Jacobian) its body's columns reach."""

    def __init__(self, model, floating):
        self.n, self.floating = model.n, floating
        self.parent = [int(p) for p in model.parent]
        self.kind = ["fixed" if j.type == "fixed" else "revolute" if j.is_angular else "prismatic"
                     for j in model.joints]
        self.fixed = [i for i, k in enumerate(self.kind) if k == "fixed"]
        self.A = [spatial.align_z(j.axis) for j in model.joints]
        self.aligned = [np.array_equal(A, np.eye(3)) for A in self.A]  # the rotor frame is the aligned one
        self.signed = [_signed_permutation(A) for A in self.A]  # A's columns are ± unit vectors: or None
        self.E, self.p = [], []
        for i, j in enumerate(model.joints):
            A_parent = np.eye(3) if j.parent < 0 else self.A[j.parent]
            # parent'_H_stator' = inv(parent_H_parent') parent_H_stator stator_H_stator'; xup = rot(R^T) xlt(p)
            H = spatial.pose(A_parent.T) @ j.parent_H_stator @ spatial.pose(self.A[i])
            self.E.append(H[:3, :3].T.copy())
            self.p.append(H[:3, 3].copy())
        base = 6 if floating else 0
        self.rows = base + model.n
        self.root_chain = list(range(base))  # the root body's Jacobian: the base's six motions, or none
        self.chain = []  # rows of body i's Jacobian columns: its parent's, then joint i's own
        for i in range(model.n):
            self.chain.append((self.root_chain if self.parent[i] < 0 else self.chain[self.parent[i]]) + [base + i])
        g = model.world_H_root[:3, :3] if floating else np.eye(3)
        self.world_R_root = np.asarray(g, dtype=float)


def _signed_permutation(A):
    """(rows, signs) with A[:, r] = signs[r] e_rows[r] when every column of A is a ± unit vector
    (an axis along ±x, ±y or ±z), else None."""
    rows = tuple(int(np.flatnonzero(A[:, r])[0]) for r in range(3) if np.count_nonzero(A[:, r]) == 1)
    if len(rows) != 3 or not all(abs(A[rows[r], r]) == 1.0 for r in range(3)):
        return None
    return rows, tuple(bool(A[rows[r], r] < 0) for r in range(3))


def plan(model, floating):
    key = ("inertial.Plan", floating)
    if key not in model.derived:
        model.derived[key] = Plan(model, floating)
    return model.derived[key]


def regressor(model, q, qd, qdd, *, gravity=engine.GRAVITY, base=None, out=None, columns=None, compressed=False):
    """Y with tau = Y pi (pi = `parameters(model)` gives the engine's torques).

    q, qd, qdd: (N, n) or (n,) as for `engine.rnea` (rad, m; rad/s, m/s; rad/s², m/s²); gravity (3,)
    in the root frame (in the world for a floating base), m/s². base: None for a fixed base, or
    (pose, twist, dtwist) of a floating one as in `engine.inverse_dynamics`.

    Fixed base: Y is (N, n, 10 n), row j joint j's torque, columns 10 per body i = 0 .. n-1.
    Floating base: Y is (N, 6 + n, 10 (n + 1)): rows 0-5 the base wrench [n; f] in the base frame
    (`Dynamics.base_wrench`), then the n joints; columns the root body's 10 first, then the n
    bodies'. Parameters are those of `PARAMETERS`, in each body's frame. A single sample ((n,)
    arrays) gives Y without the sample axis. Y's samples are its fastest axis in memory (a view
    of a (rows, columns, N) array): `np.ascontiguousarray(Y)` for row-major.

    out: a (rows, columns, N) array to write Y into (and return transposed), for a caller that
    makes Y again and again: only the blocks of the joints above each body are written, the
    rest keep what they hold, so pass zeros the first time and the same array after.

    columns: the only columns of Y to make (indices; say the base parameters'), for a caller
    that needs no others: every other column keeps what it holds (0, or out's). A column made
    is the same bits as in the whole Y. compressed: Y has those columns alone, in their order
    (its last axis as long as `columns`): a caller taking a joint's row of them gets a view.
    """
    q, qd, qdd, single, base, _, gravity = engine._checked(model, q, qd, qdd, base, None, gravity)
    pl = plan(model, base is not None)
    if pl.fixed and any(np.any(x[:, pl.fixed] != 0) for x in (q, qd, qdd)):
        raise ValueError(f"a fixed joint ({', '.join(model.joints[i].name for i in pl.fixed)}) has a q, qd or "
                         "qdd other than 0")
    N = len(q)
    size = 10 * len(bodies(model, pl.floating))
    if compressed and columns is None:
        raise ValueError("compressed needs the columns to make")
    shape = (pl.rows, len(columns) if compressed else size, N)
    if out is not None and (out.shape != shape or out.dtype != np.float64):
        raise ValueError(f"out is {out.dtype} of shape {out.shape}; Y needs float64 of shape {shape}")
    Y = np.zeros(shape) if out is None else out
    wanted = _wanted(size, range(size) if columns is None else columns, compressed)
    qT, qdT, qddT = (np.ascontiguousarray(x.T) for x in (q, qd, qdd))  # (n, N): rows of unit stride
    for start in range(0, N, CHUNK):
        rows = slice(start, min(N, start + CHUNK))
        root = None if base is None else [x[rows] for x in base]
        _chunk(pl, qT[:, rows], qdT[:, rows], qddT[:, rows], gravity, root, Y[:, :, rows], wanted)
    if getattr(_local, "work", None) is not None and _local.work.nbytes > KEPT:
        _local.work = None
    return Y[:, :, 0] if single else Y.transpose(2, 0, 1)


def _wanted(size, columns, compressed=False):
    """Per body (10 columns each) (only, at, start, width): its columns c in `columns` (0-9) and
    where each goes in Y[:, start:start + width], ascending (c itself, or with compressed, the
    column's place among `columns`, sorted)."""
    given = np.asarray(columns)
    if given.ndim != 1 or (given.size and given.dtype.kind not in "iu"):
        raise ValueError("columns must be a list of column indices")
    columns = given.astype(int)
    if columns.size and (columns.min() < 0 or columns.max() >= size):
        raise ValueError(f"columns must be in 0 .. {size - 1}")
    if compressed and np.any(np.diff(columns) <= 0):
        raise ValueError("compressed columns must be ascending, each once")
    chosen = np.zeros(size, dtype=bool)
    chosen[columns] = True
    out = []
    for b, row in enumerate(chosen.reshape(-1, 10)):
        only = tuple(int(c) for c in np.flatnonzero(row))
        if compressed:
            start = int(np.searchsorted(columns, 10 * b))
            out.append((only, tuple(range(len(only))), start, len(only)))
        else:
            out.append((only, only, 10 * b, 10))
    return out


def _chunk(pl, q, qd, qdd, gravity, base, out, wanted):
    """Y for one chunk of samples into out (rows, columns, N); q, qd, qdd are (n, N); wanted:
    `_wanted`'s columns per body."""
    shift = 1 if pl.floating else 0  # body i's place in `wanted`
    n, N = q.shape
    work = _scratch(pl, N)
    c, s = spatial.cos_sin(q, work.c, work.s, work.cos_sin)
    # the root body: [v, a, J] with v_0 = 0, a_0 = -a_g (fixed) or the base's motion and its Jacobian
    M = {-1: _root_motion(pl, gravity, base, N)}
    if base is not None:
        _coefficients(work, M[-1], None, None)
        only, at, start, width = wanted[0]
        _contract(work, M[-1][:, :, 2:], out[0:6, start:start + width], only, at)
    for i in range(n):
        p = pl.parent[i]
        d = M[p].shape[2]
        m = M[i] = work.M[i]  # (2, 3, d + 1, N)
        # Pass 1: [v, a, J]_i = Xup_i [v, a, J]_p (Xup = XJ(q) Xtree), then the joint's own motion and column
        _transform(pl.E[i], pl.p[i], M[p], m[:, :, :d], work)
        if pl.kind[i] == "revolute":
            _rotate(m[:, :, :d], c[i], s[i], work)
            _revolute_motion(m, qd[i], qdd[i], work.t[0])
        elif pl.kind[i] == "prismatic":
            _translate(m[:, :, :d], q[i], work.t[0, :d])
            _prismatic_motion(m, qd[i], qdd[i], work.t[0])
        m[:, :, d] = 0.0
        m[0 if pl.kind[i] == "revolute" else 1, 2, d] = 1.0  # S_i: e_z, angular or linear
        # Y[j, i] = s_ji^T A_i for the joints j above i, and S_i^T A_i for joint i itself
        chain, (only, at, start, width) = pl.chain[i], wanted[i + shift]
        if only == ():
            continue
        _coefficients(work, m, None if pl.aligned[i] else pl.A[i], pl.signed[i])
        apart = chain != list(range(chain[0], chain[-1] + 1))  # rows apart in the tree: worked apart
        block = np.empty((len(chain), width, N)) if apart else out[chain[0]:chain[-1] + 1, start:start + width]
        _contract(work, m[:, :, 2:-1], block[:-1], only, at)
        own = block[-1]
        z, negated = work.z  # the aligned row n_z or f_z of A_i: ± this row of work.Cn, work.Cf
        revolute = pl.kind[i] == "revolute"  # S_i^T A_i: revolute S_i = [e_z; 0], the row n_z; else f_z
        for k, t in zip(only, at):
            entry = (work.Cn[z, k - 1] if k else None) if revolute else (work.Cf[z, k] if k <= 3 else None)
            if entry is None:
                own[t] = 0.0
            elif negated:
                np.negative(entry, out=own[t])
            else:
                own[t] = entry
        if apart:
            out[np.ix_(chain, [start + t for t in at])] = block[:, list(at)]


_local = threading.local()  # per thread the last chunk's _Work: a run's chunks reuse its arrays
KEPT = 32 << 20  # bytes: a thread keeps its _Work between calls up to this size (a big robot's goes)


def _scratch(pl, N):
    """The _Work of a chunk of N samples for a Plan: this thread's last one when it fits (big
    arrays made anew each chunk cost the allocator fresh pages, chunk after chunk)."""
    last = getattr(_local, "work", None)
    if last is None or last.plan is not pl or last.N != N:
        last = _local.work = _Work(N, max([len(ch) for ch in pl.chain] + [len(pl.root_chain), 1]))
        last.plan = pl
        last.c, last.s, last.cos_sin = np.empty((pl.n, N)), np.empty((pl.n, N)), np.empty((5, pl.n, N))
        last.M = [np.empty((2, 3, len(pl.chain[i]) + 2, N)) for i in range(pl.n)]  # [v, a, J] per body
        last.nbytes = sum(x.nbytes for x in vars(last).values() if isinstance(x, np.ndarray)) + sum(
            x.nbytes for x in last.M + list(last.rotor))
    return last


class _Work:
    """Scratch arrays of a chunk, for Jacobians of up to d columns."""

    def __init__(self, N, d):
        self.N = N
        self.X = np.empty((2, 3, d + 2, N))  # [w; u - p x w] of a transform
        self.t = np.empty((2, d + 2, N))
        self.products = np.empty((6, N))  # w_x², w_y², w_z², w_x w_y, w_x w_z, w_y w_z
        self.kin = np.empty((2, 3, 3, N))  # [w, al, b'] aligned, and in the rotor frame
        self.Cn = np.empty((3, 9, N))  # rows n_x, n_y, n_z of A_i over h, I (Y's columns 1-9)
        self.Cf = np.empty((3, 4, N))  # rows f_x, f_y, f_z of A_i over m, h (Y's columns 0-3)
        self.rotor = (np.empty((3, 9, N)), np.empty((3, 4, N)))
        self.T9 = np.empty((9, N))
        self.T4 = np.empty((4, N))
        self._terms = {}
        self.terms = self.z = None  # `_coefficients`' (the body's)

    def terms_for(self, signed):
        """Per column of Y the terms of J^T A_i, (half of J, row r, A_i's entry, negated), from A_i's
        rows in Cn, Cf: in the aligned frame (signed None), or in the rotor frame with the aligned
        row r = ±(rotor row rows[r]) (signed = (rows, signs), `_signed_permutation`). The rotor
        frame's Cn[r', r'] is 0 by construction and left out; a general rotation's rows are not."""
        if signed not in self._terms:
            rows, signs = signed or UNTURNED
            zero = signed is not None  # Cn[r', r'] = 0 (h_r' has no n_r' term)
            self._terms[signed] = [[(1, r, self.Cf[rows[r], 0], signs[r]) for r in range(3)]] + [
                [(0, r, self.Cn[rows[r], c - 1], signs[r]) for r in range(3) if not (zero and rows[r] == c - 1)] +
                ([(1, r, self.Cf[rows[r], c], signs[r]) for r in range(3)] if c <= 3 else []) for c in range(1, 10)]
        return self._terms[signed]


def _root_motion(pl, gravity, base, N):
    """The root body's [v, a, J] (2, 3, 2 + columns, N): a_0 = -a_g (fixed) or the base's twist and
    dtwist - [0; R^T g], with the base's six unit motions as Jacobian columns."""
    M = np.zeros((2, 3, 2 + len(pl.root_chain), N))
    if base is None:
        for r in range(3):
            M[1, r, 1] = -gravity[r]
        return M
    pose, twist, dtwist = base
    Q = spatial.quaternion_matrix(pose[:, 3:])  # (3, 3, N): world_R_root = W Q
    g = pl.world_R_root.T @ gravity  # W^T g, a constant of the call
    for r in range(6):
        M[r // 3, r % 3, 0] = twist[:, r]
        M[r // 3, r % 3, 1] = dtwist[:, r]
        M[r // 3, r % 3, 2 + r] = 1.0
    for b in range(3):  # (R^T g)_b = sum_a Q[a, b] (W^T g)_a
        for a in range(3):
            if g[a] != 0.0:
                M[1, b, 1] -= Q[a, b] * g[a]
    return M


def _combine(weights, xs, out, tmp):
    """out = sum_k weights[k] xs[k] over the weights that are not zero, in order."""
    first = True
    for weight, x in zip(weights, xs):
        if weight == 0.0:
            continue
        if first:
            if weight == 1.0:
                np.copyto(out, x)
            elif weight == -1.0:
                np.negative(x, out=out)
            else:
                np.multiply(x, weight, out=out)
            first = False
        elif weight == 1.0:  # x * 1 and x * -1 are exact: the same bits without the product
            out += x
        elif weight == -1.0:
            out -= x
        else:
            np.multiply(x, weight, out=tmp)
            out += tmp
    if first:
        out[...] = 0.0


def _transform(E, p, m, out, work):
    """out = rot(E) xlt(p) m for motions m (2, 3, K, N): [w; u] -> [E w; E (u - p x w)]."""
    K = m.shape[2]
    w, u = m[0], m[1]
    X, tmp = work.X[:, :, :K], work.t[:, :K]
    X[0] = w
    # u - p x w, (p x w) = (p_y w_z - p_z w_y, p_z w_x - p_x w_z, p_x w_y - p_y w_x)
    for r, (a, b) in enumerate(((1, 2), (2, 0), (0, 1))):
        _combine((1.0, -p[a], p[b]), (u[r], w[b], w[a]), X[1, r], tmp[0])
    for r in range(3):  # both halves at once
        _combine(E[r], X.transpose(1, 0, 2, 3), out[:, r], tmp)


def _rotate(m, c, s, work):
    """m <- rot(Rz(q)^T) m, both halves (engine._rotate_motion, over K columns)."""
    K = m.shape[2]
    engine._rotate_motion(m, c, s, work.t[:, :K], work.X[0, :2, :K])


_translate = engine._translate_motion  # m <- xlt(q e_z) m


def _revolute_motion(m, qd, qdd, t):
    """v += [e_z; 0] qd; a += [e_z; 0] qdd + v x [e_z; 0] qd = qd (v_y, -v_x, 0) in both halves."""
    t = t[0]
    m[0, 2, 0] += qd
    for h in range(2):
        np.multiply(m[h, 1, 0], qd, out=t)
        m[h, 0, 1] += t
        np.multiply(m[h, 0, 0], qd, out=t)
        m[h, 1, 1] -= t
    m[0, 2, 1] += qdd


def _prismatic_motion(m, qd, qdd, t):
    """v += [0; e_z] qd; a += [0; e_z] qdd + v x [0; e_z] qd = qd [0; (w_y, -w_x, 0)]."""
    t = t[0]
    m[1, 2, 0] += qd
    np.multiply(m[0, 1, 0], qd, out=t)
    m[1, 0, 1] += t
    np.multiply(m[0, 0, 0], qd, out=t)
    m[1, 1, 1] -= t
    m[1, 2, 1] += qdd


def _contract(work, J, out, only, at):
    """out (d, 10, N) = J^T A_i for Jacobian columns J (2, 3, d, N), from A_i's rows in work.Cn, work.Cf:
    the angular half of J reaches Y's columns 1-9 (h, I), the linear half columns 0-3 (m, h). Column
    by column, the terms in `work.terms[c]` (A_i's entries not zero by construction), in order;
    only: the columns made, at: where each goes in out."""
    d = J.shape[2]
    if d == 0:
        return
    t = work.t[0, :d]
    for c, place in zip(only, at):
        terms, dest = work.terms[c], out[:, place]
        for k, (h, r, C, negated) in enumerate(terms):
            if k == 0:
                np.multiply(J[h, r], C, out=dest)
                if negated:
                    np.negative(dest, out=dest)
            else:
                np.multiply(J[h, r], C, out=t)
                if negated:
                    dest -= t
                else:
                    dest += t


def _coefficients(work, m, A, signed):
    """A_i's rows into work.Cn, work.Cf (module docstring) from a body's [v, a, ...] m in its aligned
    frame: in the rotor frame, where the parameters are, then turned to act on aligned motions,
    rot(A)^T A_i, when the frames differ (A: the rotor frame's axes in the aligned one). Where A is
    a signed permutation (`_signed_permutation`), the rows stay in the rotor frame and
    work.terms picks them with their signs: the same products, none by a 0 or a 1."""
    kin, P = work.kin, work.products
    w, u, al, b = m[0, :, 0], m[1, :, 0], m[0, :, 1], m[1, :, 1]
    bp = kin[0, 2]
    # b' = b + w x u
    for r, (i, j) in enumerate(((1, 2), (2, 0), (0, 1))):
        np.multiply(w[i], u[j], out=bp[r])
        np.multiply(w[j], u[i], out=P[0])
        bp[r] -= P[0]
        bp[r] += b[r]
    if A is None:
        w, al = m[0, :, 0], m[0, :, 1]
    else:  # x_rotor = A x_aligned for w, al, b'
        kin[0, 0], kin[0, 1] = w, al
        for r in range(3):
            _combine(A[r], kin[0].transpose(1, 0, 2), kin[1, :, r], work.t[0, :3])
        w, al, bp = kin[1]
    signed = UNTURNED if A is None else signed
    turned = signed is None
    Cn, Cf = work.rotor if turned else (work.Cn, work.Cf)
    work.terms = work.terms_for(None if turned else signed)
    work.z = (2, False) if turned else (signed[0][2], signed[1][2])
    xx, yy, zz, xy, xz, yz = P
    for k, (i, j) in enumerate(((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))):
        np.multiply(w[i], w[j], out=P[k])
    bx, by, bz = bp
    ax, ay, az = al
    # n = I_o al + w x (I_o w) + h x b': rows n_x, n_y, n_z over h_x, h_y, h_z, I xx, xy, yy, xz, yz, zz
    Cn[0, 0] = Cn[1, 1] = Cn[2, 2] = 0.0
    Cn[0, 1] = bz
    np.negative(by, out=Cn[0, 2])
    np.negative(bz, out=Cn[1, 0])
    Cn[1, 2] = bx
    Cn[2, 0] = by
    np.negative(bx, out=Cn[2, 1])
    Cn[0, 3] = ax
    Cn[1, 3] = xz
    np.negative(xy, out=Cn[2, 3])
    np.subtract(ay, xz, out=Cn[0, 4])
    np.add(ax, yz, out=Cn[1, 4])
    np.subtract(xx, yy, out=Cn[2, 4])
    np.negative(yz, out=Cn[0, 5])
    Cn[1, 5] = ay
    Cn[2, 5] = xy
    np.add(az, xy, out=Cn[0, 6])
    np.subtract(zz, xx, out=Cn[1, 6])
    np.subtract(ax, yz, out=Cn[2, 6])
    np.subtract(yy, zz, out=Cn[0, 7])
    np.subtract(az, xy, out=Cn[1, 7])
    np.add(ay, xz, out=Cn[2, 7])
    Cn[0, 8] = yz
    np.negative(xz, out=Cn[1, 8])
    Cn[2, 8] = az
    # f = m b' + al x h + w x (w x h): rows f_x, f_y, f_z over m, h_x, h_y, h_z
    Cf[0, 0], Cf[1, 0], Cf[2, 0] = bx, by, bz
    np.add(yy, zz, out=Cf[0, 1])
    np.negative(Cf[0, 1], out=Cf[0, 1])
    np.add(xy, az, out=Cf[1, 1])
    np.subtract(xz, ay, out=Cf[2, 1])
    np.subtract(xy, az, out=Cf[0, 2])
    np.add(xx, zz, out=Cf[1, 2])
    np.negative(Cf[1, 2], out=Cf[1, 2])
    np.add(yz, ax, out=Cf[2, 2])
    np.add(xz, ay, out=Cf[0, 3])
    np.subtract(yz, ax, out=Cf[1, 3])
    np.add(xx, yy, out=Cf[2, 3])
    np.negative(Cf[2, 3], out=Cf[2, 3])
    if turned:  # rows of rot(A)^T A_i: row r' = sum_r A[r, r'] row r
        for r in range(3):
            _combine(A[:, r], Cn, work.Cn[r], work.T9)
            _combine(A[:, r], Cf, work.Cf[r], work.T4)
