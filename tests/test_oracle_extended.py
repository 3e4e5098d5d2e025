"""Floating base, external wrenches and joint wrenches against Pinocchio."""

import functools
import importlib

import numpy as np
import pinocchio as pin
import pytest

from conftest import corpus_params, load, need_corpus, planar_urdf
from oracle import (assert_matches, fixed_as_revolute, pin_configuration, pin_full, pin_link_wrenches,
                    pin_loadable_xml, pin_model, random_base, random_motion, widen)
from random_urdf import random_urdf
from rnea_cli import URDFWarning, URDFError, load_urdf
from rnea_cli.dynamics.kinematics import body_placements, link_wrenches_to_bodies
from rnea_cli.dynamics.engine import inverse_dynamics

FREE = ["solo12", "anymal_c", "cassie", "simple_humanoid", "romeo", "romeo_laas_small"]



def compare(model, pm, seed, *, floating, N=6):
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


@pytest.mark.parametrize("path", corpus_params(FREE))
def test_floating_base_matches_pinocchio(path):
    path = need_corpus(path)
    pm = pin_model(xml=pin_loadable_xml(path), free=True)
    compare(load(path), pm, 11, floating=True)


@pytest.mark.parametrize("path", corpus_params())
def test_external_and_joint_wrenches_match_pinocchio(path):
    path = need_corpus(path)
    pm = pin.buildModelFromXML(pin_loadable_xml(path))
    compare(load(path), pm, 12, floating=False)


@pytest.mark.parametrize("seed", range(15))
def test_random_trees_floating_with_wrenches(seed):
    xml, _ = random_urdf(200 + seed)
    model = load_urdf(xml)
    compare(model, pin_model(xml=xml, free=True), seed, floating=True)
    compare(model, pin.buildModelFromXML(xml), seed, floating=False)


# -- world placements and world-frame wrenches ----------------------------------------------------


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


@pytest.mark.parametrize("path", corpus_params())
def test_body_placements_match_pinocchio(path):
    path = need_corpus(path)
    fixed_and_free(check_placements, pin_loadable_xml(path), 21, path.stem in FREE, load(path))


@pytest.mark.parametrize("seed", range(10))
def test_body_placements_of_random_trees(seed):
    fixed_and_free(check_placements, random_urdf(300 + seed)[0], seed)


def world_wrench_torques(model, pm, seed, floating, N=5):
    """Torques with world-frame wrenches on random links (folded ones too), some at given points: ours
    through link_wrenches_to_bodies, Pinocchio's with each wrench moved to its joint's frame by oMi."""
    rng = np.random.default_rng(seed)
    q, qd, qdd = random_motion(rng, N, model.n)
    base = random_base(rng, N) if floating else None
    pose = base[0] if floating else None
    links = [link for link in model.links if floating or link.body >= 0]
    assert all(pm.existFrame(link.name, pin.BODY) for link in links)  # Pinocchio knows every one
    chosen = [link for link in links if rng.random() < 0.4] or links[-1:]
    applied = {link.name: (rng.normal(0, 4, (N, 6)), rng.normal(0, 0.5, (N, 3)) if rng.random() < 0.5 else None)
               for link in chosen}
    f_ext = link_wrenches_to_bodies(model, applied, "world", q, pose)
    ours = inverse_dynamics(model, q, qd, qdd, base=base, f_ext=f_ext)
    merged = pin_link_wrenches(pm, model.joint_names, q, applied, "world", pose)
    tau, base_wrench, _ = pin_full(pm, model.joint_names, q, qd, qdd, base=base, f_ext=merged)
    assert_matches(ours.tau, tau)
    if floating:
        assert_matches(ours.base_wrench, base_wrench)


@pytest.mark.parametrize("path", corpus_params(["solo12", "anymal_c", "simple_humanoid", "panda", "ur5"]))
def test_world_frame_wrenches_match_pinocchio(path):
    path = need_corpus(path)
    fixed_and_free(world_wrench_torques, pin_loadable_xml(path), 31, path.stem in FREE, load(path))


@pytest.mark.parametrize("path", corpus_params(["solo12", "panda"]))
def test_placements_and_world_wrenches_over_several_chunks(path, monkeypatch):
    """Chunks of 4 samples for 11: every later chunk gets its own rows of q, pose and wrenches."""
    monkeypatch.setattr(importlib.import_module("rnea_cli.dynamics.kinematics"), "CHUNK", 4)
    path = need_corpus(path)
    for check in (check_placements, world_wrench_torques):
        fixed_and_free(functools.partial(check, N=11), pin_loadable_xml(path), 41, path.stem in FREE, load(path))


