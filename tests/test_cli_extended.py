"""The CLI's floating base, mimic joints, external wrenches, actuator terms and `rnea wrenches`,
end to end against Pinocchio."""

import importlib
import json

import numpy as np
import pinocchio as pin
import pytest

from conftest import (ROBOTS, columns as read_csv, corpus_params, joint_columns, load, need_corpus, planar_urdf,
                      run, write_csv)
from oracle import (assert_matches, fixed_as_revolute, pin_full, pin_link_wrenches, pin_loadable_xml, pin_model,
                    pin_terms, random_base, random_motion, swap_halves, widen)

WRENCH = ("fx", "fy", "fz", "tx", "ty", "tz")


def base_columns(pose, twist, dtwist):
    cols = {f"q_base_{c}": pose[:, k] for k, c in enumerate(("x", "y", "z", "qx", "qy", "qz", "qw"))}
    for prefix, x in (("qd", twist), ("qdd", dtwist)):  # twist rows are [w; v]
        for k, c in enumerate(("wx", "wy", "wz", "vx", "vy", "vz")):
            cols[f"{prefix}_base_{c}"] = x[:, k]
    return cols


@pytest.mark.parametrize("path", corpus_params(["solo12", "anymal_c"]))
def test_floating_base_torques_and_base_wrench(path, tmp_path):
    path = need_corpus(path)
    model = load(path)
    rng = np.random.default_rng(1)
    N = 12
    q, qd, qdd = random_motion(rng, N, model.n)
    base = random_base(rng, N)
    traj = write_csv(tmp_path / "t.csv", {"time": np.arange(N) * 0.01, **base_columns(*base),
                                          **joint_columns(model.joint_names, q, qd, qdd)})
    result = run("torques", path, traj, "--floating-base", "-q")
    assert result.exit_code == 0, result.stderr
    out = read_csv(result.stdout)
    assert list(out)[:7] == ["time"] + [f"base_{c}" for c in WRENCH]
    pm = pin_model(xml=pin_loadable_xml(path), free=True)
    tau, base_wrench, _ = pin_full(pm, model.joint_names, q, qd, qdd, base=base)
    assert_matches(np.column_stack([out[f"tau_{j}"] for j in model.joint_names]), tau)
    ours = np.column_stack([out[f"base_{c}"] for c in WRENCH])
    assert_matches(ours, swap_halves(base_wrench))
    report = run("torques", path, traj, "--floating-base").stderr
    assert "base wrench: peak force" in report and "zero only when the motion is dynamically consistent" in report


@pytest.mark.parametrize("seed", [3, 8])
def test_the_split_of_a_floating_base_is_pinocchios_gravity_mass_matrix_and_nonlinear_effects(seed, tmp_path):
    from random_urdf import random_urdf

    xml, _ = random_urdf(seed, n_links=6)
    (tmp_path / "r.urdf").write_text(xml)
    model = load(tmp_path / "r.urdf")
    rng = np.random.default_rng(seed)
    N = 5
    q, qd, qdd = random_motion(rng, N, model.n)
    pose, twist, dtwist = random_base(rng, N)
    traj = write_csv(tmp_path / "t.csv", {"time": np.arange(N) * 0.01, **base_columns(pose, twist, dtwist),
                                          **joint_columns(model.joint_names, q, qd, qdd)})
    result = run("torques", tmp_path / "r.urdf", traj, "--floating-base", "--split", "-q")
    assert result.exit_code == 0, result.stderr
    out = read_csv(result.stdout)
    pm = pin_model(xml=xml, free=True)
    expected = dict(zip(("gravity", "inertia", "coriolis"),
                        pin_terms(pm, model.joint_names, q, qd, qdd, base=(pose, twist, dtwist))))
    for part, reference in expected.items():
        assert_matches(np.column_stack([out[f"tau_{part}_{j}"] for j in model.joint_names]), reference)


