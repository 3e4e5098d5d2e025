"""Inverse dynamics by the recursive Newton-Euler algorithm (Featherstone, RBDA Table 5.1).

Vectorised over samples: every working array has the samples as its last axis, and the Python
loop runs over joints only. Each body is worked in its *aligned* frame (its rotor frame turned so
that the joint axis is z), so every joint transform is a rotation about, or a translation along, z:
the motion subspace S is a unit vector and `stator_X_rotor(q)` costs a few multiplications.

Spatial vectors are [angular; linear] here as everywhere in rnea_cli: twists [w; v], wrenches
[n; f] (moment; force). A motion array is laid out (angular|linear, x|y|z, ..., samples).
"""

import math
import weakref
from typing import NamedTuple

import numpy as np

from . import spatial

GRAVITY = (0.0, 0.0, -9.81)
CHUNK = 6144  # samples per pass: each body's working arrays stay in cache; 4096 was 6 % slower, 8192 no faster


class _Plan:
    """Per-joint constants of a Model, in aligned frames; built once per model."""

    def __init__(self, model):
        self.parent = [int(p) for p in model.parent]  # -1, the root, is also the last slot of the work arrays
        self.prismatic = [not j.is_angular for j in model.joints]  # a fixed joint too: at q = 0, exact
        self.fixed = [i for i, j in enumerate(model.joints) if j.type == "fixed"]
        self.A = np.array([spatial.align_z(j.axis) for j in model.joints]).reshape(-1, 3, 3)
        self.XT = np.empty((model.n, 6, 6))  # stator'_X_parent': the fixed part of Xup
        inertia = np.empty((model.n, 6, 6))  # each body's, in its aligned frame
        for i, j in enumerate(model.joints):
            A_parent = np.eye(3) if j.parent < 0 else self.A[j.parent]
            # parent'_H_stator' = inv(rotor_H_parent') parent_X_stator stator_H_stator'
            H = spatial.pose(A_parent.T) @ j.parent_X_stator @ spatial.pose(self.A[i])
            self.XT[i] = spatial.xup(H)
            # aligned_X_rotor = rot(A): I' = rot(A)^T I rot(A)
            inertia[i] = spatial.inertia_to(model.inertia[i], spatial.rot(self.A[i]))
        self.XT_T = np.ascontiguousarray(self.XT.transpose(0, 2, 1))
        self.K = [BodyForce(I) for I in inertia]
        self.K_root = BodyForce(np.asarray(model.root_inertia))
        self.n = model.n
        self.spare = []  # a _Work kept for the next call: ~25 rows of CHUNK doubles a joint, 9 MB for a 7-joint arm

    def take_work(self, N, wrenches):
        """Working arrays for chunks of N samples (with room for joint wrenches if asked): the spare
        if it will do (a concurrent call finds none and makes its own: list.pop is atomic), else new ones."""
        try:
            work = self.spare.pop()
        except IndexError:
            return _Work(self.n, N, wrenches)
        return work if work.N >= N and (work.wrenches or not wrenches) else _Work(self.n, N, wrenches)

    def keep_work(self, work):
        """Keep one spare for the next call (not one per thread that ever ran at the same time)."""
        if not self.spare:
            self.spare.append(work)


PAIRS = [(a, b) for a in range(6) for b in range(a, 6)]  # the 21 products v_a v_b, a <= b


def force_matrix(I):
    """K (6, 27) with I a + v x* I v = K [a; v_a v_b for (a, b) in PAIRS].

    v x* (I v) = crf(v) I v is quadratic in v: since crf(v) = sum_a v_a crf(e_a), it is
    sum_ab v_a v_b (crf(e_a) I e_b), so each product's column is exact in the entries of I."""
    B = np.array([spatial.crf(e) @ I for e in np.eye(6)])  # B[a][:, b] = crf(e_a) I e_b
    K = np.zeros((6, 27))
    K[:, :6] = I
    for k, (a, b) in enumerate(PAIRS):
        K[:, 6 + k] = B[a][:, b] if a == b else B[a][:, b] + B[b][:, a]
    return K


