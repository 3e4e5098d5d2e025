"""The bundled examples: robots/make_examples.py makes the files shipped, byte for byte."""

import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np

from conftest import ROBOTS

MADE = re.compile(r"^    ((?:arm7|gripper2|rover)\w*(?:\.\w+|/))", re.M)  # the files make_examples' docstring lists


def test_make_examples_makes_the_files_shipped_byte_for_byte(tmp_path):
    script = ROBOTS / "make_examples.py"
    subprocess.run([sys.executable, str(script), "--out", str(tmp_path)], check=True, timeout=600)
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    listed = {name.rstrip("/") for name in MADE.findall(script.read_text())}
    assert {p.parts[0] for p in made} == listed
    for path in made:
        assert (tmp_path / path).read_bytes() == (ROBOTS / path).read_bytes(), \
            f"robots/{path} is not what make_examples.py makes: rerun it"


def _inertials(path):
    """{link: (mass, com (3,), rotational inertia (3, 3))} and {joint: (damping, friction)} of a URDF."""
    root = ET.parse(path).getroot()
    links = {}
    for link in root.iter("link"):
        inertial = link.find("inertial")
        v = {k: float(x) for k, x in inertial.find("inertia").attrib.items()}
        inertia = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]],
                            [v["ixz"], v["iyz"], v["izz"]]])
        com = np.array([float(x) for x in inertial.find("origin").get("xyz").split()])
        links[link.get("name")] = (float(inertial.find("mass").get("value")), com, inertia)
    joints = {j.get("name"): (float(j.find("dynamics").get("damping")), float(j.find("dynamics").get("friction")))
              for j in root.iter("joint") if j.find("dynamics") is not None}
    return links, joints


def _off_by_10_to_30_percent(ratio):
    return 0.1 <= abs(ratio - 1) <= 0.3 + 1e-12


def test_the_arm_as_built_is_arm7_off_by_10_to_30_percent_and_physically_consistent():
    design, design_joints = _inertials(ROBOTS / "arm7.urdf")
    built, built_joints = _inertials(ROBOTS / "arm7_true.urdf")
    assert built.keys() == design.keys() and built_joints.keys() == design_joints.keys() and len(built_joints) == 7
    for name, (m, com, inertia) in design.items():
        m2, com2, inertia2 = built[name]
        assert _off_by_10_to_30_percent(m2 / m), name
        assert 0.1 <= np.linalg.norm(com2 - com) / np.linalg.norm(com) <= 0.3 + 1e-12, name
        second, second2 = (np.trace(i) / 2 * np.eye(3) - i for i in (inertia, inertia2))  # arm7's are diagonal
        assert all(_off_by_10_to_30_percent(r) for r in np.diag(second2) / np.diag(second)), name
        assert np.linalg.eigvalsh(second2).min() > 0, name  # the triangle inequality, strictly
    for name, (damping, friction) in design_joints.items():
        assert _off_by_10_to_30_percent(built_joints[name][0] / damping), name
        assert _off_by_10_to_30_percent(built_joints[name][1] / friction), name