def test_floating_base_needs_its_columns_and_unit_quaternions(tmp_path):
    arm = ROBOTS / "planar2.urdf"
    rng = np.random.default_rng(2)
    q, qd, qdd = random_motion(rng, 4, 2)
    pose, twist, dtwist = random_base(rng, 4)
    cols = {**base_columns(pose, twist, dtwist), **joint_columns(["shoulder", "elbow"], q, qd, qdd)}
    for left_out, message in (("q_base", "a floating base needs the columns q_base_x, q_base_y"),
                              ("qd_base", "the base twist's derivative (qdd_base_*) is given but the twist"),
                              ("qdd_base", "no time column: cannot derive the base twist's derivative (give --dt")):
        result = run("torques", arm, write_csv(tmp_path / "a.csv", {k: v for k, v in cols.items()
                                                                    if not k.startswith(left_out + "_")}),
                     "--floating-base")
        assert result.exit_code == 2 and message in result.stderr, (left_out, result.stderr)
    slightly = dict(cols, q_base_qw=cols["q_base_qw"] * (1 + 1e-4))
    result = run("torques", arm, write_csv(tmp_path / "b.csv", slightly), "--floating-base")
    assert result.exit_code == 0 and "warning: base quaternions normalised" in result.stderr
    normal = read_csv(run("torques", arm, write_csv(tmp_path / "n.csv", cols), "--floating-base", "-q").stdout)
    scaled = pose.copy()
    scaled[:, 3:] *= 1.005  # within 1e-2: normalised, same result up to round-off
    again = read_csv(run("torques", arm, write_csv(tmp_path / "s.csv", {**cols, **base_columns(scaled, twist, dtwist)}),
                         "--floating-base", "-q").stdout)
    for k in normal:
        np.testing.assert_allclose(again[k], normal[k], rtol=1e-12, atol=1e-12)
    bad = dict(cols, q_base_qw=cols["q_base_qw"] + 0.5)
    result = run("torques", arm, write_csv(tmp_path / "c.csv", bad), "--floating-base")
    assert result.exit_code == 2 and "c.csv: line 2: base quaternion has norm" in result.stderr


def analytic_base(t):
    """A base motion with a closed-form twist [w; v] (base frame) and its derivative: Q = Qa(α) Qb(β),
    rotations about fixed unit axes n1, n2, so w = Rb^T α' n1 + β' n2 and
    w' = Rb^T α'' n1 - β' n2 x (Rb^T α' n1) + β'' n2; p a sum of sines, v = R^T p', v' = R^T p'' - w x v."""
    from rnea_cli.dynamics.spatial import axis_angle

    n1, n2 = np.array([0.3, -0.5, 0.8]), np.array([0.9, 0.2, -0.1])
    n1, n2 = n1 / np.linalg.norm(n1), n2 / np.linalg.norm(n2)
    alpha, dalpha, ddalpha = 1.2 * np.sin(0.7 * t), 0.84 * np.cos(0.7 * t), -0.588 * np.sin(0.7 * t)
    beta, dbeta, ddbeta = 0.8 * np.cos(1.3 * t) + 0.3, -1.04 * np.sin(1.3 * t), -1.352 * np.cos(1.3 * t)

    def quat(n, angle):
        return np.column_stack([np.outer(np.sin(angle / 2), n), np.cos(angle / 2)])

    qa, qb = quat(n1, alpha), quat(n2, beta)
    va, wa, vb, wb = qa[:, :3], qa[:, 3:], qb[:, :3], qb[:, 3:]
    Q = np.column_stack([wa * vb + wb * va + np.cross(va, vb), wa * wb - np.sum(va * vb, axis=1, keepdims=True)])
    Rb, R = axis_angle(n2, beta), axis_angle(n1, alpha) @ axis_angle(n2, beta)
    a_in_b = np.einsum("kba,b->ka", Rb, n1)  # Rb^T n1
    w = dalpha[:, None] * a_in_b + np.outer(dbeta, n2)
    dw = ddalpha[:, None] * a_in_b - np.cross(np.outer(dbeta, n2), dalpha[:, None] * a_in_b) + np.outer(ddbeta, n2)
    p = np.column_stack([0.2 * np.sin(t), 0.1 * np.sin(2 * t), 0.05 * np.cos(3 * t)])
    dp = np.column_stack([0.2 * np.cos(t), 0.2 * np.cos(2 * t), -0.15 * np.sin(3 * t)])
    ddp = np.column_stack([-0.2 * np.sin(t), -0.4 * np.sin(2 * t), -0.45 * np.cos(3 * t)])
    v = np.einsum("kba,kb->ka", R, dp)
    dv = np.einsum("kba,kb->ka", R, ddp) - np.cross(w, v)
    return np.column_stack([p, Q]), np.column_stack([w, v]), np.column_stack([dw, dv])