# Products whose column of K is zero for every rigid body, though round-off may leave ~1e-17 in
# it: v_lin x (m v_lin) = 0, and the w_a v_a terms cancel between w x n and v_lin x f (with
# n = I_o w + m c x v_lin, f = m v_lin - m c x w, both give m c (w . v_lin)).
VANISHING = {(a, b) for a in range(3, 6) for b in range(a, 6)} | {(0, 3), (1, 4), (2, 5)}


class BodyForce:
    """f = I a + v x* I v for one body, as K[:, used] @ [a; v_a v_b for the used pairs].

    Only the products that can contribute are formed: not the 9 VANISHING ones, which leaves at
    most 12 of the 21, nor those whose column is exactly zero (a centre of mass on an axis of the
    joint frame). Dropping a column changes nothing but rounding. The products are formed in runs,
    v_a * v[b0:b1], one numpy call each (see `_body_force`)."""

    def __init__(self, I):
        K = force_matrix(I)
        used = [p for k, p in enumerate(PAIRS) if p not in VANISHING and K[:, 6 + k].any()]
        self.runs = []  # (a, b0, b1): Z rows for v_a v_b, b0 <= b < b1, in order
        for a, b in used:
            if self.runs and self.runs[-1][0] == a and self.runs[-1][2] == b:
                self.runs[-1][2] += 1
            else:
                self.runs.append([a, b, b + 1])
        self.K = np.ascontiguousarray(K[:, list(range(6)) + [6 + PAIRS.index(p) for p in used]])


_plans = weakref.WeakKeyDictionary()


def _plan(model):
    plan = _plans.get(model)
    if plan is None:
        plan = _plans[model] = _Plan(model)
    return plan


class Dynamics(NamedTuple):
    """What `inverse_dynamics` returns; arrays have the samples first."""

    tau: np.ndarray  # (N, n) joint torques (N·m) / forces (N)
    base_wrench: np.ndarray | None  # (N, 6) [n; f] on the floating base, in the base frame
    joint_wrenches: np.ndarray | None  # (N, n, 6) [n; f] from parent to child, in each joint's (child) frame


def rnea(model, q, qd, qdd, *, gravity=GRAVITY, f_ext=None):
    """Joint torques/forces tau = ID(q, qd, qdd) for a fixed-base tree.

    q, qd, qdd: (N, n) for a trajectory or (n,) for one sample, columns in `model.joint_names`
    order (rad, m; rad/s, m/s; rad/s², m/s²). gravity: (3,) in the root frame, m/s².
    f_ext: optional {body: (N, 6) [n; f]} external wrenches on bodies (0..n-1; -1 the root), each
    in its body's frame at the frame origin. Returns tau with the shape of q (N·m or N).
    """
    return inverse_dynamics(model, q, qd, qdd, gravity=gravity, f_ext=f_ext).tau


