"""Pinocchio as the reference oracle: its RNEA on the same URDF, in our joint order and conventions."""

import numpy as np
import pinocchio as pin


def pin_model(urdf_path=None, xml=None):
    return pin.buildModelFromXML(xml) if xml is not None else pin.buildModelFromUrdf(str(urdf_path))


def pin_configuration(pm, joint_names, q):
    """Pinocchio q vector from our angles: continuous joints are (cos, sin) in Pinocchio."""
    Q = pin.neutral(pm)
    for i, name in enumerate(joint_names):
        jm = pm.joints[pm.getJointId(name)]
        if jm.nq == 2:
            Q[jm.idx_q], Q[jm.idx_q + 1] = np.cos(q[i]), np.sin(q[i])
        else:
            Q[jm.idx_q] = q[i]
    return Q


def pin_rnea(pm, joint_names, q, qd, qdd, gravity=(0.0, 0.0, -9.81)):
    """tau (N, n) from Pinocchio for our (N, n) arrays, columns matched by joint name."""
    pm.gravity.linear = np.asarray(gravity, dtype=float)
    data = pm.createData()
    idx_v = [pm.joints[pm.getJointId(name)].idx_v for name in joint_names]
    assert all(pm.getJointId(name) < pm.njoints for name in joint_names), "joint missing in Pinocchio"
    assert pm.nv == len(joint_names), f"Pinocchio has nv={pm.nv}, we have {len(joint_names)} joints"
    out = np.empty_like(q)
    for k in range(q.shape[0]):
        V, A = np.zeros(pm.nv), np.zeros(pm.nv)
        V[idx_v], A[idx_v] = qd[k], qdd[k]
        out[k] = pin.rnea(pm, data, pin_configuration(pm, joint_names, q[k]), V, A)[idx_v]
    return out


def assert_matches(ours, reference, rtol=1e-9, atol=1e-12):
    """Per joint: |ours - ref| <= rtol * (largest |ref| of that joint over the samples) + atol."""
    ours, reference = np.atleast_2d(ours), np.atleast_2d(reference)
    assert ours.shape == reference.shape, f"shape {ours.shape} vs reference {reference.shape}"
    assert reference.size, "nothing to compare: the reference is empty"
    scale = np.abs(reference).max(axis=0)
    err = np.abs(ours - reference)
    bad = err > rtol * scale + atol
    if bad.any():
        k, j = np.argwhere(bad)[0]
        raise AssertionError(f"joint column {j}, sample {k}: ours {ours[k, j]!r} vs reference "
                             f"{reference[k, j]!r} (max relative error {np.max(err / (scale + atol)):.3g})")
    return float(np.max(err / (scale + atol)))


def pin_full(pm, joint_names, q, qd, qdd, *, gravity=(0.0, 0.0, -9.81), base=None, f_ext=None):
    """Pinocchio's rnea with everything: returns (tau (N, n), base wrench (N, 6) [n; f] or None,
    joint wrenches (N, n, 6) [n; f] in joint frames). base = (pose, twist [w; v], dtwist [dw; dv])
    for a model built with a free-flyer root; f_ext = {body: (N, 6) [n; f]} with body -1 the base."""
    pm.gravity.linear = np.asarray(gravity, dtype=float)
    data = pm.createData()
    ids = [pm.getJointId(name) for name in joint_names]
    assert all(j < pm.njoints for j in ids), "joint missing in Pinocchio"
    base_dofs = 6 if base is not None else 0
    assert pm.nv == len(joint_names) + base_dofs, f"Pinocchio has nv={pm.nv}, we have {len(joint_names)} joints" + (
        " and a free base" if base_dofs else "")
    idx_v = [pm.joints[j].idx_v for j in ids]
    N, n = q.shape
    tau, W = np.empty((N, n)), np.empty((N, n, 6))
    base_wrench = np.empty((N, 6)) if base is not None else None
    for k in range(N):
        Q = pin_configuration(pm, joint_names, q[k])
        V, A = np.zeros(pm.nv), np.zeros(pm.nv)
        V[idx_v], A[idx_v] = qd[k], qdd[k]
        if base is not None:
            pose, twist, dtwist = (x[k] for x in base)
            Q[:7] = pose
            V[:6] = np.r_[twist[3:], twist[:3]]
            A[:6] = np.r_[dtwist[3:], dtwist[:3]]
        forces = pin.StdVec_Force()
        for _ in range(pm.njoints):
            forces.append(pin.Force.Zero())
        for body, wrench in (f_ext or {}).items():
            jid = 1 if body == -1 else ids[body]
            forces[jid] = pin.Force(wrench[k, 3:], wrench[k, :3])
        out = pin.rnea(pm, data, Q, V, A, forces)
        tau[k] = out[idx_v]
        if base is not None:
            base_wrench[k] = np.r_[out[3:6], out[:3]]
        for i, j in enumerate(ids):
            W[k, i] = np.r_[data.f[j].angular, data.f[j].linear]
    return tau, base_wrench, W


def random_base(rng, N):
    """Random floating-base states: pose with a unit quaternion (x, y, z, w), twist, dtwist."""
    quat = rng.normal(size=(N, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    return np.column_stack([rng.normal(size=(N, 3)), quat]), rng.normal(size=(N, 6)), rng.normal(size=(N, 6))
