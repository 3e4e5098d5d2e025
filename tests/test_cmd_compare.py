"""`rnea compare`: measured effort (or motor current through the drives) against the model's."""

import json

import numpy as np
import pytest

from arm7 import ARM, ARM_CSV, DRIVES, JOINTS, Q, QD, QDD, TIME, drive_oracle
from conftest import columns as read_csv, joint_columns, ok, run, small_blocks, stack, write_csv
from oracle import assert_matches, pin_model, pin_rnea


@pytest.mark.parametrize("block_bytes", [None, 2000])
def test_compare_measured_against_model(tmp_path, monkeypatch, block_bytes):
    """measured = 1.1 model + 0.5 + noise: the fit finds them; RMS, max, correlation as numpy's, in
    one block of input or in many (the sums merged across them)."""
    small_blocks(monkeypatch, block_bytes)
    tau = pin_rnea(pin_model(ARM), JOINTS, Q, QD, QDD)
    noise = np.random.default_rng(0).normal(0, 0.05, tau.shape)
    measured = 1.1 * tau + 0.5 + noise
    cols = {"time": TIME, **joint_columns(JOINTS, Q, QD, QDD), **{f"effort_{j}": measured[:, i]
                                                                  for i, j in enumerate(JOINTS)}}
    traj = write_csv(tmp_path / "m.csv", cols)
    doc = json.loads(ok("compare", ARM, traj, "--format", "json", "-o", tmp_path / "res.csv").stdout)
    assert doc["samples"] == len(TIME) and [j["joint"] for j in doc["joints"]] == JOINTS
    for i, j in enumerate(doc["joints"]):
        r = measured[:, i] - tau[:, i]
        assert j["rms"] == pytest.approx(np.sqrt(np.mean(r ** 2)), rel=1e-9)
        assert j["max"] == pytest.approx(np.abs(r).max(), rel=1e-9)
        assert j["correlation"] == pytest.approx(np.corrcoef(tau[:, i], measured[:, i])[0, 1], rel=1e-9)
        slope, offset = np.polyfit(tau[:, i], measured[:, i], 1)
        assert j["scale"] == pytest.approx(slope, rel=1e-9) and j["offset"] == pytest.approx(offset, rel=1e-6)
    residual = read_csv((tmp_path / "res.csv").read_text())
    assert_matches(stack(residual, "residual", JOINTS), measured - tau)
    worst = max(j["rms"] for j in doc["joints"])
    ok("compare", ARM, traj, "--max-rms", str(worst * 0.99), code=1)
    ok("compare", ARM, traj, "--max-rms", str(worst * 1.01))
    both = run("compare", ARM, traj, "-o", "-", "--format", "json")  # the residuals and the report on one stdout
    assert both.exit_code == 2 and both.stdout == "" and "give the residuals a file" in both.stderr


def test_compare_currents_through_the_drives(tmp_path):
    """Currents i give measured torque i kt ratio η (the issue's formula: the motor driving the
    load); a measurement of exactly the model's effort has no residual."""
    import yaml

    drives = yaml.safe_load(DRIVES.read_text())
    effort = drive_oracle(drives, 1.0)[0]  # Pinocchio's torque + friction + rotor inertia
    factor = np.array([drives[j]["torque_constant"] * drives[j]["gear_ratio"] * drives[j]["efficiency"]
                       for j in JOINTS])
    cols = {"time": TIME, **joint_columns(JOINTS, Q, QD, QDD), **{f"effort_{j}": effort[:, i] / factor[i]
                                                                  for i, j in enumerate(JOINTS)}}
    traj = write_csv(tmp_path / "currents.csv", cols)
    doc = json.loads(ok("compare", ARM, traj, "--effort-is", "current", "--actuators", DRIVES, "--format",
                        "json").stdout)
    assert max(j["rms"] for j in doc["joints"]) < 1e-9 * np.abs(effort).max()
    result = run("compare", ARM, traj, "--effort-is", "current")
    assert result.exit_code == 2 and result.stderr == ("rnea: error: --effort-is current: needs --actuators with a "
                                                       "torque_constant for every joint\n"), result.stderr
    result = run("compare", ARM, tmp_path / "not_yet.mcap", "--effort-is", "current")  # said before any reading
    assert result.exit_code == 2 and "--effort-is current: needs --actuators" in result.stderr, result.stderr
    del drives[JOINTS[3]]["torque_constant"]
    partial = tmp_path / "partial.yaml"
    partial.write_text(yaml.safe_dump(drives))
    result = run("compare", ARM, traj, "--effort-is", "current", "--actuators", partial)
    assert result.exit_code == 2 and result.stderr == (f"rnea: error: {partial}: joint {JOINTS[3]} has no "
                                                       "torque_constant (--effort-is current needs one for every "
                                                       "joint)\n"), result.stderr
    result = run("compare", ARM, ARM_CSV)
    assert result.exit_code == 2 and "no measured effort" in result.stderr
