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
    if reference.size == 0:
        return 0.0
    scale = np.abs(reference).max(axis=0)
    err = np.abs(ours - reference)
    bad = err > rtol * scale + atol
    if bad.any():
        k, j = np.argwhere(bad)[0]
        raise AssertionError(f"joint column {j}, sample {k}: ours {ours[k, j]!r} vs reference "
                             f"{reference[k, j]!r} (max relative error {np.max(err / (scale + atol)):.3g})")
    return float(np.max(err / (scale + atol)))
