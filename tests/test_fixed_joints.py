"""Fixed joints: folded into their parent's inertia, or kept (with the wrenches they carry), against
Pinocchio."""

import numpy as np
import pytest

from conftest import (FREE, GOOD, ROBOTS, WRENCH, columns as read_csv, corpus_params, joint, joint_columns, load,
                      need_corpus, planar_urdf, robot, run, write_csv)
from oracle import (assert_matches, fixed_as_revolute, pin_full, pin_link_wrenches, pin_loadable_xml, pin_model,
                    random_base, random_motion, swap_halves, widen)
from random_urdf import random_urdf
from rnea_cli import URDFError, URDFWarning, load_urdf
from rnea_cli.dynamics.engine import inverse_dynamics


def test_fixed_joint_folds_inertia_with_rotation_and_parallel_axis():
    """A 2 kg point-like link fixed 1 m along the rotated x axis of b: b gains 2 kg at (0, 1, 0)."""
    child = ('<link name="c"><inertial><mass value="2"/>'
             '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.3"/></inertial></link>')
    fixed = joint("f", "b", "c", kind="fixed", extra='<origin xyz="0 0 0" rpy="0 0 1.5707963267948966"/>')
    # c's inertial sits 1 m along c's x, which is b's y
    child = child.replace("<mass", '<origin xyz="1 0 0"/><mass')
    model = load_urdf(robot(*GOOD, child, fixed))
    from rnea_cli.dynamics import spatial
    m, c, Ic = spatial.mass_properties(model.inertia[0])
    assert m == 3.0
    np.testing.assert_allclose(c, [0, 2 / 3, 0], atol=1e-15)
    # about the joint origin: own unit tensor + c's rotated tensor + 2 kg at 1 m along y
    about_origin = model.inertia[0][:3, :3]
    np.testing.assert_allclose(about_origin, np.eye(3) + np.diag([0.2, 0.1, 0.3]) + 2 * np.diag([1, 0, 1]),
                               atol=1e-12)
    assert [(l.name, l.body) for l in model.links] == [("a", -1), ("b", 0), ("c", 0)]


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


@pytest.mark.parametrize("path", corpus_params(["ur5", "panda"]))
def test_wrenches_across_fixed_joints(path, tmp_path):
    """--fixed: the fixed joints' wrenches after the movable ones', against Pinocchio with each
    fixed joint made a revolute one held at 0; panda's mimic finger (on by default) and a world-frame
    wrench on the last link included."""
    from rnea_cli.model.tree import Coordinates

    path = need_corpus(path)
    model, kept = load(path), load(path, fixed_joints=True)
    coords = Coordinates(model)
    N = 6
    rng = np.random.default_rng(9)
    q, qd, qdd = random_motion(rng, N, coords.n)
    link = model.links[-1]
    wrench = rng.normal(0, 5, (N, 6))  # [fx fy fz tx ty tz], world frame, at the link origin
    cols = {"time": np.arange(N) * 0.1, **joint_columns(coords.joint_names, q, qd, qdd),
            **{f"fext_{link.name}_{c}": wrench[:, k] for k, c in enumerate(WRENCH)}}
    result = run("wrenches", path, write_csv(tmp_path / "w.csv", cols), "--fixed")
    assert result.exit_code == 0, result.stderr
    fixed = [j.name for j in kept.joints if j.type == "fixed"]
    names = model.joint_names + fixed
    out = read_csv(result.stdout)
    assert list(out) == ["time"] + [f"{j}_{c}" for j in names for c in WRENCH]
    assert all(f"\n{j} " in "\n" + result.stderr for j in fixed)  # in the report too
    ours = np.column_stack([out[f"{j}_{c}"] for j in names for c in WRENCH]).reshape(N, len(names), 6)

    pm = pin_model(xml=fixed_as_revolute(pin_loadable_xml(path)))
    wide = widen(model.joint_names, kept.joint_names, *coords.expand(q, qd, qdd))
    f_ext = pin_link_wrenches(pm, kept.joint_names, wide[0], {link.name: (swap_halves(wrench), None)})
    W = pin_full(pm, kept.joint_names, *wide, f_ext=f_ext)[2]
    expected = swap_halves(W[:, [kept.index(j) for j in names]])  # force first, as the columns
    assert_matches(ours.reshape(N, -1), expected.reshape(N, -1))


