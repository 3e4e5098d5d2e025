"""External wrenches (link and world frames) and the joint wrenches they cause, against Pinocchio."""

import functools
import importlib

import numpy as np
import pinocchio as pin
import pytest

from conftest import (FREE, ROBOTS, WRENCH, columns as read_csv, corpus_params, joint_columns, load, need_corpus, run,
                      write_csv)
from oracle import (assert_matches, check_placements, compare, fixed_and_free, pin_full, pin_link_wrenches,
                    pin_loadable_xml, pin_model, random_base, random_motion, swap_halves)
from random_urdf import random_urdf
from rnea_cli import load_urdf
from rnea_cli.dynamics.engine import inverse_dynamics
from rnea_cli.dynamics.kinematics import link_wrenches_to_bodies


@pytest.mark.parametrize("path", corpus_params())
def test_external_and_joint_wrenches_match_pinocchio(path):
    path = need_corpus(path)
    pm = pin.buildModelFromXML(pin_loadable_xml(path))
    compare(load(path), pm, 12, floating=False)


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
