"""Pinocchio as the reference oracle: its RNEA on the same URDF, in our joint order and conventions."""

import numpy as np
import pinocchio as pin
from lxml import etree

from rnea_cli import load_urdf
from rnea_cli.dynamics.engine import inverse_dynamics
from rnea_cli.dynamics.kinematics import body_placements

from motion import random_base, random_motion  # noqa: F401  (the tests take them from here too)


def pin_model(urdf_path=None, xml=None, free=False):
    """Pinocchio's model of a URDF file or text; free: on a free-flyer root joint."""
    root = [pin.JointModelFreeFlyer()] if free else []
    return pin.buildModelFromXML(xml, *root) if xml is not None else pin.buildModelFromUrdf(str(urdf_path), *root)


def pin_loadable_xml(path):
    """The file's XML (or a URDF text's), with a <limit> added to revolute joints that lack one
    (urdfdom rejects those; cassie has 16). Nothing else changes, so the dynamics compared are the file's."""
    text = str(path)
    root = etree.fromstring(text.encode()) if text.lstrip().startswith("<") else etree.parse(text).getroot()
    for joint in root.iterfind("joint"):
        if joint.get("type") == "revolute" and joint.find("limit") is None:
            etree.SubElement(joint, "limit", effort="1", velocity="1", lower="-1", upper="1")
    return etree.tostring(root, encoding="unicode")


def fixed_as_revolute(xml):
    """The URDF with every fixed joint a revolute one about z: at q = 0, Pinocchio's wrench across
    it (data.f) is the wrench the fixed joint carries."""
    root = etree.fromstring(xml.encode() if isinstance(xml, str) else xml)
    for joint in root.iterfind("joint"):
        if joint.get("type") == "fixed":
            joint.set("type", "revolute")
            for old in joint.findall("axis") + joint.findall("limit"):
                joint.remove(old)
            etree.SubElement(joint, "axis", xyz="0 0 1")
            etree.SubElement(joint, "limit", effort="1", velocity="1", lower="-1", upper="1")
    return etree.tostring(root, encoding="unicode")


def swap_halves(x):
    """[a; b] -> [b; a] along the last axis: [n; f] (ours) <-> [f; n] (Pinocchio, and the CSV columns)."""
    return np.concatenate([x[..., 3:], x[..., :3]], axis=-1)


def widen(names, wide_names, *arrays):
    """(N, len(names)) arrays as (N, len(wide_names)), zero in the other columns."""
    index = [wide_names.index(name) for name in names]
    out = []
    for x in arrays:
        w = np.zeros((len(x), len(wide_names)))
        w[:, index] = x
        out.append(w)
    return out


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


def pin_terms(pm, joints, q, qd, qdd, base=None):
    """Pinocchio's g(q), M(q) qdd and C(q, qd) qd per sample, in our joint order. base: (pose,
    twist, dtwist) of a free-flyer root, twists [w; v] as ours."""
    data = pm.createData()
    idx = [pm.joints[pm.getJointId(j)].idx_v for j in joints]
    g, inertia, coriolis = (np.empty_like(q) for _ in range(3))
    for k in range(len(q)):
        Q = pin_configuration(pm, joints, q[k])
        V, A = np.zeros(pm.nv), np.zeros(pm.nv)
        if base is not None:
            Q[:7] = base[0][k]
            V[:6], A[:6] = swap_halves(base[1][k]), swap_halves(base[2][k])  # Pinocchio's twists are [v; w]
        V[idx], A[idx] = qd[k], qdd[k]
        grav = pin.computeGeneralizedGravity(pm, data, Q)
        M = pin.crba(pm, data, Q)
        M = np.triu(M) + np.triu(M, 1).T
        g[k] = grav[idx]
        inertia[k] = (M @ A)[idx]
        coriolis[k] = (pin.nonLinearEffects(pm, data, Q, V) - grav)[idx]
    return g, inertia, coriolis


def pin_rnea(pm, joint_names, q, qd, qdd, gravity=(0.0, 0.0, -9.81)):
    """tau (N, n) from Pinocchio for our (N, n) arrays, columns matched by joint name."""
    return pin_full(pm, joint_names, q, qd, qdd, gravity=gravity)[0]


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
            V[:6] = swap_halves(twist)
            A[:6] = swap_halves(dtwist)
        forces = pin.StdVec_Force()
        for _ in range(pm.njoints):
            forces.append(pin.Force.Zero())
        for body, wrench in (f_ext or {}).items():
            assert body >= 0 or base is not None, "a wrench on a fixed root: the world holds it"
            jid = 1 if body == -1 else ids[body]
            forces[jid] = pin.Force(wrench[k, 3:], wrench[k, :3])
        out = pin.rnea(pm, data, Q, V, A, forces)
        tau[k] = out[idx_v]
        if base is not None:
            base_wrench[k] = swap_halves(out[:6])
        for i, j in enumerate(ids):
            W[k, i] = np.r_[data.f[j].angular, data.f[j].linear]
    return tau, base_wrench, W


