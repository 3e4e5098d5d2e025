"""The recursive Newton-Euler algorithm as the book writes it (Featherstone, RBDA Table 5.1): one
sample, 6x6 matrices from `spatial`, the book's symbols. It is slow and meant to be read: the
fast engine (engine.py) is tested against it, and both against Pinocchio."""

import numpy as np

from . import spatial
from .engine import GRAVITY


def rnea_reference(model, q, qd, qdd, gravity=GRAVITY, f_ext=None):
    """tau (n,) for one sample of a fixed-base tree: q, qd, qdd (n,); f_ext {body: (6,) [n; f]}."""
    n, f_ext = model.n, f_ext or {}
    Xup, S, v, a, f = [None] * n, [None] * n, [None] * n, [None] * n, [None] * n
    a_0 = np.r_[0.0, 0.0, 0.0, -np.asarray(gravity, dtype=float)]  # a_0 = -a_g
    for i, joint in enumerate(model.joints):
        XJ = spatial.xup(joint.stator_H_rotor(q[i]))  # rotor_X_stator(q_i)
        Xup[i] = XJ @ spatial.xup(joint.parent_H_stator)  # i_X_lambda(i), rotor_H_child = identity
        S[i] = np.r_[joint.axis, 0, 0, 0] if joint.is_angular else np.r_[0, 0, 0, joint.axis]
        vJ = S[i] * qd[i]
        lam = model.parent[i]
        v_lam, a_lam = (np.zeros(6), a_0) if lam < 0 else (v[lam], a[lam])
        v[i] = Xup[i] @ v_lam + vJ  # v_i = iX_lambda v_lambda + S_i qd_i
        a[i] = Xup[i] @ a_lam + S[i] * qdd[i] + spatial.crm(v[i]) @ vJ  # a_i = iX_l a_l + S_i qdd_i + v_i x S_i qd_i
        I = model.inertia[i]
        f[i] = I @ a[i] + spatial.crf(v[i]) @ I @ v[i] - f_ext.get(i, np.zeros(6))  # f_i = I a + v x* I v - f_ext
    tau = np.zeros(n)
    for i in range(n - 1, -1, -1):
        tau[i] = S[i] @ f[i]  # tau_i = S_i^T f_i
        if model.parent[i] >= 0:
            f[model.parent[i]] = f[model.parent[i]] + Xup[i].T @ f[i]  # f_lambda += iX_lambda^T f_i
    return tau
