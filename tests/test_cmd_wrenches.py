"""`rnea wrenches`: the wrench each joint carries, against Pinocchio."""

import numpy as np
import pinocchio as pin
import pytest

from conftest import WRENCH, columns as read_csv, corpus_params, joint_columns, load, need_corpus, run, write_csv
from oracle import assert_matches, pin_full, pin_loadable_xml, random_motion, swap_halves


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
