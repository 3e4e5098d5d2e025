"""Drivetrain terms (--friction, --actuators): gear ratio, rotor inertia, friction, efficiency and
energy, against closed forms and Pinocchio; bad drive files are one line."""

import json

import numpy as np
import pinocchio as pin
import pytest

from arm7 import ARM, ARM_CSV, DRIVES, JOINTS, MODEL, QD, TIME, drive_oracle
from conftest import ROBOTS, columns as read_csv, joint_columns, load, ok, run, small_blocks, stack, write_csv
from oracle import assert_matches, pin_full, random_motion


@pytest.mark.parametrize("block_bytes", [None, 2000])
def test_drivetrain_terms_against_closed_forms(tmp_path, monkeypatch, block_bytes):
    """Motor torque with gearbox efficiency (driving or driven back), current, power and energy,
    from the YAML numbers; the motor limits in check, the thermal window by brute force; in one
    block of input or in many (the windows and maxima carried across them)."""
    import yaml

    small_blocks(monkeypatch, block_bytes)

    drives = yaml.safe_load(DRIVES.read_text())
    out = read_csv(ok("torques", ARM, ARM_CSV, "--actuators", DRIVES, "-q").stdout)
    effort, motor, speed, _ = drive_oracle(drives, 1.0)  # Pinocchio and the YAML numbers
    assert_matches(stack(out, "tau_motor", JOINTS), motor)
    assert_matches(stack(out, "current", JOINTS), motor / np.array([drives[j]["torque_constant"] for j in JOINTS]))
    assert_matches(stack(out, "power", JOINTS), effort * QD)
    checked = json.loads(ok("check", ARM, ARM_CSV, "--actuators", DRIVES, "--format", "json").stdout)
    rms = next(c for c in checked["checks"] if c["joint"] == JOINTS[1] and c["quantity"] == "motor_rms")
    window = drives[JOINTS[1]]["thermal_window"]
    brute = max(np.sqrt(np.mean(motor[(TIME > t - window) & (TIME <= t), 1] ** 2)) for t in TIME if t >= window)
    assert rms["value"] == pytest.approx(brute, rel=1e-9)
    speed_check = next(c for c in checked["checks"] if c["joint"] == JOINTS[0] and c["quantity"] == "motor_speed")
    assert abs(speed_check["value"]) == pytest.approx(np.abs(speed[:, 0]).max(), rel=1e-12)
    peak = next(c for c in checked["checks"] if c["joint"] == JOINTS[3] and c["quantity"] == "motor_torque")
    assert abs(peak["value"]) == pytest.approx(np.abs(motor[:, 3]).max(), rel=1e-9)
    for i, j in enumerate(JOINTS[:4]):  # the torque-speed envelope, linear between its points
        w, t = np.array(drives[j]["envelope"]).T
        ratios = np.abs(motor[:, i]) / np.interp(np.abs(speed[:, i]), w, t)
        envelope = next(c for c in checked["checks"] if c["joint"] == j and c["quantity"] == "envelope")
        assert envelope["utilisation"] == pytest.approx(ratios.max(), rel=1e-9)
        assert envelope["worst_sample"] == int(np.argmax(ratios))


@pytest.mark.parametrize("block_bytes", [None, 2000])
def test_energy_drawn_and_regenerated_is_the_trapezoid_of_pinocchios_power(monkeypatch, block_bytes):
    """Energy drawn ∫ max(P, 0) dt and given back ∫ min(P, 0) dt, P = effort q̇ with the effort
    from Pinocchio and the drive numbers, in one block or in many; the report prints them."""
    import yaml

    from rnea_cli.run.actuators import load_drives
    from rnea_cli.model.tree import Coordinates
    from rnea_cli.run.pipeline import Pipeline
    from rnea_cli.run.stats import Energy
    from rnea_cli.trajectory.open import open_trajectory

    small_blocks(monkeypatch, block_bytes)
    coords = Coordinates(MODEL)
    pipeline = Pipeline(MODEL, coords, drives=load_drives(DRIVES, coords))
    energy = Energy(coords.n)
    blocks = 0
    for block in pipeline.blocks(open_trajectory(ARM_CSV, coords)):
        energy.update(block)
        blocks += 1
    assert blocks > 20 if block_bytes else blocks == 1
    effort = drive_oracle(yaml.safe_load(DRIVES.read_text()), 1.0)[0]
    power = effort * QD
    dt = np.diff(TIME)[:, None]
    for ours, part in ((energy.drawn, np.maximum(power, 0)), (energy.regenerated, np.minimum(power, 0))):
        reference = (0.5 * (part[1:] + part[:-1]) * dt).sum(axis=0)
        assert (np.abs(reference[:6]) > 1e-3).all()  # joint 7 never gives energy back
        np.testing.assert_allclose(ours, reference, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(energy.peaks.peak, np.abs(power).max(axis=0), rtol=1e-9, atol=0)
    line = next(line for line in ok("torques", ARM, ARM_CSV, "--actuators", DRIVES).stderr.splitlines()
                if line.startswith("arm7_joint2 ") and " J" in line)
    assert [float(x) for x in line.split()[3::2][:2]] == pytest.approx([energy.drawn[1], -energy.regenerated[1]],
                                                                         rel=1e-3), line


@pytest.mark.parametrize("entry, message", [
    ("{efficiency: 0}", "arm7_joint1.efficiency: must be in (0, 1], got 0.0"),
    ("{efficiency: 1.2}", "arm7_joint1.efficiency: must be in (0, 1], got 1.2"),
    ("{gear_ratio: 1e-320}", "arm7_joint1: 1 / (gear_ratio efficiency) is inf: the torques it takes part in would "
                             "overflow"),
    ("{rotor_inertia: 1e300}", "arm7_joint1.rotor_inertia: 1e+300 is too large"),
    ("{envelope: [[100, 2], [50, 1]]}", "arm7_joint1.envelope[1]: speeds must increase"),
    ("{thermal_window: 2}", "arm7_joint1.thermal_window: is the window of continuous_torque, which is not given"),
    ("{peak_torque: -1}", "arm7_joint1.peak_torque: must be above 0, got -1.0"),
])
def test_bad_drive_values_are_one_line(tmp_path, entry, message):
    path = tmp_path / "drives.yaml"
    path.write_text(f"arm7_joint1: {entry}\n")
    result = run("check", ARM, ARM_CSV, "--actuators", path)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


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
