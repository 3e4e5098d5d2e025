"""The bundled examples: robots/make_examples.py makes the files shipped, byte for byte, and the whole
identification loop of docs/identify.md on them does what the page says, checked against the arm
as built (robots/arm7_true.urdf), never against our own earlier output."""

import json
import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from conftest import ROBOTS, ROOT
from test_same_bits import REPORT
from rnea_cli.cli import main

PAGE = ROOT / "docs" / "identify.md"
SECTION = re.search(r"^## The whole loop on the bundled arm\n(.*?)^## ", PAGE.read_text(), re.S | re.M).group(1)
MADE = re.compile(r"^    ((?:arm7|gripper2|rover)\w*(?:\.\w+|/))", re.M)  # the files make_examples' docstring lists


def test_make_examples_makes_the_files_shipped(tmp_path):
    """Byte for byte where the making is rnea's alone. The fixtures' motions and sensor readings are
    made with numpy's sin (a SIMD kernel whose last bits differ between AVX2, AVX-512 and ARM) and
    Pinocchio's RNEA (Eigen's kernels): on another CPU a table may differ in its last bits, so a
    table that is not the same bytes must have the same header and every number within 1e-12 of the
    column's largest. (rnea's own same-bits promises are tested in test_same_bits.py.)"""
    script = ROBOTS / "make_examples.py"
    subprocess.run([sys.executable, str(script), "--out", str(tmp_path)], check=True, timeout=600)
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    listed = {name.rstrip("/") for name in MADE.findall(script.read_text())}
    assert {p.parts[0] for p in made} == listed
    for path in made:
        ours, shipped = (tmp_path / path).read_bytes(), (ROBOTS / path).read_bytes()
        if ours == shipped:
            continue
        assert path.suffix in (".csv", ".txt"), f"robots/{path} is not what make_examples.py makes: rerun it"
        a, b = (pl.read_csv(x, separator=" " if path.suffix == ".txt" else ",") for x in (ours, shipped))
        assert a.columns == b.columns and a.shape == b.shape, f"robots/{path}: rerun make_examples.py"
        x, y = a.to_numpy().astype(float), b.to_numpy().astype(float)
        assert np.all(np.abs(x - y) <= 1e-12 * np.abs(y).max(axis=0)), f"robots/{path}: rerun make_examples.py"


PERTURBED = r"""
import hashlib, json, sys
import numpy as np, threadpoolctl
sys.path.insert(0, sys.argv[2])
from make_examples import perturbed
text = perturbed(sys.argv[3], np.random.default_rng(25))
""" + REPORT + """print(json.dumps({"blas": blas, "simd": simd, "digest": hashlib.sha256(text.encode()).hexdigest()}))
"""


def test_the_arm_as_built_is_the_same_text_under_every_blas_kernel_and_simd_level(tmp_path):
    """robots/arm7_true.urdf is compared byte for byte: what makes it must not round by the CPU (an
    Intel AVX-512 BLAS kernel's norm once put one of its COMs an ulp off the shipped one)."""
    from test_same_bits import in_every_variant

    results = in_every_variant(PERTURBED, [ROBOTS, ROBOTS / "arm7.urdf"], tmp_path)
    assert len({r["digest"] for _, r in results}) == 1, results


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


def _commands():
    return [shlex.split(line.strip())[1:] for line in SECTION.splitlines() if line.startswith("    rnea ")]