def test_no_wrenches_no_placements(monkeypatch):
    """Without wrench columns nothing is computed for them, in either frame."""
    kinematics = importlib.import_module("rnea_cli.dynamics.kinematics")
    monkeypatch.setattr(kinematics, "_placements", lambda *a: pytest.fail("placements computed"))
    model = load_urdf(random_urdf(7)[0])
    q = np.zeros((5, model.n))
    assert kinematics.link_wrenches_to_bodies(model, {}, "world", q) == {}
    assert kinematics.link_wrenches_to_bodies(model, {}, "link", q) == {}


@pytest.mark.parametrize("seed", range(8))
def test_world_frame_wrenches_on_random_trees(seed):
    fixed_and_free(world_wrench_torques, random_urdf(400 + seed)[0], seed)


# -- wrenches across fixed joints ------------------------------------------------------------------


def check_fixed_joint_wrenches(xml, seed, floating, N=5):
    folded, kept = load(xml), load(xml, fixed_joints=True)
    fixed = [j.name for j in kept.joints if j.type == "fixed"]
    assert kept.n == folded.n + len(fixed) and fixed
    pm = pin_model(xml=fixed_as_revolute(xml), free=floating)
    rng = np.random.default_rng(seed)
    motion = random_motion(rng, N, folded.n)
    index = [kept.index(name) for name in folded.joint_names]
    wide = widen(folded.joint_names, kept.joint_names, *motion)
    base = random_base(rng, N) if floating else None
    f_ext = {b: rng.normal(0, 3, (N, 6)) for b in range(-1 if floating else 0, kept.n) if rng.random() < 0.3}
    ours = inverse_dynamics(kept, *wide, base=base, f_ext=f_ext, wrenches=True)
    tau, _, W = pin_full(pm, kept.joint_names, *wide, base=base, f_ext=f_ext)
    assert_matches(ours.joint_wrenches.reshape(N, -1), W.reshape(N, -1))
    assert_matches(ours.tau[:, index], tau[:, index])
    # without external wrenches (the bodies differ), the folded model's torques and wrenches
    plain, folded_out = (inverse_dynamics(m, *x, base=base, wrenches=True) for m, x in ((kept, wide), (folded, motion)))
    assert_matches(plain.tau[:, index], folded_out.tau, rtol=1e-12)
    assert_matches(plain.joint_wrenches[:, index].reshape(N, -1), folded_out.joint_wrenches.reshape(N, -1), rtol=1e-12)


def with_a_fixed_joint(xml):
    """The URDF, with a massive link fixed to its last link if it has no fixed joint."""
    if "fixed" in {j.type for j in load(xml, fixed_joints=True).joints}:
        return xml
    last = load(xml).links[-1].name
    return xml.replace("</robot>", f"""<link name="extra"><inertial><origin xyz="0.05 0 0.02"/><mass value="0.7"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.015"/></inertial></link>
      <joint name="extra_fixed" type="fixed"><parent link="{last}"/><child link="extra"/>
      <origin xyz="0.1 0 0" rpy="0.3 0 0.2"/></joint></robot>""")


def test_fixed_joints_kept_stay_fixed():
    """In a model with its fixed joints kept, they cannot move; a mimic cannot follow one, nor a
    planar joint's coordinate take a joint's name (the loader refuses both in either mode)."""
    xml = with_a_fixed_joint(random_urdf(510)[0])
    kept = load_urdf(xml, fixed_joints=True)
    i = next(k for k, j in enumerate(kept.joints) if j.type == "fixed")
    q = np.zeros((3, kept.n))
    inverse_dynamics(kept, q, q, q)
    for k in range(3):
        moved = [q.copy() for _ in range(3)]
        moved[k][1, i] = 1e-3
        with pytest.raises(ValueError, match=f"a fixed joint .*{kept.joints[i].name}.* has a q, qd or qdd other than 0"):
            inverse_dynamics(kept, *moved)
    mimic = """<robot name="m"><link name="a"/><link name="b"/><link name="c"/>
      <joint name="fx" type="fixed"><parent link="a"/><child link="b"/></joint>
      <joint name="mj" type="revolute"><parent link="b"/><child link="c"/><mimic joint="fx"/>
        <limit effort="1" velocity="1" lower="-1" upper="1"/></joint></robot>"""
    for fixed_joints in (False, True):  # a fixed joint leads nothing: the follower moves on its own
        with pytest.warns(URDFWarning, match="mimics joint 'fx', which is not a movable joint: 'mj' is treated"):
            model = load_urdf(mimic, fixed_joints=fixed_joints)
        assert model.joints[model.index("mj")].mimic is None
    clash = planar_urdf().replace('<joint name="pl" ', '<link name="z"/><joint name="pl_x" type="fixed"><parent '
                                  'link="w"/><child link="z"/></joint><joint name="pl" ')
    for fixed_joints in (False, True):
        with pytest.raises(URDFError, match=r"<joint name=\"pl\">: its coordinate 'pl_x' has the name of joint 'pl_x'"):
            load_urdf(clash, fixed_joints=fixed_joints)


