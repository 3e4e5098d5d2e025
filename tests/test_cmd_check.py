"""`rnea check`: exit statuses, formats (JSON, JUnit, GitHub), margin, limits from the URDF and from a
limits file, friction and actuators in the effort, narrow terminals."""

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from conftest import ARM, ARM_CSV, ARM_YAML, ROBOTS, columns, one_line_error, run
from rnea_cli import load_urdf


MODEL = load_urdf(ARM)
TRAJ = columns(open(ARM_CSV).read())


def pinocchio_torques():
    """{tau_<joint>: (N,)} of the example trajectory, by Pinocchio (the oracle, not our own output)."""
    from oracle import pin_model, pin_rnea

    q, qd, qdd = (np.column_stack([TRAJ[f"{p}_{j}"] for j in MODEL.joint_names]) for p in ("q", "qd", "qdd"))
    tau = pin_rnea(pin_model(ARM), MODEL.joint_names, q, qd, qdd)
    return {f"tau_{j}": tau[:, i] for i, j in enumerate(MODEL.joint_names)}


TAU = pinocchio_torques()


def limits_file(tmp_path, text):
    path = tmp_path / "limits.yaml"
    path.write_text(text)
    return str(path)


def test_within_limits_exits_0():
    result = run("check", ARM, ARM_CSV)
    assert result.exit_code == 0
    assert result.stdout.strip().splitlines()[-1] == "OK: 21 checks within limits over 401 samples"


def one_violation(tmp_path, fmt):
    """`check` with arm7_joint4's effort limit at 90 % of its peak: (result, limit, tau of joint 4)."""
    tau4 = TAU["tau_arm7_joint4"]
    limit = float(0.9 * np.abs(tau4).max())
    result = run("check", ARM, ARM_CSV, "--format", fmt,
                 "--limits", limits_file(tmp_path, f"arm7_joint4: {{effort: {limit!r}}}\n"))
    assert result.exit_code == 1
    return result, limit, tau4


def test_limits_written_with_an_exponent_and_no_dot_are_numbers(tmp_path):
    """YAML 1.1 reads 1e1 as the string "1e1"; a limits file means the number, as a trajectory does."""
    peak = float(np.abs(TAU["tau_arm7_joint4"]).max())
    assert 10 < peak < 20  # 1e1 is exceeded, 2e1 is not
    for text, code in (("1e1", 1), ("2e1", 0)):
        result = run("check", ARM, ARM_CSV, "--format", "json",
                     "--limits", limits_file(tmp_path, f"arm7_joint4: {{effort: {text}}}\n"))
        assert result.exit_code == code, result.stderr
        effort = next(c for c in json.loads(result.stdout)["checks"]
                      if c["joint"] == "arm7_joint4" and c["quantity"] == "effort")
        assert effort["limit"] == float(text)


def test_exactly_one_violating_joint_is_reported(tmp_path):
    result, limit, tau4 = one_violation(tmp_path, "json")
    doc = json.loads(result.stdout)
    assert not doc["ok"] and len(doc["violations"]) == 1
    v = doc["violations"][0]
    over = np.abs(tau4) > limit
    first = int(np.argmax(over))
    assert (v["joint"], v["quantity"], v["limit"], v["count"]) == ("arm7_joint4", "effort", limit, int(over.sum()))
    assert v["sample"] == first and v["time"] == TRAJ["time"][first]
    assert abs(v["value"]) == pytest.approx(np.abs(tau4).max(), rel=1e-12)


def test_json_schema():
    doc = json.loads(run("check", ARM, ARM_YAML, "--format", "json").stdout)
    assert set(doc) >= {"ok", "violations", "unchecked", "checks", "samples", "margin"}
    assert doc["ok"] is True and doc["violations"] == [] and doc["unchecked"] == []
    keys = {"joint", "quantity", "value", "limit", "time", "sample", "count"}
    assert len(doc["checks"]) == 21 and all(keys <= set(c) for c in doc["checks"])
    assert {c["quantity"] for c in doc["checks"]} == {"effort", "velocity", "position"}