def _run(args, tmp_path):
    """An example's command run, its stdout; its output (-o) and the /tmp/ files it names in tmp_path."""
    args = [str(tmp_path / os.path.basename(a)) if a.startswith("/tmp/") or before == "-o" else a
            for before, a in zip([None, *args], args)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, (args, result.stderr)
    return result.stdout


def test_the_measured_run_is_the_pages_excitation_with_encoder_noise(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    (excite,) = [c for c in _commands() if c[0] == "excite"]
    _run(excite, tmp_path)
    planned, measured = pl.read_csv(tmp_path / "excite.csv"), pl.read_csv(ROBOTS / "arm7_real_excite.csv")
    assert planned["time"].to_list() == measured["time"].to_list(), "rerun robots/make_examples.py"
    q = [c for c in planned.columns if c.startswith("q_")]
    noise = (measured.select(q).to_numpy() - planned.select(q).to_numpy()).ravel()
    assert 0.95e-4 < noise.std() < 1.05e-4 and abs(noise.mean()) < 1e-5 and np.abs(noise).max() < 6e-4


def _rms(args, tmp_path):
    """{joint: RMS residual} of `rnea compare ARGS --format json`."""
    return {j["joint"]: j["rms"] for j in json.loads(_run([*args, "--format", "json"], tmp_path))["joints"]}


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    """The page's commands run in its order; the RMS residuals of each compare, by its robot."""
    tmp_path = tmp_path_factory.mktemp("loop")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        compares = {}
        for args in _commands():
            if args[0] == "identify":
                text = _run(args, tmp_path).splitlines()
                report = json.loads(_run([*args, "--format", "json"], tmp_path))
            elif args[0] == "compare":
                robot = args[1].replace("/tmp/", "")
                compares[robot if "--smooth" in args else f"{robot} without --smooth"] = _rms(args, tmp_path)
        identified = tmp_path / "arm7_identified.urdf"
    return report, compares, identified, text


def test_the_loop_validates_on_the_held_out_run_what_compare_says(loop):
    report, compares, _, _ = loop
    (check,) = report["validation"]
    assert check["trajectory"] == "robots/arm7_real_traj.csv"
    joints = [j["joint"] for j in report["joints"]]
    np.testing.assert_allclose(check["rms_before"], [compares["robots/arm7.urdf"][j] for j in joints], rtol=1e-9)
    np.testing.assert_allclose(check["rms_after"], [compares["arm7_identified.urdf"][j] for j in joints], rtol=1e-9)


def test_the_identified_arm_comes_down_to_the_floor_of_the_arm_as_built(loop):
    report, compares, identified, _ = loop
    before, after, floor = (compares[k] for k in ("robots/arm7.urdf", "arm7_identified.urdf", "robots/arm7_true.urdf"))
    for joint in before:
        assert after[joint] < before[joint] / 2, joint
        assert after[joint] < 1.03 * floor[joint], joint
    assert report["consistent"]
    _, true_joints = _inertials(ROBOTS / "arm7_true.urdf")
    _, found = _inertials(identified)
    for joint, (_, coulomb) in true_joints.items():
        assert abs(found[joint][1] / coulomb - 1) < 0.02, joint
    rough = compares["robots/arm7_true.urdf without --smooth"]
    for joint in list(before)[:4]:
        assert rough[joint] > before[joint], joint


NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def test_the_pages_numbers_are_what_the_loop_prints(loop):
    """The page quotes the shipped files' numbers, in the report's excerpt and the table: stale ones
    (after a change to `rnea excite`, say) fail here, to 10 %; then rerun make_examples.py and the
    page's commands, and update the page. This checks the page, not the physics (the test above does)."""
    _, compares, _, text = loop
    shown = re.search(r"^```text\n(.*?)^```", SECTION, re.S | re.M).group(1).splitlines()
    printed = {NUMBER.sub("#", line): line for line in text}
    for line in shown:
        if line.strip() != "…":
            twin = printed[NUMBER.sub("#", line)]
            np.testing.assert_allclose([float(x) for x in NUMBER.findall(line)],
                                       [float(x) for x in NUMBER.findall(twin)], rtol=0.1, err_msg=line)
    rows = [line.strip("|").split("|") for line in SECTION.splitlines() if line.startswith("| arm7_joint")]
    runs = pl.read_csv(ROBOTS / "arm7_real_traj.csv")
    assert len(rows) == 7
    for joint, *cells in rows:
        joint = joint.strip()
        sigma = 0.01 * np.sqrt((runs[f"effort_{joint}"].to_numpy() ** 2).mean())
        actual = [compares[k][joint] for k in ("robots/arm7.urdf", "arm7_identified.urdf", "robots/arm7_true.urdf")]
        np.testing.assert_allclose([float(c) for c in cells], [*actual, sigma], rtol=0.1, err_msg=joint)


def test_the_pages_identify_runs_example_is_the_command(loop, monkeypatch):
    """docs/identify.md's third Python block, the library's identify_runs: the held-out RMS the loop's
    `rnea identify` printed, bit for bit."""
    report = loop[0]
    page = (ROOT / "docs" / "identify.md").read_text()
    code = re.findall(r"```python\n(.*?)```", page, re.S)[2]
    monkeypatch.chdir(ROOT)
    scope = {}
    exec(code, scope)
    assert scope["found"].validation[0]["rms_after"] == report["validation"][0]["rms_after"]
    assert scope["found"].fit.beta.tolist() == [b["value"] for b in report["base_parameters"]]


def test_the_pages_library_examples_run_and_fit_what_they_are_given(monkeypatch):
    """docs/identify.md's two Python blocks, the regressor's and the estimation chunk by chunk, run
    as written; given the efforts of the URDF's own parameters and friction (tau = Y pi + friction)
    the fit reproduces them and the URDF it writes reads back."""
    from rnea_cli import load_urdf

    page = (ROOT / "docs" / "identify.md").read_text()
    first, second = re.findall(r"```python\n(.*?)```", page, re.S)[:2]
    monkeypatch.chdir(ROOT)
    scope = {}
    exec(first, scope)
    model, Y, base = scope["model"], scope["Y"], scope["base"]
    assert Y.shape == (100, 7, 70) and base.rank > 0
    theta = base.layout.parameters() + np.concatenate([np.zeros(70), np.tile([0.5, 1.0], 7)])
    scope["effort"] = base.layout.regressor(scope["q"], scope["qd"], scope["qdd"]) @ theta
    exec(second, scope)
    fit = scope["fit"]
    predicted = base.layout.regressor(scope["q"], scope["qd"], scope["qdd"]) @ fit.theta
    assert np.abs(predicted - scope["effort"]).max() <= 1e-8 * np.abs(scope["effort"]).max()
    assert load_urdf(scope["urdf_bytes"].decode() if isinstance(scope["urdf_bytes"], bytes)
                     else scope["urdf_bytes"]).n == model.n