def test_fixed_joints_change_no_torque_and_their_overflow_is_an_error(tmp_path):
    """Computed with its fixed joints kept (--fixed), a robot's torques are the folded model's; a
    wrench so large that only a fixed joint's wrench overflows is an input error, not a NaN."""
    from rnea_cli import load_urdf
    from rnea_cli.model.tree import Coordinates
    from rnea_cli.run.pipeline import FixedJoints, Pipeline
    from rnea_cli.trajectory.open import open_trajectory

    # arm7 on a mount: a fixed joint before the movable ones, and one after (arm7_joint_ee)
    root = model_root(ROBOTS / "arm7.urdf")
    arm = open(ROBOTS / "arm7.urdf").read().replace("</robot>", f"""<link name="mount"/>
        <joint name="mount_joint" type="fixed"><parent link="mount"/><child link="{root}"/>
        <origin xyz="0 0 0.1" rpy="0 0.2 0"/></joint></robot>""")
    model = load_urdf(arm)
    kept = FixedJoints.of(model, load_urdf(arm, fixed_joints=True))
    assert kept.model.joints[0].name == "mount_joint" and kept.model.joints[-1].name == "arm7_joint_ee"
    coords = Coordinates(model)

    def computed(**options):
        traj = open_trajectory(ROBOTS / "arm7_traj.csv", coords)
        return list(Pipeline(model, coords, **options).blocks(traj))

    plain = computed()
    both = computed(fixed=kept, wrenches=True)
    np.testing.assert_allclose(np.concatenate([b.tau for b in both]), np.concatenate([b.tau for b in plain]),
                               rtol=1e-13, atol=1e-12)
    split, split_kept = computed(split=True), computed(fixed=kept, split=True)
    for part in ("gravity", "inertia", "coriolis"):  # the split does not change with the fixed joints either
        reference = np.concatenate([b.split[part] for b in split])
        assert np.abs(reference).max() > 1e-3, part
        np.testing.assert_allclose(np.concatenate([b.split[part] for b in split_kept]), reference,
                                   rtol=1e-13, atol=1e-12 * np.abs(reference).max())
    # a link fixed to the root carries a wrench no movable joint feels
    urdf = tmp_path / "r.urdf"
    urdf.write_text(open(ROBOTS / "planar2.urdf").read().replace(
        "</robot>", '<link name="plate"/><joint name="plate_joint" type="fixed"><parent link="'
        + model_root(ROBOTS / "planar2.urdf") + '"/><child link="plate"/></joint></robot>'))
    cols = {"time": np.arange(4) * 0.1, **joint_columns(["shoulder", "elbow"], *np.zeros((3, 4, 2))),
            **{f"fext_plate_{c}": np.full(4, 1e308 if c == "fy" else 0.0) for c in WRENCH},
            "fext_plate_px": np.full(4, 1e10), "fext_plate_py": np.zeros(4), "fext_plate_pz": np.zeros(4)}
    traj = write_csv(tmp_path / "big.csv", cols)
    assert run("wrenches", urdf, traj, "-q").exit_code == 0  # the root holds it
    result = run("wrenches", urdf, traj, "--fixed", "-q")
    assert result.exit_code == 2 and "line 2: wrenches overflow (not finite)" in result.stderr
    assert "RuntimeWarning" not in result.stderr


def test_a_bracket_with_only_a_fixed_joint(tmp_path):
    """Closed form: a 2 kg link bolted to a wall with its centre of mass 0.2 m out along x. The bolt
    carries m g up and the moment -m g 0.2 about y; a robot with only fixed joints needs --fixed."""
    urdf = tmp_path / "bracket.urdf"
    urdf.write_text("""<robot name="bracket"><link name="wall"/>
      <link name="arm"><inertial><origin xyz="0.2 0 0"/><mass value="2"/>
        <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.03"/></inertial></link>
      <joint name="bolt" type="fixed"><parent link="wall"/><child link="arm"/><origin xyz="0 0 1" rpy="0 0 0.5"/></joint>
      </robot>""")
    traj = write_csv(tmp_path / "t.csv", {"time": np.arange(3) * 0.1})
    result = run("wrenches", urdf, traj)
    assert result.exit_code == 2 and "the robot has no movable joint" in result.stderr
    result = run("wrenches", urdf, traj, "--fixed")
    assert result.exit_code == 0, result.stderr
    out = read_csv(result.stdout)
    for c, value in zip(WRENCH, (0.0, 0.0, 2 * 9.81, 0.0, -2 * 9.81 * 0.2, 0.0)):
        np.testing.assert_allclose(out[f"bolt_{c}"], value, rtol=1e-15, atol=1e-15)
    assert "bolt (fixed)" in result.stderr


def model_root(path):
    return load(path).root_link