def inverse_dynamics(model, q, qd, qdd, *, gravity=GRAVITY, base=None, f_ext=None, wrenches=False):
    """RNEA with the options `rnea` leaves out; returns a `Dynamics`.

    base: None for a fixed base, or (pose, twist, dtwist) for a floating one: pose (N, 7) is the
    root body's position and unit quaternion (x, y, z, qx, qy, qz, qw) in the world (through
    `model.world_X_root`), twist (N, 6) its [w; v] in its own frame and dtwist (N, 6) the time
    derivative of that twist. gravity is then in the world frame. wrenches: also return the wrench
    each joint transmits. A single sample ((n,) arrays) gives arrays without the sample axis.
    tau is row-major, unless q is column-major ((N, n) with each joint's column contiguous).
    """
    q, qd, qdd = (np.asarray(x, dtype=float) for x in (q, qd, qdd))
    single = q.ndim == 1
    for label, x in (("q", q), ("qd", qd), ("qdd", qdd)):
        if x.ndim not in (1, 2) or x.shape[-1] != model.n:
            raise ValueError(f"{label} has shape {x.shape}; expected (N, {model.n}) or ({model.n},)")
        if x.shape != q.shape:
            raise ValueError(f"{label} has shape {x.shape}, but q has shape {q.shape}")
    gravity = np.asarray(gravity, dtype=float)
    if gravity.shape != (3,):
        raise ValueError(f"gravity has shape {gravity.shape}; expected (3,)")
    if single:
        q, qd, qdd = q[None], qd[None], qdd[None]
    N = q.shape[0]
    if base is not None:
        base = [np.asarray(x, dtype=float) for x in base]
        for k, (label, width) in enumerate(zip(("base pose", "base twist", "base dtwist"), (7, 6, 6))):
            if base[k].shape != (N, width) and not (single and base[k].shape == (width,)):
                raise ValueError(f"{label} has shape {base[k].shape}; expected {(width,) if single else (N, width)}")
            base[k] = base[k].reshape(N, width)
    f_ext = {int(b): np.asarray(w, dtype=float).reshape(N, 6) for b, w in (f_ext or {}).items()}
    for b in f_ext:
        if not -1 <= b < model.n:
            raise ValueError(f"f_ext names body {b}; bodies are -1 (root) .. {model.n - 1}")

    plan = _plan(model)
    if plan.fixed and any(np.any(x[:, plan.fixed] != 0) for x in (q, qd, qdd)):
        raise ValueError(f"a fixed joint ({', '.join(model.joints[i].name for i in plan.fixed)}) has a q, qd or "
                         "qdd other than 0")
    # tau is laid out like q: row-major, or column-major for column-major q (what the CLI passes)
    tau = np.empty((N, model.n), order="F" if q.flags.f_contiguous and not q.flags.c_contiguous else "C")
    base_wrench = np.empty((N, 6)) if base is not None else None
    joint_wrenches = np.empty((N, model.n, 6)) if wrenches else None
    work = plan.take_work(min(N, CHUNK), wrenches)
    world_R_root = np.asarray(model.world_X_root)[:3, :3]
    for start in range(0, N, CHUNK):
        stop = min(start + CHUNK, N)
        rows = slice(start, stop)
        w = work.view(stop - start)
        # (n, N) rows of unit stride, which numpy's vector kernels need: copied from row-major
        # (N, n) input, taken as they are from column-major input (what the CLI passes)
        qT, qdT, qddT = (_rows(x[rows].T, w[k]) for x, k in ((q, "q"), (qd, "qd"), (qdd, "qdd")))
        root = None if base is None else _root_motion(world_R_root, *(x[rows] for x in base), gravity)
        fext = {b: _aligned_wrench(plan, b, x[rows]) for b, x in f_ext.items() if b >= 0 or base is not None}
        tau[rows] = _rnea_chunk(plan, w, qT, qdT, qddT, gravity, root, fext, wrenches).T
        if base is not None:
            base_wrench[rows] = w["f"][-1].reshape(6, -1).T
        if wrenches:
            # back from aligned to rotor (joint) frames: [n; f]_rotor = rot(A) [n; f]_aligned
            W = np.einsum("iab,icbk->kica", plan.A, w["W"])
            joint_wrenches[rows] = W.reshape(stop - start, model.n, 6)
    plan.keep_work(work)
    if single:
        return Dynamics(tau[0], None if base_wrench is None else base_wrench[0],
                        None if joint_wrenches is None else joint_wrenches[0])
    return Dynamics(tau, base_wrench, joint_wrenches)


def _rows(x, out):
    if x.strides[-1] == x.itemsize:
        return x
    out[...] = x
    return out


def quaternion_matrix(quat):
    """Rotation matrices (3, 3, N), the samples last, from unit quaternions (N, 4) ordered (x, y, z, w)."""
    x, y, z, w = quat.T
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def _root_motion(world_R_root, pose, twist, dtwist, gravity):
    """[v_root, a_root] as a (2, 3, 2, N) motion array: a_root = dtwist - [0; R^T g] (a_0 = -a_grav)."""
    g_local = np.einsum("abk,a->bk", quaternion_matrix(pose[:, 3:]), world_R_root.T @ gravity)  # R^T g, (3, N)
    m = np.empty((2, 3, 2, len(pose)))
    m[:, :, 0] = twist.T.reshape(2, 3, -1)
    m[:, :, 1] = dtwist.T.reshape(2, 3, -1)
    m[1, :, 1] -= g_local
    return m


