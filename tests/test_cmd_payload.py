"""`rnea payload`: the payload capacity of a link is where Pinocchio's torques meet a limit."""

import json

import numpy as np
import pinocchio as pin
import pytest

from arm7 import ARM, ARM_CSV, DRIVES, JOINTS, MODEL, Q, QD, QDD
from conftest import ok, one_line_error, run
from oracle import pin_model, pin_rnea


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


@pytest.mark.parametrize("option, value", [("--box", "1e300,1e300,1e300"), ("--box", "1e160,1,1"),
                                           ("--at", "1e300,0,0")])
def test_payload_sizes_beyond_1e100_are_refused(option, value):
    one_line_error(run("payload", ARM, ARM_CSV, "--link", "arm7_tool", option, value), "at most 1e100 in size")
