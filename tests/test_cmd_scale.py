"""`rnea scale`: the feasible speed factor is where a limit (effort, velocity, motor, envelope, RMS) binds."""

import json

import numpy as np
import polars as pl
import pytest

from arm7 import ARM, ARM_CSV, DRIVES, JOINTS, Q, QD, QDD, TIME, drive_oracle
from conftest import ROBOTS, joint_columns, ok, run, write_csv


def scaled_csv(tmp_path, k):
    cols = {"time": TIME / k, **joint_columns(JOINTS, Q, k * QD, k * k * QDD)}
    return write_csv(tmp_path / f"scaled{k!r}.csv", cols)


@pytest.mark.parametrize("extra", [[], ["--friction"], ["--actuators", str(DRIVES)]])
def test_the_speed_factor_makes_a_limit_bind(tmp_path, extra):
    """At k* the motion run k* as fast meets a limit (utilisation 1 in rnea check); a little faster breaks it."""
    limits = tmp_path / "limits.yaml"
    limits.write_text("arm7_joint2: {effort: 56}\narm7_joint4: {effort: 19}\n")
    args = ["--limits", limits, *extra]
    doc = json.loads(ok("scale", ARM, ARM_CSV, "--format", "json", *args).stdout)
    k = doc["factor"]
    assert doc["duration"] == pytest.approx(4.0 / k, rel=1e-12)
    checked = json.loads(run("check", ARM, scaled_csv(tmp_path, k), "--format", "json", *args).stdout)
    limiting = doc["limiting"]
    use = next(c["utilisation"] for c in checked["checks"]
               if c["joint"] == limiting["joint"] and c["quantity"] == limiting["quantity"])
    assert use == pytest.approx(1.0, rel=1e-8), limiting
    faster = json.loads(run("check", ARM, scaled_csv(tmp_path, k * (1 + 1e-6)), "--format", "json", *args).stdout)
    assert not faster["ok"]


DRIVE_KEYS = ("gear_ratio", "rotor_inertia", "viscous", "coulomb", "efficiency", "torque_constant")


def utilisation(quantity, entry, drives, k, j, gravity):
    """The worst value / limit of one limit of joint j on the motion run k times as fast."""
    effort, motor, speed, time = drive_oracle(drives, k, gravity)
    if quantity == "motor_torque":
        return np.abs(motor[:, j]).max() / entry["peak_torque"]
    if quantity == "motor_speed":
        return np.abs(speed[:, j]).max() / entry["max_speed"]
    if quantity == "envelope":
        w, t = np.array(entry["envelope"]).T
        allowed = np.where(np.abs(speed[:, j]) <= w[-1], np.interp(np.abs(speed[:, j]), w, t), 0.0)
        return (np.abs(motor[:, j]) / allowed).max()
    if quantity == "rms_effort":
        return np.sqrt(np.mean(effort[:, j] ** 2)) / entry["rms_effort"]
    window = entry.get("thermal_window")
    if window is None:
        return np.sqrt(np.mean(motor[:, j] ** 2)) / entry["continuous_torque"]
    worst = max(np.sqrt(np.mean(motor[(time > t - window) & (time <= t), j] ** 2)) for t in time if t >= window)
    return worst / entry["continuous_torque"]


@pytest.mark.parametrize("quantity, extra, gravity", [
    ("motor_torque", {"peak_torque": 0.5}, -9.81),
    ("motor_torque", {"peak_torque": 0.5}, 9.81),  # gravity reversed: the other side of the limit binds
    ("envelope", {"envelope": [[0, 0.5], [100, 0.45], [160, 0.2]]}, 9.81),
    ("motor_speed", {"max_speed": 150.0}, -9.81),
    ("envelope", {"envelope": [[0, 0.5], [100, 0.45], [160, 0.2]]}, -9.81),
    # below its first speed the envelope allows its first torque, in scale as in check
    ("envelope", {"envelope": [[100, 0.45], [160, 0.2]]}, -9.81),
    ("envelope", {"envelope": [[140, 0.4], [160, 0.2]]}, 9.81),
    ("motor_rms", {"continuous_torque": 0.3}, -9.81),
    ("motor_rms", {"continuous_torque": 0.42, "thermal_window": 0.5}, -9.81),
    ("motor_rms", {"continuous_torque": 0.25, "efficiency": 1.0}, -9.81),
    ("rms_effort", {}, -9.81),
])
def test_each_motor_limit_binds_at_the_speed_factor(tmp_path, quantity, extra, gravity):
    """With one limit on arm7_joint2 (and the URDF's out of reach) the factor k* is where that
    limit, computed from Pinocchio and the drive's numbers, is met; at k* (1 + 1e-6) it breaks."""
    import yaml

    drives = yaml.safe_load(DRIVES.read_text())
    drives = {j: {key: drives[j][key] for key in DRIVE_KEYS} for j in JOINTS}
    drives["arm7_joint2"].update(extra)
    (tmp_path / "drives.yaml").write_text(yaml.safe_dump(drives))
    limits = {j: {"effort": 1e9, "velocity": 1e9} for j in JOINTS}
    if quantity == "rms_effort":
        limits["arm7_joint2"]["rms_effort"] = 40.0
    (tmp_path / "limits.yaml").write_text(yaml.safe_dump(limits))
    doc = json.loads(ok("scale", ARM, ARM_CSV, "--format", "json", "--limits", tmp_path / "limits.yaml",
                        "--actuators", tmp_path / "drives.yaml", "--gravity", f"0,0,{gravity}").stdout)
    assert doc["limiting"]["joint"] == "arm7_joint2" and doc["limiting"]["quantity"] == quantity, doc
    k = doc["factor"]
    entry = {**drives["arm7_joint2"], **limits["arm7_joint2"]}
    assert 0.2 < k < 5, k  # the limits above were chosen to bind near the planned speed
    g = (0.0, 0.0, gravity)
    assert utilisation(quantity, entry, drives, k, 1, g) == pytest.approx(1.0, rel=1e-8)
    assert utilisation(quantity, entry, drives, k * (1 + 1e-6), 1, g) > 1