def _aligned_wrench(plan, body, wrench):
    """(2, 3, N) wrench [n; f] in body's aligned frame from (N, 6) in its rotor frame."""
    w = wrench.T.reshape(2, 3, -1)
    return w if body < 0 else np.einsum("ab,iak->ibk", plan.A[body], w)  # A^T w


class _Work:
    """Working arrays for chunks of up to N samples, kept by the plan from one call to the next.
    Body arrays have n + 1 slots: the last, reached by parent index -1, is the root body.

    Each array is a flat buffer, viewed with the samples last for a chunk of any length up to N,
    so that no chunk or call allocates: fresh memory costs a page fault per 4 KB on first use,
    and glibc gives large freed blocks back to the system. Arrays made anew for each call cost
    the CLI's stream of 20k-sample blocks ~30 % of the engine's time."""

    def __init__(self, n, N, wrenches=False):
        self.N, self.wrenches = N, wrenches
        self.shapes = {
            "va": (n + 1, 2, 3, 2),  # [v_i, a_i] per body: (angular|linear, x|y|z, v|a, N), aligned frame
            "f": (n + 1, 2, 3),  # f_i: (angular|linear, x|y|z, N)
            "Z": (6 + len(PAIRS) - len(VANISHING),),  # [a_i; the v_a v_b it needs]
            "t1": (2, 2), "t2": (2, 2), "t3": (2,), "g": (6,),
            "q": (n,), "qd": (n,), "qdd": (n,),  # the chunk's input, rows of unit stride
            "c": (n,), "s": (n,), "d": (n,), "tau": (n,),
        }
        if wrenches:
            self.shapes["W"] = (n, 2, 3)  # joint wrenches
        # one allocation, each array starting on a 64-byte boundary (a cache line, an AVX-512
        # register): numpy's large arrays start 16 bytes past one, and every SIMD load then spans
        # two cache lines, which made the engine ~20 % slower
        self.rows = {k: math.prod(shape) for k, shape in self.shapes.items()}
        sizes = {k: -(-rows * N // 8) * 8 for k, rows in self.rows.items()}
        raw = np.empty(sum(sizes.values()) + 8)
        start = (-raw.ctypes.data % 64) // 8
        self.memory = {}
        for k, size in sizes.items():
            self.memory[k] = raw[start:start + size]
            start += size

    def view(self, N):
        """The arrays for a chunk of N samples."""
        return {k: a[:self.rows[k] * N].reshape(self.shapes[k] + (N,)) for k, a in self.memory.items()}


def _body_force(body, m, out, Z):
    """out = I a + v x* I v = K [a; v_a v_b] for the motion array m = [v, a] (see BodyForce)."""
    N = m.shape[-1]
    v = m[:, :, 0].reshape(6, N)
    Z[:6] = m[:, :, 1].reshape(6, N)
    row = 6
    for a, b0, b1 in body.runs:
        np.multiply(v[a], v[b0:b1], out=Z[row:row + b1 - b0])
        row += b1 - b0
    np.matmul(body.K, Z[:len(body.K[0])], out=out.reshape(6, N))


def _cos_sin(q, c, s, d):
    """cos q, sin q into c, s (d: scratch) from t = tan(q/2): c = (1 - t²)/(1 + t²), s = 2t/(1 + t²).

    numpy's float64 tan is a SIMD kernel where the CPU has one (AVX-512: ~1.7 ns a value, 1 ulp),
    while sin and cos call libm one value at a time (~14 ns each). Both results are within 1 ulp
    (2.2e-16) of cos and sin (measured for |q| up to 1e3, tested up to 1e6); q = ±pi gives
    t ~ 1.6e16, c = -1, s ~ 1.2e-16."""
    t = np.multiply(q, 0.5, out=s)
    np.tan(t, out=t)
    np.multiply(t, t, out=c)
    np.add(c, 1.0, out=d)
    np.reciprocal(d, out=d)
    np.subtract(1.0, c, out=c)
    c *= d
    t *= 2.0
    t *= d
    return c, s


def _rnea_chunk(plan, work, q, qd, qdd, gravity, root=None, fext=None, wrenches=False):
    """tau (n, N) for q, qd, qdd of shape (n, N); work: the arrays of `_Work.view(N)`.

    root: None (fixed base) or the root's (2, 3, 2, N) motion; fext: {body: (2, 3, N) aligned wrench}.
    Every step writes into preallocated arrays (`out=`, in-place operators): at these sizes numpy's
    time goes to passes over memory, so no temporary is made that the algebra does not need.
    """
    n, N = q.shape
    c, s = _cos_sin(q, work["c"], work["s"], work["d"])
    va, f, Z, tau = work["va"], work["f"], work["Z"], work["tau"]
    t1, t2, t3, g = work["t1"], work["t2"], work["t3"], work["g"]
    fext = fext or {}
    if root is None:
        # a_0 = -a_grav: gravity as a fictitious acceleration of the fixed root
        va[-1, :, :, 0] = 0.0
        va[-1, :, :, 1] = np.concatenate([np.zeros(3), -gravity]).reshape(2, 3, 1)
    else:
        va[-1] = root
        _body_force(plan.K_root, va[-1], f[-1], Z)
        if -1 in fext:
            f[-1] -= fext[-1]

    # Pass 1: v_i = Xup_i v_p + S_i qd_i ;  a_i = Xup_i a_p + S_i qdd_i + v_i x S_i qd_i
    for i in range(n):
        m = va[i]
        np.matmul(plan.XT[i], va[plan.parent[i]].reshape(6, 2 * N), out=m.reshape(6, 2 * N))
        x, y = m[:, 0], m[:, 1]  # (angular|linear, v|a, N)
        if plan.prismatic[i]:
            # stator_X_rotor = xlt(q e_z): linear part -= (q e_z) x angular part
            np.multiply(m[0, 1], q[i], out=t3)
            m[1, 0] += t3
            np.multiply(m[0, 0], q[i], out=t3)
            m[1, 1] -= t3
            S = 1  # S = e_z in the linear part
        else:
            # stator_X_rotor = rot(Rz(q)^T): x' = c x + s y, y' = c y - s x
            np.multiply(x, s[i], out=t1)
            np.multiply(y, s[i], out=t2)
            x *= c[i]
            x += t2
            y *= c[i]
            y -= t1
            S = 0  # S = e_z in the angular part
        m[S, 2, 0] += qd[i]
        # v_i x S qd_i = qd_i (v_y, -v_x, 0): revolute, in both halves; prismatic, w into the linear half
        src, dst = (m, m) if S == 0 else (m[0:1], m[1:2])
        tt = t3[: len(src)]
        np.multiply(src[:, 1, 0], qd[i], out=tt)
        dst[:, 0, 1] += tt
        np.multiply(src[:, 0, 0], qd[i], out=tt)
        dst[:, 1, 1] -= tt
        m[S, 2, 1] += qdd[i]
        # f_i = I_i a_i + v_i x* I_i v_i - f_ext_i
        _body_force(plan.K[i], m, f[i], Z)
        if i in fext:
            f[i] -= fext[i]

    # Pass 2: tau_i = S_i^T f_i ;  f_p += Xup_i^T f_i
    for i in range(n - 1, -1, -1):
        fi = f[i]
        S = 1 if plan.prismatic[i] else 0
        tau[i] = fi[S, 2]
        if wrenches:
            work["W"][i] = fi
        p = plan.parent[i]
        if p < 0 and root is None:
            continue
        if plan.prismatic[i]:
            # xlt(q e_z)^T: angular part += (q e_z) x linear part
            np.multiply(fi[1, 1], q[i], out=t3[0])
            fi[0, 0] -= t3[0]
            np.multiply(fi[1, 0], q[i], out=t3[0])
            fi[0, 1] += t3[0]
        else:
            # rot(Rz(q)): x' = c x - s y, y' = s x + c y
            x, y = fi[:, 0], fi[:, 1]
            np.multiply(x, s[i], out=t3)
            np.multiply(y, s[i], out=t1[0])
            x *= c[i]
            x -= t1[0]
            y *= c[i]
            y += t3
        np.matmul(plan.XT_T[i], fi.reshape(6, N), out=g)
        f[p] += g.reshape(2, 3, N)
    return tau
