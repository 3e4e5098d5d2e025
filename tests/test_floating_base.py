"""A floating base: the engine and the CLI against Pinocchio's free flyer, base columns and quaternions,
the base twist from the pose, floating joints in the URDF and free bodies."""

import importlib

import numpy as np
import pinocchio as pin
import pytest

from conftest import (FREE, ROBOTS, WRENCH, columns as read_csv, corpus_params, joint_columns, load, need_corpus,
                      planar_urdf, run, write_csv)
from oracle import (assert_matches, check_placements, compare, pin_full, pin_loadable_xml, pin_model, pin_terms,
                    random_base, random_motion, swap_halves)
from random_urdf import random_urdf
from rnea_cli import load_urdf
from rnea_cli.dynamics.engine import inverse_dynamics


@pytest.mark.parametrize("path", corpus_params(FREE))
def test_floating_base_matches_pinocchio(path):
    path = need_corpus(path)
    pm = pin_model(xml=pin_loadable_xml(path), free=True)
    compare(load(path), pm, 11, floating=True)


@pytest.mark.parametrize("seed", range(15))
def test_random_trees_floating_with_wrenches(seed):
    xml, _ = random_urdf(200 + seed)
    model = load_urdf(xml)
    compare(model, pin_model(xml=xml, free=True), seed, floating=True)
    compare(model, pin.buildModelFromXML(xml), seed, floating=False)


def test_base_arrays_of_the_wrong_shape_are_refused():
    model = load_urdf(random_urdf(511)[0])
    q = np.zeros((7, model.n))
    pose, twist, dtwist = random_base(np.random.default_rng(0), 7)
    with pytest.raises(ValueError, match=r"base pose has shape \(7, 6\); expected \(6, 7\)"):
        inverse_dynamics(model, q[:6], q[:6], q[:6], base=(pose[:6].T, twist[:6], dtwist[:6]))
    one = inverse_dynamics(model, q[0], q[0], q[0], base=(pose[0], twist[0], dtwist[0]))
    assert one.base_wrench.shape == (6,)


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


def test_a_base_quaternion_that_changes_sign_is_resampled_as_the_same_orientation(tmp_path):
    """q and -q are one orientation: a log whose base quaternion flips sign between two samples is
    made continuous before --resample interpolates it (the midpoint was near zero: the base
    seemed to spin half a turn, a base force of 8e4 N, exit 0; found by a review)."""
    import io

    import polars as pl

    from conftest import run

    robot = tmp_path / "pend.urdf"
    robot.write_text('<robot name="p"><link name="base"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" '
                     'ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link><link name="arm"><inertial>'
                     '<mass value="1"/><origin xyz="0.5 0 0"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" '
                     'iyz="0" izz="0.01"/></inertial></link><joint name="j" type="revolute"><parent link="base"/>'
                     '<child link="arm"/><axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="100" '
                     'velocity="10"/></joint></robot>')
    t = np.arange(40) / 100
    sign = np.where(np.arange(40) >= 20, -1.0, 1.0)
    zero = 0 * t
    pl.DataFrame({"time": t, "q_base_x": zero, "q_base_y": zero, "q_base_z": zero, "q_base_qx": zero,
                  "q_base_qy": zero, "q_base_qz": np.sin(0.25 * t) * sign, "q_base_qw": np.cos(0.25 * t) * sign,
                  "q_j": zero}).write_csv(tmp_path / "flip.csv")
    peaks = []
    for extra in ([], ["--resample", "200"]):
        out = run("torques", robot, tmp_path / "flip.csv", "--floating-base", "-q", *extra)
        assert out.exit_code == 0, out.stderr
        peaks.append(pl.read_csv(io.StringIO(out.stdout)).drop("time").select(pl.all().abs().max()).row(0))
    np.testing.assert_allclose(peaks[1], peaks[0], rtol=0.05, atol=1e-3)
