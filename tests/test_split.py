"""The torque split (--split: gravity, M qdd, nonlinear effects) and static poses (--static), against
Pinocchio."""

import numpy as np
import pytest

from arm7 import ARM, JOINTS, Q
from conftest import columns as read_csv, corpus_params, joint_columns, load, need_corpus, ok, stack, write_csv
from oracle import assert_matches, pin_full, pin_link_wrenches, pin_loadable_xml, pin_model, pin_terms, random_motion
from random_urdf import random_urdf
from rnea_cli import load_urdf


@pytest.mark.parametrize("path", corpus_params(["iiwa14", "panda", "ur5", "kinova_j2s6s200"]))
def test_the_split_is_pinocchios_gravity_mass_matrix_and_nonlinear_effects(path, tmp_path):
    path = need_corpus(path)
    model = load(path)
    q, qd, qdd = random_motion(np.random.default_rng(3), 12, model.n)
    traj = write_csv(tmp_path / "t.csv", {"time": np.arange(12) * 0.01, **joint_columns(model.joint_names, q, qd, qdd)})
    out = read_csv(ok("torques", path, traj, "--split", "-q", "--no-mimic").stdout)
    pm = pin_model(xml=pin_loadable_xml(path))
    g, inertia, coriolis = pin_terms(pm, model.joint_names, q, qd, qdd)
    names = model.joint_names
    assert_matches(stack(out, "tau_gravity", names), g)
    assert_matches(stack(out, "tau_inertia", names), inertia)
    assert_matches(stack(out, "tau_coriolis", names), coriolis)
    tau = stack(out, "tau", names)
    total = stack(out, "tau_gravity", names) + stack(out, "tau_inertia", names) + stack(out, "tau_coriolis", names)
    np.testing.assert_allclose(total, tau, rtol=0, atol=1e-12 * np.abs(tau).max())
    assert "tau_external_" + names[0] not in out


@pytest.mark.parametrize("seed", [1, 2, 6, 9])
def test_the_split_on_random_trees_with_external_wrenches(seed, tmp_path):
    xml, movable = random_urdf(seed, n_links=7)
    model = load_urdf(xml)
    urdf = tmp_path / "r.urdf"
    urdf.write_text(xml)
    rng = np.random.default_rng(seed)
    q, qd, qdd = random_motion(rng, 6, model.n)
    link = model.links[-1].name
    wrench = {f"fext_{link}_{c}": rng.normal(size=6) for c in ("fx", "fy", "fz", "tx", "ty", "tz")}
    traj = write_csv(tmp_path / "t.csv", {"time": np.arange(6) * 0.01, **joint_columns(model.joint_names, q, qd, qdd),
                                          **wrench})
    out = read_csv(ok("torques", urdf, traj, "--split", "-q", "--wrench-frame", "link").stdout)
    names = model.joint_names
    parts = sum(stack(out, f"tau_{p}", names) for p in ("gravity", "inertia", "coriolis", "external"))
    tau = stack(out, "tau", names)
    np.testing.assert_allclose(parts, tau, rtol=0, atol=1e-11 * max(np.abs(tau).max(), 1))
    pm = pin_model(xml=xml)
    g, inertia, coriolis = pin_terms(pm, names, q, qd, qdd)
    assert_matches(stack(out, "tau_gravity", names), g)
    assert_matches(stack(out, "tau_inertia", names), inertia)
    assert_matches(stack(out, "tau_coriolis", names), coriolis)
    applied = {link: (np.column_stack([wrench[f"fext_{link}_{c}"] for c in ("tx", "ty", "tz", "fx", "fy", "fz")]),
                      None)}
    f_ext = pin_link_wrenches(pm, names, q, applied, "link")
    zero = np.zeros_like(q)
    assert_matches(stack(out, "tau_external", names), pin_full(pm, names, q, zero, zero, gravity=(0, 0, 0),
                                                                 f_ext=f_ext)[0])


def test_static_poses_need_no_time_and_give_pinocchios_gravity(tmp_path):
    poses = tmp_path / "poses.csv"
    poses.write_text(",".join(f"q_{j}" for j in JOINTS) + "\n" + "\n".join(",".join(map(repr, map(float, row)))
                                                                        for row in Q[::40]) + "\n")
    out = read_csv(ok("torques", ARM, poses, "--static", "-q").stdout)
    g, _, _ = pin_terms(pin_model(ARM), JOINTS, Q[::40], 0 * Q[::40], 0 * Q[::40])
    assert_matches(stack(out, "tau", JOINTS), g)
    assert "time" not in out