def test_base_arrays_of_the_wrong_shape_are_refused():
    model = load_urdf(random_urdf(511)[0])
    q = np.zeros((7, model.n))
    pose, twist, dtwist = random_base(np.random.default_rng(0), 7)
    with pytest.raises(ValueError, match=r"base pose has shape \(7, 6\); expected \(6, 7\)"):
        inverse_dynamics(model, q[:6], q[:6], q[:6], base=(pose[:6].T, twist[:6], dtwist[:6]))
    one = inverse_dynamics(model, q[0], q[0], q[0], base=(pose[0], twist[0], dtwist[0]))
    assert one.base_wrench.shape == (6,)


@pytest.mark.parametrize("path", corpus_params())
def test_fixed_joint_wrenches_match_pinocchio(path):
    path = need_corpus(path)
    xml = with_a_fixed_joint(pin_loadable_xml(path))  # double_pendulum has none
    check_fixed_joint_wrenches(xml, 51, floating=False)
    if path.stem in FREE:
        check_fixed_joint_wrenches(xml, 52, floating=True)


@pytest.mark.parametrize("seed", range(8))
def test_fixed_joint_wrenches_of_random_trees(seed):
    xml = with_a_fixed_joint(random_urdf(500 + seed)[0])
    check_fixed_joint_wrenches(xml, seed, floating=False)
    check_fixed_joint_wrenches(xml, seed + 100, floating=True)


# -- mimic joints ----------------------------------------------------------------------------------

MIMIC = ["panda", "pr2", "baxter", "romeo"]


@pytest.mark.parametrize("path", corpus_params(MIMIC))
def test_mimic_joints(path):
    """Followers move with their leaders and their torque is reflected to them. Against Pinocchio's
    mimic model where it loads (panda, pr2, baxter), and for every robot against Pinocchio's model
    without mimic, driven with the followers' motion (romeo: Pinocchio 4.1 refuses it with mimic)."""
    from rnea_cli.model.tree import Coordinates
    from rnea_cli.dynamics.engine import rnea

    path = need_corpus(path)
    model = load(path)
    coords = Coordinates(model)
    assert len(coords.followers) == {"panda": 1, "pr2": 10, "baxter": 2, "romeo": 22}[path.stem]
    rng = np.random.default_rng(4)
    q, qd, qdd = random_motion(rng, 8, coords.n)
    full = coords.expand(q, qd, qdd)
    ours = coords.reflect(rnea(model, *full))
    # Pinocchio without mimic, on the expanded motion, reflected by hand: tau_l = tau_l + sum m tau_f
    pm = pin.buildModelFromXML(pin_loadable_xml(path))
    tau_full = pin_full(pm, model.joint_names, *full)[0]
    index = {j.name: i for i, j in enumerate(model.joints)}
    expected = tau_full[:, [index[n] for n in coords.joint_names]].copy()
    for j in model.joints:
        if j.mimic is not None:
            expected[:, coords.index(j.mimic.joint)] += j.mimic.multiplier * tau_full[:, index[j.name]]
    assert_matches(ours, expected)
    # virtual work: tau . qd is the same in both coordinate sets
    np.testing.assert_allclose(np.einsum("ij,ij->i", ours, qd), np.einsum("ij,ij->i", rnea(model, *full), full[1]),
                               rtol=1e-10, atol=1e-10)
    if path.stem != "romeo":
        pm = pin.buildModelFromUrdf(str(path), mimic=True)
        assert pm.nv == coords.n
        assert_matches(ours, pin_full(pm, coords.joint_names, q, qd, qdd)[0])