def test_base_twist_from_the_pose(tmp_path, monkeypatch):
    """Without qd_base_*/qdd_base_* columns the base twist and its derivative are derived from the
    pose and time (second order: ~1e-6 of their size at 1 kHz, against a closed form),
    across block boundaries, whatever the quaternions' signs; with the twist given, its derivative."""
    from rnea_cli.trajectory.derive import base_twist, derivative

    t = np.arange(1000) * 1e-3
    pose, twist, dtwist = analytic_base(t)
    assert np.allclose(np.linalg.norm(pose[:, 3:], axis=1), 1, atol=1e-15)
    def close(a, b, interior, ends=1e-2):
        """within `interior` of b's size but at the two samples at each end, where a derivative of
        a derivative is first order; within `ends` there"""
        size = np.abs(b).max()
        return np.abs(a - b)[2:-2].max() < interior * size and np.abs(a - b).max() < ends * size

    got = base_twist(t, pose)
    assert close(got, twist, 1e-6, 1e-6)
    assert close(derivative(t, got), dtwist, 1e-5)

    model = load(ROBOTS / "arm7.urdf")
    rng = np.random.default_rng(8)
    q, qd, qdd = random_motion(rng, len(t), model.n)
    joints = joint_columns(model.joint_names, q, qd, qdd)
    given = base_columns(pose, twist, dtwist)
    exact = read_csv(run("torques", ROBOTS / "arm7.urdf", write_csv(tmp_path / "exact.csv", {"time": t, **given, **joints}),
                         "--floating-base", "-q").stdout)

    def torques(name, cols=None, *options):
        """run on tmp_path / name, written from cols the first time"""
        path = tmp_path / name if cols is None else write_csv(tmp_path / name, {**cols, **joints})
        result = run("torques", ROBOTS / "arm7.urdf", path, "--floating-base", *options)
        assert result.exit_code == 0, result.stderr
        return result, np.column_stack(list(read_csv(result.stdout).values()))

    pose_only = {"time": t, **{k: v for k, v in given.items() if k.startswith("q_base")}}
    result, derived = torques("pose.csv", pose_only)
    assert "the base twist and its derivative derived from the base pose and time" in result.stderr
    reference = np.column_stack(list(exact.values()))
    assert close(derived, reference, 1e-5)
    # q and -q are one orientation: flipped signs change nothing
    flipped = dict(pose_only)
    sign = np.where(rng.random(len(t)) < 0.3, -1.0, 1.0)
    for c in ("qx", "qy", "qz", "qw"):
        flipped[f"q_base_{c}"] = sign * pose_only[f"q_base_{c}"]
    np.testing.assert_allclose(torques("flipped.csv", flipped)[1], derived, rtol=0, atol=1e-9)
    # many small blocks: the same numbers as one, up to the rounding of BLAS on other sample counts
    reader = importlib.import_module("rnea_cli.trajectory.sources.csvfile")
    monkeypatch.setattr(reader, "BLOCK_BYTES", 5000)
    np.testing.assert_allclose(torques("pose.csv")[1], derived, rtol=0, atol=1e-9)
    np.testing.assert_allclose(torques("flipped.csv")[1], derived, rtol=0, atol=1e-9)
    monkeypatch.undo()
    # the twist given, its derivative derived
    twist_only = {**pose_only, **{k: v for k, v in given.items() if k.startswith("qd_base")}}
    result, got = torques("twist.csv", twist_only)
    assert "the base twist's derivative derived from the twist and time" in result.stderr
    assert close(got, reference, 1e-5)
    # no time column: --dt
    no_time = {k: v for k, v in pose_only.items() if k != "time"}
    np.testing.assert_array_equal(torques("dt.csv", no_time, "--dt", "0.001")[1][:, 1:], derived[:, 1:])


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


