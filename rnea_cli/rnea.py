"""Inverse dynamics by the recursive Newton-Euler algorithm (Featherstone, RBDA Table 5.1).

Vectorised over samples: every working array has the samples as its last axis, and the Python
loop runs over joints only. Each body is worked in its *aligned* frame (its rotor frame turned so
that the joint axis is z), so every joint transform is a rotation about, or a translation along, z:
the motion subspace S is a unit vector and `stator_X_rotor(q)` costs a few multiplications. Spatial
vectors are [angular; linear]; a motion array is laid out (angular|linear, x|y|z, ..., samples).
"""

import weakref

import numpy as np

from . import spatial

GRAVITY = (0.0, 0.0, -9.81)
CHUNK = 4096  # samples per pass: keeps each body's working arrays in cache


class _Plan:
    """Per-joint constants of a Model, in aligned frames; built once per model."""

    def __init__(self, model):
        self.n = model.n
        self.parent = [int(p) for p in model.parent]
        self.prismatic = [not j.is_angular for j in model.joints]
        A = [spatial.align_z(j.axis) for j in model.joints]
        self.XT = np.empty((self.n, 6, 6))  # stator'_X_parent': the fixed part of Xup
        self.I = np.empty((self.n, 6, 6))  # body inertia in its aligned frame
        for i, j in enumerate(model.joints):
            A_parent = np.eye(3) if j.parent < 0 else A[j.parent]
            # parent'_H_stator' = inv(rotor_H_parent') parent_X_stator stator_H_stator'
            H = spatial.pose(A_parent.T) @ j.parent_X_stator @ spatial.pose(A[i])
            self.XT[i] = spatial.xup(H)
            # aligned_X_rotor = rot(A): I' = rot(A)^T I rot(A)
            self.I[i] = spatial.inertia_to(model.inertia[i], spatial.rot(A[i]))
        self.XT_T = np.ascontiguousarray(self.XT.transpose(0, 2, 1))


_plans = weakref.WeakKeyDictionary()


def _plan(model):
    plan = _plans.get(model)
    if plan is None:
        plan = _plans[model] = _Plan(model)
    return plan


def rnea(model, q, qd, qdd, *, gravity=GRAVITY):
    """Joint torques/forces tau = ID(q, qd, qdd) for a fixed-base tree.

    q, qd, qdd: (N, n) for a trajectory or (n,) for one sample, columns in `model.joint_names`
    order (rad, m; rad/s, m/s; rad/s², m/s²). gravity: (3,) in the root frame, m/s².
    Returns tau with the same shape (N·m for revolute joints, N for prismatic ones).
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

    plan = _plan(model)
    N = q.shape[0]
    tau = np.empty((N, model.n))
    work = _Work(model.n, min(N, CHUNK))
    for start in range(0, N, CHUNK):
        stop = min(start + CHUNK, N)
        # (n, N) rows, contiguous: numpy's vector kernels (cos, sin, +, *) need unit stride
        qT, qdT, qddT = (np.ascontiguousarray(x[start:stop].T) for x in (q, qd, qdd))
        tau[start:stop] = _rnea_chunk(plan, work.view(stop - start), qT, qdT, qddT, gravity).T
    return tau[0] if single else tau


class _Work:
    """Working arrays for chunks of up to N samples, allocated once per call and reused."""

    def __init__(self, n, N):
        self.buffers = {
            "va": (n, 2, 3, 2),  # [v_i, a_i] per body: (angular|linear, x|y|z, v|a, N), aligned frame
            "f": (n, 2, 3),  # f_i: (angular|linear, x|y|z, N)
            "Im": (2, 3, 2),  # [I_i v_i, I_i a_i]
            "t1": (2, 2), "t2": (2, 2), "t3": (2,), "g": (6,), "tau": (n,),
        }
        self.memory = {k: np.empty(shape + (N,)) for k, shape in self.buffers.items()}

    def view(self, N):
        """The arrays for a chunk of N samples (the last one may be shorter)."""
        return {k: a if a.shape[-1] == N else np.empty(a.shape[:-1] + (N,)) for k, a in self.memory.items()}


def _rnea_chunk(plan, work, q, qd, qdd, gravity):
    """tau (n, N) for q, qd, qdd of shape (n, N); work: the arrays of `_Work.view(N)`.

    Every step writes into preallocated arrays (`out=`, in-place operators): at these sizes numpy's
    time goes to passes over memory, so no temporary is made that the algebra does not need.
    """
    n, N = q.shape
    c, s = np.cos(q), np.sin(q)
    # a_0 = -a_grav: gravity as a fictitious acceleration of the root
    a0 = np.concatenate([np.zeros(3), -gravity])
    va, f, Im, tau = work["va"], work["f"], work["Im"], work["tau"]
    t1, t2, t3, g = work["t1"], work["t2"], work["t3"], work["g"]

    # Pass 1: v_i = Xup_i v_p + S_i qd_i ;  a_i = Xup_i a_p + S_i qdd_i + v_i x S_i qd_i
    for i in range(n):
        p, m = plan.parent[i], va[i]
        if p < 0:
            m[:, :, 0] = 0.0
            m[:, :, 1] = (plan.XT[i] @ a0).reshape(2, 3, 1)
        else:
            np.matmul(plan.XT[i], va[p].reshape(6, 2 * N), out=m.reshape(6, 2 * N))
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

        # f_i = I_i a_i + v_i x* I_i v_i ;  v x* [h_n; h_f] = [w x h_n + u x h_f; w x h_f]
        np.matmul(plan.I[i], m.reshape(6, 2 * N), out=Im.reshape(6, 2 * N))
        w, u, h = m[0, :, 0], m[1, :, 0], Im[:, :, 0]
        fi = f[i]
        fi[...] = Im[:, :, 1]
        for k, (a, b) in enumerate(((1, 2), (2, 0), (0, 1))):
            # (w x h)_k = w_a h_b - w_b h_a, for h_n and h_f at once
            np.multiply(h[:, b], w[a], out=t3)
            fi[:, k] += t3
            np.multiply(h[:, a], w[b], out=t3)
            fi[:, k] -= t3
            # (u x h_f)_k
            np.multiply(h[1, b], u[a], out=t3[0])
            fi[0, k] += t3[0]
            np.multiply(h[1, a], u[b], out=t3[0])
            fi[0, k] -= t3[0]

    # Pass 2: tau_i = S_i^T f_i ;  f_p += Xup_i^T f_i
    for i in range(n - 1, -1, -1):
        fi = f[i]
        S = 1 if plan.prismatic[i] else 0
        tau[i] = fi[S, 2]
        p = plan.parent[i]
        if p < 0:
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
