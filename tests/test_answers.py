"""Answers along a trajectory, each checked against Pinocchio or a closed form: the torque split,
holding torques, payload capacity, the feasible speed factor, drivetrain terms and limits, and
measured against model."""

import json

import numpy as np
import pinocchio as pin
import polars as pl
import pytest

from conftest import ROBOTS, columns as read_csv, corpus_params, joint_columns, load, need_corpus, run, write_csv
from oracle import (assert_matches, pin_full, pin_terms, pin_link_wrenches, pin_loadable_xml, pin_model, pin_rnea,
                    random_motion)
from random_urdf import random_urdf
from rnea_cli import load_urdf

ARM = ROBOTS / "arm7.urdf"
ARM_CSV = ROBOTS / "arm7_traj.csv"
DRIVES = ROBOTS / "arm7_drives.yaml"
MODEL = load_urdf(ARM)
JOINTS = MODEL.joint_names
FRAME = pl.read_csv(ARM_CSV)
TIME = FRAME["time"].to_numpy()
Q, QD, QDD = (FRAME.select([f"{p}_{j}" for j in JOINTS]).to_numpy() for p in ("q", "qd", "qdd"))


def small_blocks(monkeypatch, block_bytes):
    """CSV input read in blocks of about block_bytes (None: the default, arm7_traj.csv in one)."""
    if block_bytes:
        monkeypatch.setattr(__import__("importlib").import_module("rnea_cli.trajectory.sources.csvfile"), "BLOCK_BYTES",
                            block_bytes)


def ok(*args, code=0):
    result = run(*args)
    assert result.exit_code == code, result.stderr
    return result


def stack(out, prefix, joints):
    return np.column_stack([out[f"{prefix}_{j}"] for j in joints])


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


def pin_with_payload(mass, link, at, box=None):
    """Pinocchio's model of arm7 with a payload on `link` (a point, or a box)."""
    pm = pin_model(ARM)
    frame = pm.frames[pm.getFrameId(link)]
    inertia = pin.Inertia.FromBox(mass, *box) if box is not None else pin.Inertia(mass, np.zeros(3), np.zeros((3, 3)))
    placed = frame.placement * pin.SE3(np.eye(3), np.asarray(at, dtype=float))
    pm.inertias[frame.parentJoint] += placed.act(inertia)
    return pm


@pytest.mark.parametrize("link, at, box", [("arm7_link7", (0, 0, 0.05), None), ("arm7_tool", (0.02, 0, 0.1), None),
                                          ("arm7_tool", (0, 0.01, 0.08), (0.1, 0.06, 0.2)),
                                          ("arm7_link4", (0.1, 0, 0), None)])
def test_the_payload_capacity_is_where_pinocchio_meets_the_limit(link, at, box):
    """At the capacity m* the limiting joint's torque, with the payload added to Pinocchio's
    body, meets its limit at the limiting sample; no torque exceeds its limit; a little more breaks it."""
    args = ["payload", ARM, ARM_CSV, "--link", link, "--at", ",".join(map(str, at)), "--format", "json"]
    if box:
        args += ["--box", ",".join(map(str, box))]
    doc = json.loads(ok(*args).stdout)
    assert doc["feasible_without_payload"] and not doc["unbounded"] and doc["limiting"]["quantity"] == "effort"
    m = doc["max_payload"]
    j, k = JOINTS.index(doc["limiting"]["joint"]), doc["limiting"]["sample"]
    effort = np.array([jt.limits.effort for jt in MODEL.joints])
    tau = pin_rnea(pin_with_payload(m, link, at, box), JOINTS, Q, QD, QDD)
    assert abs(abs(tau[k, j]) - effort[j]) <= 1e-9 * effort[j]
    assert (np.abs(tau) <= effort * (1 + 1e-9)).all()
    more = pin_rnea(pin_with_payload(m * (1 + 1e-6), link, at, box), JOINTS, Q, QD, QDD)
    assert (np.abs(more) > effort).any()


