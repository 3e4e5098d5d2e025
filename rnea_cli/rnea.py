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
    tau = np.empty((model.n, N))
    for start in range(0, N, CHUNK):
        stop = min(start + CHUNK, N)
        tau[:, start:stop] = _rnea_chunk(plan, q[start:stop].T, qd[start:stop].T, qdd[start:stop].T, gravity)
    tau = tau.T
    return tau[0] if single else tau


def _cross(a, b):
    """a x b over the first axis (x|y|z), broadcasting the rest."""
    return np.stack((a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]))


def _rnea_chunk(plan, q, qd, qdd, gravity):
    """tau (n, N) for q, qd, qdd of shape (n, N)."""
    n, N = q.shape
    c, s = np.cos(q), np.sin(q)
    # a_0 = -a_grav: gravity as a fictitious acceleration of the root
    a0 = np.concatenate([np.zeros(3), -gravity])
    f = np.empty((n, 2, 3, N))  # f_i, in body i's aligned frame
    va = [None] * n  # [v_i, a_i] per body: (angular|linear, x|y|z, v|a, N)

    # Pass 1: v_i = Xup_i v_p + S_i qd_i ;  a_i = Xup_i a_p + S_i qdd_i + v_i x S_i qd_i
    for i in range(n):
        p = plan.parent[i]
        if p < 0:
            m = np.zeros((2, 3, 2, N))
            m[:, :, 1, :] = (plan.XT[i] @ a0).reshape(2, 3, 1)
        else:
            m = (plan.XT[i] @ va[p].reshape(6, 2 * N)).reshape(2, 3, 2, N)
        x, y = m[:, 0], m[:, 1]
        if plan.prismatic[i]:
            # stator_X_rotor = xlt(q e_z): linear part -= (q e_z) x angular part
            lin_x = m[1, 0] + q[i] * m[0, 1]
            m[1, 1] -= q[i] * m[0, 0]
            m[1, 0] = lin_x
            S = 1  # S = e_z in the linear part
        else:
            # stator_X_rotor = rot(Rz(q)^T)
            x, y = c[i] * x + s[i] * y, c[i] * y - s[i] * x
            m[:, 0], m[:, 1] = x, y
            S = 0  # S = e_z in the angular part
        m[S, 2, 0] += qd[i]
        # v_i x S qd_i: for both halves it moves (y, -x) of v into a, scaled by qd_i
        if S == 0:
            m[:, 0, 1] += m[:, 1, 0] * qd[i]
            m[:, 1, 1] -= m[:, 0, 0] * qd[i]
        else:
            m[1, 0, 1] += m[0, 1, 0] * qd[i]
            m[1, 1, 1] -= m[0, 0, 0] * qd[i]
        m[S, 2, 1] += qdd[i]
        va[i] = m

        # f_i = I_i a_i + v_i x* I_i v_i ;  v x* [h_n; h_f] = [w x h_n + u x h_f; w x h_f]
        Im = (plan.I[i] @ m.reshape(6, 2 * N)).reshape(2, 3, 2, N)
        w, u = m[0, :, 0], m[1, :, 0]
        h = Im[:, :, 0].transpose(1, 0, 2)  # (x|y|z, n|f, N)
        wxh = _cross(w[:, None], h)
        f[i, 0] = Im[0, :, 1] + wxh[:, 0] + _cross(u, h[:, 1])
        f[i, 1] = Im[1, :, 1] + wxh[:, 1]

    # Pass 2: tau_i = S_i^T f_i ;  f_p += Xup_i^T f_i
    tau = np.empty((n, N))
    for i in range(n - 1, -1, -1):
        S = 1 if plan.prismatic[i] else 0
        tau[i] = f[i, S, 2]
        p = plan.parent[i]
        if p < 0:
            continue
        g = f[i].copy()
        if plan.prismatic[i]:
            # xlt(q e_z)^T: angular part += (q e_z) x linear part
            g[0, 0] -= q[i] * f[i, 1, 1]
            g[0, 1] += q[i] * f[i, 1, 0]
        else:
            g[:, 0] = c[i] * f[i, :, 0] - s[i] * f[i, :, 1]
            g[:, 1] = s[i] * f[i, :, 0] + c[i] * f[i, :, 1]
        f[p] += (plan.XT_T[i] @ g.reshape(6, N)).reshape(2, 3, N)
    return tau
