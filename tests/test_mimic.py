"""Mimic joints: the engine, the split, limits, friction and actuator files of followers, against
Pinocchio's mimic model."""

import json

import numpy as np
import pinocchio as pin
import pytest

from conftest import (GOOD, ROBOTS, columns as read_csv, corpus_params, joint, joint_columns, load, need_corpus, ok,
                      robot, run, stack, write_csv)
from oracle import assert_matches, pin_full, pin_loadable_xml, pin_terms, random_motion
from rnea_cli import URDFWarning, load_urdf


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


@pytest.mark.parametrize("path", corpus_params(["panda", "baxter"]))
def test_mimic_on_by_default_and_off(path, tmp_path):
    from rnea_cli.model.tree import Coordinates

    path = need_corpus(path)
    model = load(path)
    coords = Coordinates(model)
    rng = np.random.default_rng(3)
    q, qd, qdd = random_motion(rng, 10, coords.n)
    traj = write_csv(tmp_path / "m.csv", joint_columns(coords.joint_names, q, qd, qdd))
    result = run("torques", path, traj)
    assert result.exit_code == 0 and "mimic joint" in result.stderr
    out = read_csv(result.stdout)
    assert list(out) == [f"tau_{j}" for j in coords.joint_names]
    pm = pin.buildModelFromUrdf(str(path), mimic=True)
    assert_matches(np.column_stack(list(out.values())), pin_full(pm, coords.joint_names, q, qd, qdd)[0])
    result = run("torques", path, traj, "--no-mimic")
    assert result.exit_code == 2 and "missing q for joint" in result.stderr and coords.followers[0] in result.stderr


def test_a_mimic_followers_friction_goes_to_its_leader():
    """finger_right = -finger_left: its URDF friction, at its own velocity, is reflected to the
    leader (times the multiplier), in torques and in what check compares with effort limits."""
    urdf, traj = ROBOTS / "gripper2.urdf", ROBOTS / "gripper2_traj.csv"
    joints = {j.name: j for j in load(urdf).joints}
    leader, follower = joints["finger_left"], joints["finger_right"]
    assert follower.mimic.multiplier == -1 and leader.friction > 0 and follower.damping > 0
    qd = read_csv(open(traj).read())["qd_finger_left"]

    def friction(joint, v):
        return joint.damping * v + joint.friction * np.sign(v)

    expected = friction(leader, qd) + follower.mimic.multiplier * friction(follower, follower.mimic.multiplier * qd)
    said = run("torques", urdf, traj, "--friction")
    assert "note: 1 mimic joint (finger_right) follows its leader; --no-mimic to give it a column of its own\n" \
        in said.stderr, said.stderr
    out = read_csv(said.stdout)
    np.testing.assert_allclose(out["tau_friction_finger_left"], expected, rtol=1e-14, atol=1e-15)
    total = out["tau_finger_left"] + expected
    result = run("check", urdf, traj, "--friction", "--format", "json", "-q")
    effort = next(c for c in json.loads(result.stdout)["checks"]
                  if c["joint"] == "finger_left" and c["quantity"] == "effort")
    assert abs(effort["value"]) == pytest.approx(np.abs(total).max(), rel=1e-12)


def test_actuator_files_naming_a_follower_or_nothing(tmp_path):
    urdf, traj = ROBOTS / "gripper2.urdf", ROBOTS / "gripper2_traj.csv"
    drives = tmp_path / "d.yaml"
    drives.write_text("finger_right: {gear_ratio: 10}\n")
    result = run("check", urdf, traj, "--actuators", drives)
    assert result.exit_code == 2 and "finger_right: no joint 'finger_right' among the trajectory's joints: it is " \
                                     "a mimic follower, moved by its leader's drive (--no-mimic" in result.stderr
    drives.write_text("# nothing yet\n")
    result = run("torques", urdf, traj, "--actuators", drives)
    assert result.exit_code == 0 and f"warning: {drives} names no joint: no drive terms" in result.stderr
    assert "tau_armature_finger_left" not in result.stdout.splitlines()[0]


@pytest.mark.parametrize("path", corpus_params(["panda", "pr2", "baxter"]))
def test_the_split_with_mimic_joints_is_pinocchios_on_its_mimic_model(path, tmp_path):
    """Followers move with their leaders and each part of the split is reflected to them: the
    gravity, mass-matrix and nonlinear terms of Pinocchio's mimic model, in the leaders' coordinates."""
    from rnea_cli.model.tree import Coordinates

    path = need_corpus(path)
    coords = Coordinates(load(path))
    assert coords.followers
    q, qd, qdd = random_motion(np.random.default_rng(5), 10, coords.n)
    names = coords.joint_names
    traj = write_csv(tmp_path / "t.csv", {"time": np.arange(10) * 0.01, **joint_columns(names, q, qd, qdd)})
    out = read_csv(ok("torques", path, traj, "--split", "-q").stdout)
    pm = pin.buildModelFromUrdf(str(path), mimic=True)
    assert pm.nv == coords.n
    g, inertia, coriolis = pin_terms(pm, names, q, qd, qdd)
    assert_matches(stack(out, "tau_gravity", names), g)
    assert_matches(stack(out, "tau_inertia", names), inertia)
    assert_matches(stack(out, "tau_coriolis", names), coriolis)
    assert_matches(stack(out, "tau", names), pin_full(pm, names, q, qd, qdd)[0])


@pytest.mark.parametrize("path", corpus_params(["pr2"]))
def test_mimic_followers_velocity_and_position_are_checked(path, tmp_path):
    """A follower moves with its leader: its velocity and position limits are checked too."""
    from rnea_cli.model.tree import Coordinates

    path = need_corpus(path)
    model = load(path)
    coords = Coordinates(model)
    follower = next(j for j in model.joints if j.mimic is not None and j.mimic.multiplier == -1)
    leader = coords.index(follower.mimic.joint)
    N = 5
    q = np.zeros((N, coords.n))
    hi = follower.limits.upper
    q[:, leader] = -(hi + 0.01)  # the follower, at -q_leader, goes 0.01 past its upper limit
    zero = np.zeros_like(q)
    cols = {"time": np.arange(N) * 0.1, **joint_columns(coords.joint_names, q, zero, zero)}
    traj = write_csv(tmp_path / "m.csv", cols)
    doc = json.loads(run("check", str(path), str(traj), "--format", "json").stdout)
    found = {(v["joint"], v["quantity"]) for v in doc["violations"]}
    assert (follower.name, "position") in found
    efforts = [c["joint"] for c in doc["checks"] if c["quantity"] == "effort"]
    assert follower.mimic.joint in efforts and follower.name not in efforts


def test_a_mimic_of_a_joint_that_is_not_there_loads_with_a_warning():
    """example-robot-data's alex_psyonic_hands.urdf has one; Pinocchio loads it, and so do we: the
    follower is an independent joint, with or without --no-mimic."""
    xml = robot(*GOOD[:2], joint("j", "a", "b", extra='<mimic joint="nope"/>'))
    with pytest.warns(URDFWarning, match="<string>:5: <mimic>: mimics joint 'nope', which is not a movable joint: "
                                         "'j' is treated as an independent joint"):
        model = load_urdf(xml)
    assert model.joint_names == ["j"] and model.joints[0].mimic is None
    assert any("treated as an independent joint" in w for w in model.warnings)