def test_margin_scales_effort_and_velocity_limits():
    margin = 0.5
    expected = set()
    for j in MODEL.joints:
        if np.abs(TAU[f"tau_{j.name}"]).max() > margin * j.limits.effort:
            expected.add((j.name, "effort"))
        if np.abs(TRAJ[f"qd_{j.name}"]).max() > margin * j.limits.velocity:
            expected.add((j.name, "velocity"))
    assert expected  # the trajectory uses more than half of some velocity limits
    result = run("check", ARM, ARM_CSV, "--margin", str(margin), "--format", "json")
    assert result.exit_code == 1
    found = {(v["joint"], v["quantity"]) for v in json.loads(result.stdout)["violations"]}
    assert found == expected


def test_position_and_rms_limits(tmp_path):
    q3 = TRAJ["q_arm7_joint3"]
    rms1 = float(np.sqrt(np.mean(TAU["tau_arm7_joint1"] ** 2)))
    text = (f"arm7_joint3: {{lower: {float(q3.min()) + 0.01!r}, upper: 3.0}}\n"
            f"arm7_joint1: {{rms_effort: {0.99 * rms1!r}}}\n"
            f"arm7_joint2: {{rms_effort: {1.01 * float(np.sqrt(np.mean(TAU['tau_arm7_joint2'] ** 2)))!r}}}\n")
    doc = json.loads(run("check", ARM, ARM_CSV, "--format", "json", "--limits", limits_file(tmp_path, text)).stdout)
    found = {(v["joint"], v["quantity"]): v for v in doc["violations"]}
    assert set(found) == {("arm7_joint3", "position"), ("arm7_joint1", "rms_effort")}
    assert found[("arm7_joint3", "position")]["count"] == int((q3 < q3.min() + 0.01).sum())
    assert found[("arm7_joint1", "rms_effort")]["value"] == pytest.approx(rms1, rel=1e-12)


def test_junit_is_valid_xml_with_one_case_per_joint_and_quantity(tmp_path):
    result = run("check", ARM, ARM_CSV, "--format", "junit", "--margin", "0.5")
    assert result.exit_code == 1
    root = ET.fromstring(result.stdout)
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == 21 and len({c.get("name") for c in cases}) == 21
    failures = [c for c in cases if c.find("failure") is not None]
    assert int(root.get("failures")) == len(failures) > 0
    violations = json.loads(run("check", ARM, ARM_CSV, "--format", "json", "--margin", "0.5").stdout)["violations"]
    assert {c.get("name") for c in failures} == {f"{v['joint']}.{v['quantity']}" for v in violations}


def test_github_annotations_point_at_the_trajectory_row(tmp_path):
    result, limit, tau4 = one_violation(tmp_path, "github")
    (line,) = result.stdout.splitlines()
    first = int(np.argmax(np.abs(tau4) > limit))
    assert line.startswith(f"::error file={ARM_CSV},line={first + 2},title=rnea check%3A arm7_joint4 effort::")
    row = open(ARM_CSV).read().splitlines()[first + 1]  # line first + 2, 1-based
    assert row.split(",")[0] == repr(float(TRAJ["time"][first]))