def test_mimic_offset_and_chain():
    from rnea_cli.model.tree import Coordinates

    links = "".join(f'<link name="l{k}"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" '
                    f'iyz="0" izz="1"/></inertial></link>' for k in range(4))
    joints = ('<joint name="a" type="revolute"><parent link="l0"/><child link="l1"/><axis xyz="0 0 1"/></joint>'
              '<joint name="b" type="revolute"><parent link="l1"/><child link="l2"/><axis xyz="0 1 0"/>'
              '<mimic joint="a" multiplier="2" offset="0.5"/></joint>'
              '<joint name="c" type="prismatic"><parent link="l2"/><child link="l3"/><axis xyz="1 0 0"/>'
              '<mimic joint="b" multiplier="-3" offset="1"/></joint>')
    model = load_urdf(f"<robot name='m'>{links}{joints}</robot>")
    coords = Coordinates(model)
    assert coords.joint_names == ["a"] and coords.followers == ["b", "c"]
    q, qd, qdd = coords.expand(np.array([[0.2]]), np.array([[1.0]]), np.array([[3.0]]))
    np.testing.assert_allclose(q, [[0.2, 0.9, -1.7]])  # c = -3 (2 a + 0.5) + 1
    np.testing.assert_allclose(qd, [[1.0, 2.0, -6.0]])
    np.testing.assert_allclose(qdd, [[3.0, 6.0, -18.0]])
    np.testing.assert_allclose(coords.reflect(np.array([[1.0, 10.0, 100.0]])), [[1 + 20 - 600]])
    assert Coordinates(model, mimic=False).joint_names == ["a", "b", "c"]


# -- planar and floating joints in the URDF --------------------------------------------------------

def test_planar_joint_matches_pinocchio():
    """Ours: (x, y, theta) with rates their time derivatives, forces along the stator axes.
    Pinocchio: the planar velocity [vx, vy, w] is in the moving frame."""
    model = load_urdf(planar_urdf())
    assert model.joint_names == ["pl_x", "pl_y", "pl_theta", "arm"]
    pm = pin.buildModelFromXML(planar_urdf())
    rng = np.random.default_rng(3)
    N = 6
    q, qd, qdd = random_motion(rng, N, 4)
    ours = inverse_dynamics(model, q, qd, qdd).tau
    ip, ia = pm.joints[pm.getJointId("pl")], pm.joints[pm.getJointId("arm")]
    data = pm.createData()
    for k in range(N):
        x, y, th, arm = q[k]
        c, s = np.cos(th), np.sin(th)
        Rt = np.array([[c, s], [-s, c]])  # R(theta)^T
        dRt = np.array([[-s, c], [-c, -s]]) * qd[k, 2]
        Q, V, A = np.zeros(pm.nq), np.zeros(pm.nv), np.zeros(pm.nv)
        Q[ip.idx_q:ip.idx_q + 4] = [x, y, c, s]
        Q[ia.idx_q] = arm
        V[ip.idx_v:ip.idx_v + 3] = [*(Rt @ qd[k, :2]), qd[k, 2]]
        A[ip.idx_v:ip.idx_v + 3] = [*(Rt @ qdd[k, :2] + dRt @ qd[k, :2]), qdd[k, 2]]
        V[ia.idx_v], A[ia.idx_v] = qd[k, 3], qdd[k, 3]
        tau = pin.rnea(pm, data, Q, V, A)
        f_local = tau[ip.idx_v:ip.idx_v + 2]
        expected = [*(Rt.T @ f_local), tau[ip.idx_v + 2], tau[ia.idx_v]]
        assert_matches(ours[k], np.array(expected))


@pytest.mark.parametrize("n", [(0.0, 0.6, 0.8), (0.95, 0.3122498999199199, 0.0), (-0.3, 0.2, -0.9327379053088815)])
def test_oblique_planar_joint_is_the_plane_normal_to_its_axis(n):
    """A planar joint about n is the chain P(x') P(y') R(n) with x' = e_x projected onto the plane
    and y' = n x x' (docs/beyond-arms.md's rule, written out here), checked through Pinocchio."""
    n = np.array(n) / np.linalg.norm(n)
    x = np.array([1.0, 0.0, 0.0]) - n[0] * n
    x /= np.linalg.norm(x)
    y = np.cross(n, x)
    oblique = load_urdf(planar_urdf(" ".join(repr(float(v)) for v in n)))
    for part, axis in zip(oblique.joints[:3], (x, y, n)):
        np.testing.assert_allclose(part.axis, axis, atol=1e-15)
    rng = np.random.default_rng(8)
    q, qd, qdd = random_motion(rng, 5, 4)
    chain = planar_urdf().replace('<joint name="pl" type="planar">', "").split("<joint name=\"arm\"")
    limit = '<limit effort="1" velocity="1" lower="-9" upper="9"/>'
    xml = f"""<robot name="ppr"><link name="w"/><link name="m1"/><link name="m2"/>
      {chain[0].split('<link name="w"/>')[1].split("<parent link")[0]}
      <joint name="x" type="prismatic"><parent link="w"/><child link="m1"/><origin xyz="0 0 1" rpy="0.5 0 0"/>
        <axis xyz="{' '.join(repr(float(v)) for v in x)}"/>{limit}</joint>
      <joint name="y" type="prismatic"><parent link="m1"/><child link="m2"/>
        <axis xyz="{' '.join(repr(float(v)) for v in y)}"/>{limit}</joint>
      <joint name="t" type="continuous"><parent link="m2"/><child link="b"/><axis xyz="{' '.join(repr(float(v)) for v in n)}"/></joint>
      <joint name="arm"{chain[1]}"""
    reference = pin.buildModelFromXML(xml)
    assert_matches(inverse_dynamics(oblique, q, qd, qdd).tau, pin_full(reference, ["x", "y", "t", "arm"], q, qd, qdd)[0])