def test_external_wrenches_world_and_link_frames(tmp_path):
    """A wrench on a link fixed inside a body (arm7_tool), in world and link frames, at a point."""
    model = load(ROBOTS / "arm7.urdf")
    rng = np.random.default_rng(5)
    N = 8
    q, qd, qdd = random_motion(rng, N, model.n)
    w = rng.normal(0, 5, (N, 6))  # [fx fy fz tx ty tz]
    point = rng.normal(0, 0.2, (N, 3))
    cols = joint_columns(model.joint_names, q, qd, qdd)
    cols.update({f"fext_arm7_tool_{c}": w[:, k] for k, c in enumerate(WRENCH)})
    cols.update({f"fext_arm7_tool_p{c}": point[:, k] for k, c in enumerate("xyz")})
    traj = write_csv(tmp_path / "w.csv", cols)
    pm = pin_model(ROBOTS / "arm7.urdf")
    applied = {"arm7_tool": (swap_halves(w), point)}  # [n; f] at the point
    for wrench_frame in ("world", "link"):
        result = run("torques", ROBOTS / "arm7.urdf", traj, "--wrench-frame", wrench_frame, "-q")
        assert result.exit_code == 0, result.stderr
        ours = np.column_stack([read_csv(result.stdout)[f"tau_{j}"] for j in model.joint_names])
        f_ext = pin_link_wrenches(pm, model.joint_names, q, applied, wrench_frame)
        assert_matches(ours, pin_full(pm, model.joint_names, q, qd, qdd, f_ext=f_ext)[0])


def test_unknown_wrench_link_is_an_extra_column(tmp_path):
    model = load(ROBOTS / "planar2.urdf")
    q = np.zeros((3, 2))
    cols = {**joint_columns(model.joint_names, q, q, q), "fext_nolink_fx": np.zeros(3)}
    result = run("torques", ROBOTS / "planar2.urdf", write_csv(tmp_path / "x.csv", cols))
    assert result.exit_code == 0 and "ignored 1 column not read (not of this robot, or not for this command): fext_nolink_fx" in result.stderr
    cols = {**joint_columns(model.joint_names, q, q, q), "fext_forearm_fx": np.zeros(3)}
    result = run("torques", ROBOTS / "planar2.urdf", write_csv(tmp_path / "y.csv", cols))
    assert result.exit_code == 2 and "missing columns fext_forearm_tx, fext_forearm_ty, fext_forearm_tz, fext_forearm_fy" in result.stderr


def test_friction_and_actuators(tmp_path):
    model = load(ROBOTS / "arm7.urdf")
    rng = np.random.default_rng(6)
    N = 9
    q, qd, qdd = random_motion(rng, N, model.n)
    qd[0] = 0.0  # at rest: no Coulomb torque
    traj = write_csv(tmp_path / "a.csv", joint_columns(model.joint_names, q, qd, qdd))
    out = read_csv(run("torques", ROBOTS / "arm7.urdf", traj, "--friction", "-q").stdout)
    for i, j in enumerate(model.joints):
        expected = j.damping * qd[:, i] + j.friction * np.sign(qd[:, i])
        np.testing.assert_allclose(out[f"tau_friction_{j.name}"], expected, rtol=1e-15, atol=0)
        assert j.damping > 0 and j.friction > 0
    drives = tmp_path / "drives.yaml"
    drives.write_text("arm7_joint1: {gear_ratio: 100, rotor_inertia: 3.0e-5, viscous: 0.2, coulomb: 1.5}\n"
                      "arm7_joint2: {gear_ratio: 160, rotor_inertia: 1.2e-4}\n")
    out = read_csv(run("torques", ROBOTS / "arm7.urdf", traj, "--actuators", drives, "-q").stdout)
    pm = pin.buildModelFromUrdf(str(ROBOTS / "arm7.urdf"))
    pm.armature = np.r_[100**2 * 3.0e-5, 160**2 * 1.2e-4, np.zeros(5)]
    with_armature = pin_full(pm, model.joint_names, q, qd, qdd)[0]
    tau = np.column_stack([out[f"tau_{j}"] for j in model.joint_names])
    armature = np.column_stack([out[f"tau_armature_{j}"] for j in model.joint_names])
    assert_matches(tau + armature, with_armature)
    np.testing.assert_array_equal(out["tau_friction_arm7_joint1"], 0.2 * qd[:, 0] + 1.5 * np.sign(qd[:, 0]))
    np.testing.assert_array_equal(out["tau_friction_arm7_joint2"], 0 * qd[:, 1])
    total = out["tau_arm7_joint1"] + out["tau_friction_arm7_joint1"] + out["tau_armature_arm7_joint1"]
    np.testing.assert_allclose(out["tau_motor_arm7_joint1"], total / 100, rtol=1e-15)
    np.testing.assert_array_equal(out["tau_motor_arm7_joint3"], out["tau_arm7_joint3"])  # no drive: ratio 1
    drives.write_text("arm7_joint1: {gear_ratio: 0}\n")
    result = run("torques", ROBOTS / "arm7.urdf", traj, "--actuators", drives)
    assert result.exit_code == 2 and "arm7_joint1.gear_ratio: must be above 0" in result.stderr


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