def test_friction_and_actuators_count_in_effort(tmp_path):
    """With --friction/--actuators, effort and rms_effort are checked on what the drive delivers:
    tau + friction (+ armature). The expected torques come from Pinocchio (with model.armature) and
    the friction formula, not from our torques command."""
    import yaml
    from oracle import pin_full, pin_model

    names = MODEL.joint_names
    q, qd, qdd = (np.column_stack([TRAJ[f"{p}_{j}"] for j in names]) for p in ("q", "qd", "qdd"))
    drives_file = str(ROBOTS / "arm7_drives.yaml")
    drives = yaml.safe_load(open(drives_file))  # read here, not by our load_drives
    pm = pin_model(ARM)
    rigid = pin_full(pm, names, q, qd, qdd)[0]
    pm.armature = np.array([drives[j]["gear_ratio"] ** 2 * drives[j]["rotor_inertia"] for j in names])
    with_armature = pin_full(pm, names, q, qd, qdd)[0]
    damping = np.array([j.damping for j in MODEL.joints])
    coulomb = np.array([j.friction for j in MODEL.joints])
    urdf_friction = damping * qd + coulomb * np.sign(qd)
    drive_friction = (np.array([drives[j]["viscous"] for j in names]) * qd
                      + np.array([drives[j]["coulomb"] for j in names]) * np.sign(qd))
    k = names.index("arm7_joint2")
    expected = {(): rigid, ("--friction",): rigid + urdf_friction,
                ("--actuators", drives_file): with_armature + drive_friction,
                ("--friction", "--actuators", drives_file): with_armature + urdf_friction + drive_friction}
    peaks = {flags: float(np.abs(tau[:, k]).max()) for flags, tau in expected.items()}
    rms = {flags: float(np.sqrt(np.mean(tau[:, k] ** 2))) for flags, tau in expected.items()}
    assert len({round(p, 6) for p in peaks.values()}) == 4  # the terms change the peak
    for flags, tau in expected.items():
        # limits just above this torque's peak and RMS: within; just below: both exceeded
        for scale, code in ((1.0001, 0), (0.9999, 1)):
            limits = limits_file(tmp_path, f"arm7_joint2: {{effort: {scale * peaks[flags]!r}, "
                                           f"rms_effort: {scale * rms[flags]!r}}}\n")
            result = run("check", ARM, ARM_CSV, "--format", "json", "--limits", limits, *flags)
            assert result.exit_code == code, (flags, scale, result.stderr)
            doc = json.loads(result.stdout)
            terms = (["friction"] if len(flags) != 0 else []) + (["armature"] if "--actuators" in flags else [])
            assert doc["effort_includes"] == terms
            got = {c["quantity"]: c for c in doc["checks"] if c["joint"] == "arm7_joint2"}
            worst = got["effort"]["worst_sample"]
            assert got["effort"]["value"] == pytest.approx(tau[worst, k], rel=1e-9)
            assert abs(got["effort"]["value"]) == pytest.approx(peaks[flags], rel=1e-9)
            assert got["rms_effort"]["value"] == pytest.approx(rms[flags], rel=1e-9)
    result = run("check", ARM, ARM_CSV, "--format", "github", "--friction", "--actuators", drives_file,
                 "--limits", limits)
    assert "arm7_joint2 effort (tau + friction + armature) " in result.stdout
    text = run("check", ARM, ARM_CSV, "--friction").stdout.splitlines()
    assert text[-1].endswith("; effort = tau + friction")
    assert [line.split()[1:3] for line in text if line.split()[:2] == ["arm7_joint2", "effort"]] == \
        [["effort", "(τ+friction)"]]
    bad = limits_file(tmp_path, "arm7_joint2: {gear_ratio: 0}\n")
    result = run("check", ARM, ARM_CSV, "--actuators", bad)
    assert result.exit_code == 2 and "arm7_joint2.gear_ratio: must be above 0" in result.stderr


NO_LIMITS = """<robot name="free"><link name="a"/>
<link name="b"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
<joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="1 0 0"/>{limit}</joint></robot>"""