def test_floating_joint_in_the_urdf_matches_pinocchio():
    xml = planar_urdf().replace('type="planar"', 'type="floating"').replace("<axis xyz=\"0 0 1\"/></joint>", "</joint>")
    model = load_urdf(xml)
    assert model.floating and model.root_link == "b" and model.joint_names == ["arm"]
    pm = pin.buildModelFromXML(xml)  # Pinocchio reads the floating joint as a free flyer
    rng = np.random.default_rng(9)
    q, qd, qdd = random_motion(rng, 6, 1)
    base = random_base(rng, 6)
    ours = inverse_dynamics(model, q, qd, qdd, base=base)
    tau, base_wrench, _ = pin_full(pm, ["arm"], q, qd, qdd, base=base)
    assert_matches(ours.tau, tau)
    assert_matches(ours.base_wrench, base_wrench)
    check_placements(model, pm, 23, floating=True)  # the joint's <origin> is world_H_root


def test_chunks_do_not_change_floating_base_wrenches_or_fext(monkeypatch):
    engine = importlib.import_module("rnea_cli.dynamics.engine")
    xml, _ = random_urdf(301)
    model = load_urdf(xml)
    rng = np.random.default_rng(2)
    N = 23
    q, qd, qdd = random_motion(rng, N, model.n)
    base = random_base(rng, N)
    f_ext = {-1: rng.normal(size=(N, 6)), model.n - 1: rng.normal(size=(N, 6))}
    whole = inverse_dynamics(model, q, qd, qdd, base=base, f_ext=f_ext, wrenches=True)
    monkeypatch.setattr(engine, "CHUNK", 4)
    chunked = inverse_dynamics(model, q, qd, qdd, base=base, f_ext=f_ext, wrenches=True)
    for a, b in zip(whole, chunked):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


def test_no_samples_with_a_floating_base():
    model = load_urdf(random_urdf(9)[0])
    none = np.zeros((0, model.n))
    out = inverse_dynamics(model, none, none, none, base=(np.zeros((0, 7)), np.zeros((0, 6)), np.zeros((0, 6))),
                           wrenches=True)
    assert out.tau.shape == (0, model.n) and out.base_wrench.shape == (0, 6)
    assert out.joint_wrenches.shape == (0, model.n, 6)
    with pytest.raises(ValueError, match=r"base twist has shape \(2, 6\); expected \(0, 6\)"):
        inverse_dynamics(model, none, none, none, base=(np.zeros((0, 7)), np.zeros((2, 6)), np.zeros((0, 6))))


def test_a_free_body_without_joints():
    """One floating rigid body: the base wrench is I a + v x* I v - gravity's pull, as in Pinocchio."""
    xml = ('<robot name="brick"><link name="b"><inertial><origin xyz="0.1 0 0.05" rpy="0.2 0 0"/>'
           '<mass value="3"/><inertia ixx="0.1" ixy="0.01" ixz="0" iyy="0.2" iyz="0" izz="0.25"/></inertial></link>'
           '</robot>')
    model = load_urdf(xml)
    assert model.n == 0
    rng = np.random.default_rng(5)
    base = random_base(rng, 4)
    empty = np.zeros((4, 0))
    ours = inverse_dynamics(model, empty, empty, empty, base=base)
    _, expected, _ = pin_full(pin_model(xml=xml, free=True), [], empty, empty, empty,
                              base=base)
    assert_matches(ours.base_wrench, expected)