@pytest.mark.parametrize("envelope", [[[200, 0.5], [400, 0.1]], [[0, 0.5], [200, 0.5], [400, 0.1]]])
def test_scale_and_check_read_an_envelope_alike_below_its_first_speed(tmp_path, envelope):
    """The envelope holds its first torque below its first speed, in scale as in check: at the
    factor scale gives, check finds the envelope met exactly; a little faster, broken (scale
    took the curve below 200 rad/s as no limit, and called planar2 feasible at 1.27)."""
    frame = pl.read_csv(ROBOTS / "planar2_traj.csv")
    names = ("shoulder", "elbow")
    t = frame["time"].to_numpy()
    q, qd, qdd = (frame.select([f"{p}_{j}" for j in names]).to_numpy() for p in ("q", "qd", "qdd"))
    drives = tmp_path / "drives.yaml"
    drives.write_text(json.dumps({"shoulder": {"gear_ratio": 10, "envelope": envelope}}))
    limits = tmp_path / "limits.yaml"
    limits.write_text(json.dumps({j: {"velocity": 1e9} for j in names}))
    args = ["--actuators", drives, "--limits", limits]
    doc = json.loads(ok("scale", ROBOTS / "planar2.urdf", ROBOTS / "planar2_traj.csv", "--format", "json", *args,
                        code=1).stdout)
    assert doc["limiting"]["quantity"] == "envelope", doc
    k = doc["factor"]
    uses = []
    for factor in (k * (1 - 1e-6), k, k * (1 + 1e-6)):
        scaled = write_csv(tmp_path / f"{factor!r}.csv", {"time": t / factor, **joint_columns(names, q, factor * qd,
                                                                                              factor ** 2 * qdd)})
        checked = json.loads(run("check", ROBOTS / "planar2.urdf", scaled, "--format", "json", *args).stdout)
        uses.append(next(c["utilisation"] for c in checked["checks"] if c["quantity"] == "envelope"))
    assert uses[0] < 1 < uses[2] and uses[1] == pytest.approx(1.0, rel=1e-9), uses


def test_a_pose_held_still_is_exactly_still(tmp_path):
    """q constant on jittered stamps: the differences are exactly 0 (not round-off), so the speed
    factor is unbounded, and compare fits no line to a constant model effort (null, not noise)."""
    t = np.cumsum(np.random.default_rng(1).uniform(0.008, 0.012, 50))
    q = np.tile(Q[37], (50, 1))
    still = write_csv(tmp_path / "still.csv", {"time": t, **{f"q_{j}": q[:, i] for i, j in enumerate(JOINTS)}})
    doc = json.loads(ok("scale", ARM, still, "--format", "json").stdout)
    assert doc["unbounded"] and doc["factor"] is None
    measured = write_csv(tmp_path / "m.csv", {"time": t, **{f"q_{j}": q[:, i] for i, j in enumerate(JOINTS)},
                                              **{f"effort_{j}": np.linspace(-1, 1, 50) for j in JOINTS}})
    doc = json.loads(ok("compare", ARM, measured, "--format", "json").stdout)
    assert len(doc["joints"]) == len(JOINTS)
    assert all(j["scale"] is None and j["correlation"] is None and j["offset"] is None for j in doc["joints"])


def test_scale_below_one_exits_1(tmp_path):
    limits = tmp_path / "limits.yaml"
    limits.write_text("arm7_joint5: {velocity: 1.0}\n")
    result = ok("scale", ARM, ARM_CSV, "--limits", limits, code=1)
    assert "NOT feasible as planned" in result.stdout
    doc = json.loads(ok("scale", ARM, ARM_CSV, "--limits", limits, "--format", "json", code=1).stdout)
    assert doc["factor"] == pytest.approx(1.0 / np.abs(QD[:, 4]).max(), rel=1e-12)


def test_an_exact_sum_beyond_the_doubles_is_inf_and_scale_says_so(tmp_path):
    """Two values of 1.7e308 sum beyond the largest double: ExactSum gives inf, as a float sum
    would, and rnea scale on such efforts answers (it failed with OverflowError, exit 70)."""
    from rnea_cli.run.stats import ExactSum

    total = ExactSum(2)
    total.add(np.array([[1.7e308, -1.7e308], [1.7e308, -1.7e308]]))
    assert total.values().tolist() == [np.inf, -np.inf]
    traj = tmp_path / "big.csv"
    traj.write_text("time,q_shoulder,q_elbow,qd_shoulder,qd_elbow,qdd_shoulder,qdd_elbow\n" +
                    "".join(f"{k / 10},0,0,0,0,4e154,0\n" for k in range(10)))
    result = run("scale", ROBOTS / "planar2.urdf", traj)
    assert result.exit_code in (1, 2) and "internal error" not in result.stderr, result.stderr