def test_unchecked_and_strict(tmp_path):
    (tmp_path / "r.urdf").write_text(NO_LIMITS.format(limit=""))
    (tmp_path / "t.csv").write_text("time,q_j,qd_j,qdd_j\n0,0,0,0\n1,0,0,0\n")
    result = run("check", str(tmp_path / "r.urdf"), str(tmp_path / "t.csv"), "--format", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["unchecked"] == [{"joint": "j", "quantity": q}
                                                      for q in ("effort", "velocity", "position")]
    result = run("check", str(tmp_path / "r.urdf"), str(tmp_path / "t.csv"), "--strict")
    assert result.exit_code == 1 and "FAIL: 3 unchecked (--strict)" in result.stdout
    junit = ET.fromstring(run("check", str(tmp_path / "r.urdf"), str(tmp_path / "t.csv"), "--format", "junit").stdout)
    assert junit.get("skipped") == "3" and junit.get("failures") == "0"


@pytest.mark.parametrize("bounds, expected", [('upper="1.5"', [0.0, 1.5]), ('lower="-1.5"', [-1.5, 0.0])])
def test_a_urdf_limit_with_one_bound_has_urdfs_default_0_for_the_other(tmp_path, bounds, expected):
    (tmp_path / "r.urdf").write_text(NO_LIMITS.format(limit=f'<limit {bounds} effort="5" velocity="2"/>'))
    (tmp_path / "t.csv").write_text("time,q_j,qd_j,qdd_j\n0,0.5,0,0\n1,-0.5,0,0\n")
    result = run("check", str(tmp_path / "r.urdf"), str(tmp_path / "t.csv"), "--format", "json")
    position = next(c for c in json.loads(result.stdout)["checks"] if c["quantity"] == "position")
    assert result.exit_code == 1 and position["limit"] == expected and position["count"] == 1
    assert run("info", str(tmp_path / "r.urdf")).exit_code == 0


def test_zero_urdf_limits_are_absent_with_a_warning(tmp_path):
    (tmp_path / "r.urdf").write_text(NO_LIMITS.format(limit='<limit lower="0" upper="0" effort="0" velocity="0"/>'))
    (tmp_path / "t.csv").write_text("time,q_j,qd_j,qdd_j\n0,0.5,2,3\n1,0.5,2,3\n")
    result = run("check", str(tmp_path / "r.urdf"), str(tmp_path / "t.csv"))
    assert result.exit_code == 0
    assert "warning: j: URDF effort limit is 0, treated as absent" in result.stderr
    assert "warning: j: URDF position limits [0, 0] leave no range, treated as absent" in result.stderr


@pytest.mark.parametrize("text, message", [
    ("nope: {effort: 1}\n", "limits.yaml: nope: no joint 'nope' among the trajectory's joints"),
    ("arm7_joint1: {effort: x}\n", "limits.yaml: arm7_joint1.effort: not a number: 'x'"),
    ("arm7_joint1: {effort: -1}\n", "limits.yaml: arm7_joint1.effort: must be positive"),
    ("arm7_joint1: {torque: 1}\n", "limits.yaml: arm7_joint1.torque: unknown key"),
    ("arm7_joint1: {lower: 1, upper: 0}\n", "limits.yaml: arm7_joint1: lower 1.0 is not below upper 0.0"),
    ("arm7_joint1: {lower: 0.5, upper: 0.5}\n", "limits.yaml: arm7_joint1: lower 0.5 is not below upper 0.5"),
    ("arm7_joint2: {upper: -5}\n", "limits.yaml: arm7_joint2: lower -2.0944 is not below upper -5 (with the URDF"),
    ("arm7_joint1: [1\n", "limits.yaml: line 2, column 1: invalid YAML"),
    ("arm7_joint5: {lower: null, upper: -1.0}\n", "limits.yaml: arm7_joint5: upper is -1 but lower is null: a "
                                                  "position limit has both bounds"),
    ("arm7_joint5: {upper: null}\n", "limits.yaml: arm7_joint5: lower is -2.96706 but upper is null"),
])
def test_bad_limits_file_exits_2(tmp_path, text, message):
    result = run("check", ARM, ARM_CSV, "--limits", limits_file(tmp_path, text))
    assert result.exit_code == 2
    assert message in result.stderr, result.stderr


def test_bad_trajectory_exits_2():
    result = run("check", ARM, "-", "--input-format", "csv", input="time,q_x\n0,1\n")
    assert result.exit_code == 2 and "rnea: error: <stdin>: missing q for joints arm7_joint1" in result.stderr


@pytest.mark.parametrize("command", ["check", "torques"])
def test_on_a_narrow_terminal_a_table_keeps_every_cell_and_no_sparklines(monkeypatch, command):
    """(rich would squeeze the table to 80 columns, the joint column to nothing; the sparklines
    are drawn only where they fit beside it, as on 200 columns.)"""
    import io

    from rich.console import Console

    for width in (70, 200):
        screens = []

        def terminal(stderr=True, quiet=False):
            screens.append(Console(file=io.StringIO(), width=width, force_terminal=True, stderr=stderr,
                                   color_system=None))
            return screens[-1]

        for module in ("common", "check", "tables"):  # (each imported make_console by name)
            monkeypatch.setattr(f"rnea_cli.cli.{module}.make_console", terminal)
        assert run(command, ARM, ARM_CSV, *(["-o", "/dev/null"] if command == "torques" else [])).exit_code == 0
        text = "".join(screen.file.getvalue() for screen in screens)
        for k in range(1, 8):
            assert f"arm7_joint{k} " in text, text
        assert "…" not in text and ("▁" in text) == (width == 200), text
        if command == "check":
            assert "1.48353 rad/s" in text and "samples over" in text


def test_yaml_merge_keys_in_a_limits_file_with_the_mappings_own_keys_winning(tmp_path):
    text = ("arm7_joint1: &common {effort: 50, velocity: 1.0}\n"
            "arm7_joint2: {<<: *common, effort: 60}\n"
            "arm7_joint3: {<<: [{effort: 1}, {velocity: 2}], effort: 70}\n"
            "arm7_joint4: {<<: [{velocity: 0.5}, {velocity: 4, effort: 80}]}\n")  # the first of a list wins
    doc = json.loads(run("check", ARM, ARM_CSV, "--limits", limits_file(tmp_path, text), "--format", "json").stdout)
    limits = {(c["joint"], c["quantity"]): c["limit"] for c in doc["checks"]}
    assert [limits[f"arm7_joint{k}", q] for k in (1, 2, 3, 4) for q in ("effort", "velocity")] == \
        [50, 1, 60, 1, 70, 2, 80, 0.5]
    for text, message in (("{<<: {effort: 5}, effort: 6, effort: 7}", "key 'effort' appears twice in one mapping"),
                          ("{<<: [{effort: 5, effort: 6}]}", "key 'effort' appears twice in one mapping"),
                          ("{<<: {effort: 5}, <<: {velocity: 1}}", "key '<<' appears twice in one mapping"),
                          ("{<<: 5}", "'<<' merges mappings only")):
        bad = run("check", ARM, ARM_CSV, "--limits", limits_file(tmp_path, f"arm7_joint1: {text}\n"))
        assert bad.exit_code == 2 and message in bad.stderr and bad.stderr.count("\n") == 1, (text, bad.stderr)


def test_an_acceleration_limit_is_checked_and_bounds_the_speed(tmp_path):
    """`acceleration` in a limits file (rnea excite takes the same file): check holds |qdd| to it,
    scale's factor is sqrt(limit / max |qdd|) where it binds."""
    import json

    import polars as pl

    from conftest import ROBOTS

    robot, traj = ROBOTS / "planar2.urdf", ROBOTS / "planar2_traj.csv"
    peak = float(pl.read_csv(traj)["qdd_shoulder"].abs().max())
    limits = tmp_path / "l.yaml"
    limits.write_text(f"shoulder: {{acceleration: {peak / 4!r}}}\n")
    checked = run("check", robot, traj, "--limits", limits, "--format", "json")
    assert checked.exit_code == 1
    check = next(c for c in json.loads(checked.stdout)["checks"] if c["quantity"] == "acceleration")
    assert check["joint"] == "shoulder" and abs(abs(check["value"]) - peak) <= 1e-12 * peak
    scale = json.loads(run("scale", robot, traj, "--limits", limits, "--format", "json").stdout)
    assert scale["limiting"]["quantity"] == "acceleration" and abs(scale["factor"] - 0.5) <= 1e-12
    limits.write_text("shoulder: {acceleration: -1}\n")
    refused = run("check", robot, traj, "--limits", limits)
    assert refused.exit_code == 2 and "positive" in refused.stderr


def test_integers_of_thousands_of_digits_in_a_limits_file(tmp_path):
    path = tmp_path / "limits.yaml"
    path.write_text("arm7_joint1: {effort: " + "9" * 5000 + "}\n")
    one_line_error(run("check", ARM, ARM_CSV, "--limits", path), "arm7_joint1.effort: not finite")