def pin_link_wrenches(pm, joint_names, q, applied, frame="world", base_pose=None):
    """Pinocchio's side of rnea_cli.dynamics.kinematics.link_wrenches_to_bodies: {body: (N, 6) [n; f]} for
    pin_full, each wrench moved by Pinocchio's placements into its link's joint frame. applied:
    {link: ((N, 6) [n; f], (N, 3) point or None)}, in the world (at the link origin by default) or
    in the link's own frame (frame "link", about its origin by default). Wrenches on a fixed root
    are left out (the world holds them)."""
    ids = [pm.getJointId(name) for name in joint_names]
    body = {jid: b for b, jid in enumerate(ids)} | {1 if base_pose is not None else 0: -1}
    data, N, out = pm.createData(), len(q), {}
    for k in range(N):
        Q = pin_configuration(pm, joint_names, q[k])
        if base_pose is not None:
            Q[:7] = base_pose[k]
        pin.forwardKinematics(pm, data, Q)
        pin.updateFramePlacements(pm, data)
        for link, (wrench, point) in applied.items():
            fid = pm.getFrameId(link, pin.BODY)
            joint = pm.frames[fid].parentJoint
            n, f = wrench[k, :3], wrench[k, 3:]
            if frame == "world":  # about the world origin, then into the joint frame
                at = data.oMf[fid].translation if point is None else point[k]
                local = data.oMi[joint].actInv(pin.Force(f, n + np.cross(at, f)))
            else:  # about the link origin, then into the joint frame
                at = np.zeros(3) if point is None else point[k]
                local = pm.frames[fid].placement.act(pin.Force(f, n + np.cross(at, f)))
            if body[joint] >= 0 or base_pose is not None:
                out.setdefault(body[joint], np.zeros((N, 6)))[k] += np.r_[local.angular, local.linear]
    return out


def compare(model, pm, seed, *, floating, N=6):
    """Torques, joint wrenches (and the base wrench) of a random motion under random gravity and
    external wrenches on some bodies (the base among them when floating), ours against Pinocchio's."""
    rng = np.random.default_rng(seed)
    q, qd, qdd = random_motion(rng, N, model.n)
    gravity = rng.normal(0, 5, 3)
    base = random_base(rng, N) if floating else None
    bodies = list(range(model.n)) + ([-1] if floating else [])
    f_ext = {b: rng.normal(0, 3, (N, 6)) for b in bodies if rng.random() < 0.5}
    f_ext = f_ext or {bodies[-1]: rng.normal(0, 3, (N, 6))}  # never none
    ours = inverse_dynamics(model, q, qd, qdd, gravity=gravity, base=base, f_ext=f_ext, wrenches=True)
    tau, base_wrench, W = pin_full(pm, model.joint_names, q, qd, qdd, gravity=gravity, base=base, f_ext=f_ext)
    assert_matches(ours.tau, tau)
    assert_matches(ours.joint_wrenches.reshape(N, -1), W.reshape(N, -1))
    if floating:
        assert_matches(ours.base_wrench, base_wrench)


def pin_world(pm, model, q, base_pose=None):
    """Pinocchio's world placements of our bodies' frames, (R (N, n + 1, 3, 3), p (N, n + 1, 3)), the root last."""
    ids = [pm.getJointId(name) for name in model.joint_names]
    N = len(q)
    R, p, data = np.empty((N, model.n + 1, 3, 3)), np.empty((N, model.n + 1, 3)), pm.createData()
    for k in range(N):
        Q = pin_configuration(pm, model.joint_names, q[k])
        if base_pose is not None:
            Q[:7] = base_pose[k]
        pin.forwardKinematics(pm, data, Q)
        for b, jid in enumerate(ids + [1 if base_pose is not None else 0]):
            R[k, b], p[k, b] = data.oMi[jid].rotation, data.oMi[jid].translation
    return R, p


def check_placements(model, pm, seed, floating, N=5):
    """body_placements of a random pose against Pinocchio's, for every body and for a few picked."""
    rng = np.random.default_rng(seed)
    q = random_motion(rng, N, model.n)[0]
    pose = random_base(rng, N)[0] if floating else None
    R, p = pin_world(pm, model, q, pose)
    every = body_placements(model, q, pose)
    assert sorted(every) == list(range(-1, model.n))
    for b, (Rb, pb) in every.items():
        assert Rb.shape == (N, 3, 3) and pb.shape == (N, 3)
        assert_matches(Rb.reshape(N, 9), R[:, b].reshape(N, 9), atol=1e-14)
        assert_matches(pb, p[:, b], atol=1e-14)
    some = [b for b in range(-1, model.n) if rng.random() < 0.3] or [model.n - 1]
    picked = body_placements(model, q, pose, some)
    assert sorted(picked) == sorted(some)
    for b in some:  # the same steps from the same parents: the same numbers
        np.testing.assert_array_equal(picked[b][0], every[b][0])
        np.testing.assert_array_equal(picked[b][1], every[b][1])


def fixed_and_free(check, xml, seed, free=True, model=None):
    """check(model, Pinocchio model, seed, floating) with a fixed base, and with a free one."""
    model = model or load_urdf(xml)
    check(model, pin.buildModelFromXML(xml), seed, floating=False)
    if free:
        check(model, pin_model(xml=xml, free=True), seed + 1, floating=True)