def test_payload_rms_and_motor_limits_bind_exactly(tmp_path):
    """With an rms_effort limit the capacity makes the RMS equal it (a quadratic in m); with drives
    the motor limits (efficiency, thermal windows) bind at the capacity, checked by rnea check on a
    URDF with the payload written into the link."""
    limits = tmp_path / "limits.yaml"
    limits.write_text("arm7_joint2: {rms_effort: 45.0}\n")
    doc = json.loads(ok("payload", ARM, ARM_CSV, "--link", "arm7_link7", "--limits", limits, "--format",
                        "json").stdout)
    assert doc["limiting"] == {"joint": "arm7_joint2", "quantity": "rms_effort", "sample": None, "time": None}
    tau = pin_rnea(pin_with_payload(doc["max_payload"], "arm7_link7", (0, 0, 0)), JOINTS, Q, QD, QDD)
    assert np.sqrt(np.mean(tau[:, 1] ** 2)) == pytest.approx(45.0, rel=1e-9)
    for extra in ([], ["--friction"]):
        doc = json.loads(ok("payload", ARM, ARM_CSV, "--link", "arm7_tool", "--actuators", DRIVES, "--format",
                            "json", *extra).stdout)
        m = doc["max_payload"]
        heavier = with_payload_urdf(tmp_path, "arm7_tool", m)
        result = json.loads(run("check", heavier, ARM_CSV, "--actuators", DRIVES, "--format", "json", *extra).stdout)
        limiting = doc["limiting"]
        use = next(c["utilisation"] for c in result["checks"]
                   if c["joint"] == limiting["joint"] and c["quantity"] == limiting["quantity"])
        assert use == pytest.approx(1.0, rel=1e-9), limiting
        assert result["ok"] or all(v["utilisation"] <= 1 + 1e-9 for v in result["violations"])


def with_payload_urdf(tmp_path, link, mass):
    """arm7 with a point mass fixed at `link`'s origin, as a link of its own."""
    text = ARM.read_text().replace("</robot>", f"""<link name="payload"><inertial><mass value="{mass!r}"/>
      <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
      <joint name="payload_joint" type="fixed"><parent link="{link}"/><child link="payload"/></joint></robot>""")
    path = tmp_path / "heavier.urdf"
    path.write_text(text)
    return path


def test_payload_when_the_motion_already_breaks_a_limit_and_bad_options(tmp_path):
    limits = tmp_path / "limits.yaml"
    limits.write_text("arm7_joint2: {effort: 40}\n")
    result = ok("payload", ARM, ARM_CSV, "--link", "arm7_link7", "--limits", limits, "--format", "json", code=1)
    doc = json.loads(result.stdout)
    assert doc["max_payload"] is None and doc["feasible_without_payload"] is False
    for args, message in ((["--link", "nowhere"], "no link 'nowhere'; the robot's links: arm7_link0"),
                          (["--link", "arm7_link7", "--box", "0.1,-0.1,0.1"], "edge lengths must be above 0"),
                          (["--link", "arm7_link7", "--at", "1,2"], "is not three finite numbers")):
        result = run("payload", ARM, ARM_CSV, *args)
        assert result.exit_code == 2 and message in result.stderr, result.stderr


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


def drive_oracle(drives, k, gravity=(0.0, 0.0, -9.81)):
    """The motion run k times as fast, from Pinocchio and the YAML numbers: the effort the joints
    need (rigid body + friction + rotor inertia), the motor torque (efficiency by direction), the
    motor speed, and the scaled time."""
    qd, qdd = k * QD, k * k * QDD
    d = [drives[j] for j in JOINTS]
    ratio, eta = np.array([x["gear_ratio"] for x in d]), np.array([x["efficiency"] for x in d])
    effort = pin_rnea(pin_model(ARM), JOINTS, Q, qd, qdd, gravity=gravity) + np.array([x["viscous"] for x in d]) * qd \
        + np.array([x["coulomb"] for x in d]) * np.sign(qd) + ratio ** 2 * np.array([x["rotor_inertia"] for x in d]) * qdd
    motor = np.where(effort * qd >= 0, effort / (ratio * eta), effort * eta / ratio)
    return effort, motor, ratio * qd, TIME / k


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