@pytest.mark.parametrize("path", corpus_params(["iiwa14", "baxter"]))
def test_wrenches_command_matches_pinocchio(path, tmp_path):
    path = need_corpus(path)
    model = load(path)
    rng = np.random.default_rng(7)
    q, qd, qdd = random_motion(rng, 6, model.n)
    traj = write_csv(tmp_path / "w.csv", {"time": np.arange(6) * 0.1, **joint_columns(model.joint_names, q, qd, qdd)})
    result = run("wrenches", path, traj, "--no-mimic")
    assert result.exit_code == 0, result.stderr
    out = read_csv(result.stdout)
    ours = np.column_stack([out[f"{j}_{c}"] for j in model.joint_names for c in WRENCH]).reshape(6, model.n, 6)
    W = pin_full(pin.buildModelFromXML(pin_loadable_xml(path)), model.joint_names, q, qd, qdd)[2]  # [n; f]
    expected = swap_halves(W)
    assert_matches(ours.reshape(6, -1), expected.reshape(6, -1))
    lines = result.stderr.splitlines()
    assert lines[0].split()[:3] == ["joint", "peak", "|force|"]
    first = next(l for l in lines if l.startswith(model.joint_names[0] + " "))
    assert f"{np.linalg.norm(ours[:, 0, :3], axis=1).max():.4g} N" in first


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


def test_planar_joint_columns(tmp_path):
    (tmp_path / "p.urdf").write_text(planar_urdf())
    q = np.zeros((3, 4))
    cols = joint_columns(["pl_x", "pl_y", "pl_theta", "arm"], q, q, q)
    result = run("torques", tmp_path / "p.urdf", write_csv(tmp_path / "p.csv", cols), "-q")
    assert result.exit_code == 0
    assert list(read_csv(result.stdout)) == ["tau_pl_x", "tau_pl_y", "tau_pl_theta", "tau_arm"]


def test_a_free_body_from_the_command_line(tmp_path):
    (tmp_path / "brick.urdf").write_text('<robot name="brick"><link name="b"><inertial><mass value="3"/>'
                                         '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.25"/>'
                                         '</inertial></link></robot>')
    rng = np.random.default_rng(0)
    base = random_base(rng, 3)
    traj = write_csv(tmp_path / "b.csv", {"time": np.arange(3) * 0.1, **base_columns(*base)})
    result = run("torques", tmp_path / "brick.urdf", traj, "--floating-base")
    assert result.exit_code == 0, result.stderr
    assert list(read_csv(result.stdout)) == ["time"] + [f"base_{c}" for c in WRENCH]
    result = run("torques", tmp_path / "brick.urdf", traj)
    assert result.exit_code == 2 and "no movable joint (--floating-base for a free body)" in result.stderr