def test_what_the_data_do_not_determine_is_not_fitted(tmp_path):
    """planar2 moving 1e-150 rad, its measured effort a constant 0.3 (whose mean is 1 ulp off):
    compare fitted a scale of 7e118 to the round-off of the deviations, scale called a motion of
    1e-270 rad feasible 6e135 times as fast, payload its capacity 1.6e272 kg. Now: no fit (null),
    and no factor or capacity beyond 1e6 (unbounded)."""
    t = np.arange(200) * 0.01
    names = ("shoulder", "elbow")
    assert np.full(200, 0.3).mean() != 0.3  # (the round-off the fit took for a slope)
    for amplitude in (1e-150, 1e-270):
        q = amplitude * np.sin(t)[:, None] * [1.0, 1.0]
        path = write_csv(tmp_path / f"{amplitude:g}.csv", {"time": t, **joint_columns(names, q, -q[::-1], -q),
                                                           **{f"effort_{j}": np.full(200, 0.3) for j in names}})
        compared = json.loads(ok("compare", ROBOTS / "planar2.urdf", path, "--format", "json").stdout)
        assert all(j[key] is None for j in compared["joints"] for key in ("scale", "offset", "correlation"))
        assert [j["rms"] for j in compared["joints"]] == [0.3, 0.3]
        scaled = json.loads(ok("scale", ROBOTS / "planar2.urdf", path, "--format", "json").stdout)
        assert (scaled["factor"], scaled["unbounded"], scaled["limiting"]) == (None, True, None)
        carried = json.loads(ok("payload", ROBOTS / "planar2.urdf", path, "--link", "forearm", "--format",
                                "json").stdout)  # (it was 1.6e152 kg, and 1.6e272)
        assert (carried["max_payload"], carried["unbounded"], carried["limiting"]) == (None, True, None)
    text = ok("scale", ROBOTS / "planar2.urdf", path).stdout
    assert text == "speed factor: unbounded (no checked limit binds below 1e+06 times the planned speed)\n"
    moving = write_csv(tmp_path / "moving.csv", {"time": t, **joint_columns(names, np.sin(t)[:, None] * [1.0, 1.0],
                                                                            np.cos(t)[:, None] * [1.0, 1.0],
                                                                            -np.sin(t)[:, None] * [1.0, 1.0]),
                                                 **{f"effort_{j}": np.full(200, 0.3) for j in names}})
    compared = json.loads(ok("compare", ROBOTS / "planar2.urdf", moving, "--format", "json").stdout)
    assert [(j["scale"], j["offset"], j["correlation"]) for j in compared["joints"]] == [(0.0, 0.3, None)] * 2


def test_scale_below_one_exits_1(tmp_path):
    limits = tmp_path / "limits.yaml"
    limits.write_text("arm7_joint5: {velocity: 1.0}\n")
    result = ok("scale", ARM, ARM_CSV, "--limits", limits, code=1)
    assert "NOT feasible as planned" in result.stdout
    doc = json.loads(ok("scale", ARM, ARM_CSV, "--limits", limits, "--format", "json", code=1).stdout)
    assert doc["factor"] == pytest.approx(1.0 / np.abs(QD[:, 4]).max(), rel=1e-12)


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


@pytest.mark.parametrize("command", ["compare", "payload", "scale"])
def test_the_answers_are_the_same_bits_however_the_input_is_cut(command, tmp_path, monkeypatch):
    """compare's moments and the RMS sums of payload and scale are exact sums: reading the file in
    blocks of other sizes changes no digit of their JSON (float sums per block did)."""
    limits = tmp_path / "limits.yaml"  # an RMS limit that binds: the answer is its sums' (34 N·m RMS now)
    limits.write_text(f"arm7_joint2: {{rms_effort: {35 if command == 'scale' else 40}}}\n")
    args = {"compare": ["--format", "json"],
            "payload": ["--link", "arm7_link7", "--format", "json", "--limits", limits],
            "scale": ["--format", "json", "--limits", limits]}[command]
    trajectory = ROBOTS / ("arm7_measured.csv" if command == "compare" else "arm7_traj.csv")
    outputs = []
    for block_bytes in (None, 5000, 23456):
        small_blocks(monkeypatch, block_bytes)
        result = run(command, ARM, trajectory, *args)
        assert result.exit_code in (0, 1), result.stderr
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1] == outputs[2]
    answer = json.loads(outputs[0])
    assert command == "compare" or answer["limiting"]["quantity"] == "rms_effort"


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
