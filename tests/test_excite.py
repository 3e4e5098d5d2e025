"""`rnea excite`: a periodic excitation at rest at both ends, within the limits, better conditioned
than the random start it came from, the same bytes from the same seed."""

import json
import math

import numpy as np
import polars as pl
import pytest

from conftest import ARM, ROBOTS, corpus_params, need_corpus, run
from test_same_bits import REPORT
from rnea_cli.run import limits as L
from rnea_cli.run.answers import excitation
from rnea_cli.run.answers import excite as ex
from rnea_cli import load_urdf
from rnea_cli.model.tree import Coordinates


def _problem(path=ARM, period=4.0, harmonics=4, margin=0.9, acceleration=None, overrides=None, friction=True):
    coords = Coordinates(load_urdf(path))
    limits, _ = L.joint_limits(coords.model, overrides)
    return ex.Problem(coords, period, harmonics, ex.bounds(coords, limits, acceleration or {}, margin),
                      friction=friction)


def test_the_derivatives_are_exact_and_the_run_starts_and_ends_at_rest():
    problem = _problem()
    rng = np.random.default_rng(0)
    a, b = ex.at_rest(rng.standard_normal((problem.coords.n, 4)), rng.standard_normal((problem.coords.n, 4)))
    fourier = ex.Fourier(4.0, problem.limits.centre, a, b)
    t = np.linspace(0.0, 8.0, 80001)  # two periods at 10 kHz
    q, qd, qdd = fourier.motion(t)
    dt = t[1] - t[0]
    np.testing.assert_allclose((q[2:] - q[:-2]) / (2 * dt), qd[1:-1], atol=1e-5)  # O(dt^2) differences
    np.testing.assert_allclose((qd[2:] - qd[:-2]) / (2 * dt), qdd[1:-1], atol=1e-4)
    for k in (0, 40000, 80000):  # t = 0, one period, two
        assert np.abs(qd[k]).max() < 1e-12 and np.abs(qdd[k]).max() < 1e-12
        np.testing.assert_allclose(q[k], q[0], atol=1e-12)


def test_every_sample_is_within_the_limits_times_the_margin():
    overrides = {"arm7_joint2": {"effort": 30.0}}
    acceleration = {"arm7_joint4": 1.5}
    problem = _problem(margin=0.8, acceleration=acceleration, overrides=overrides)
    result = ex.excite(problem, steps=20, seed=1)
    (t, q, qd, qdd), result = ex.samples(result, problem, 8.0, 250)
    tau = problem.torques(q, qd, qdd)
    limits, _ = L.joint_limits(problem.model, overrides)
    for k, (joint, lim) in enumerate(zip(problem.coords.joints, limits)):
        middle, half = (lim.lower + lim.upper) / 2, (lim.upper - lim.lower) / 2
        assert np.abs(q[:, k] - middle).max() <= 0.8 * half * (1 + 1e-12), joint.name
        assert np.abs(qd[:, k]).max() <= 0.8 * lim.velocity * (1 + 1e-12), joint.name
        assert np.abs(tau[:, k]).max() <= 0.8 * lim.effort * (1 + 1e-12), joint.name
    assert np.abs(qdd[:, 3]).max() <= 0.8 * 1.5 * (1 + 1e-12)
    assert np.abs(tau[:, 1]).max() > 0.5 * 0.8 * 30.0  # the effort bound was reached for, not avoided


def test_the_search_lowers_the_condition_number_of_its_start():
    problem = _problem()
    start = ex.excite(problem, steps=0, seed=2)
    found = ex.excite(problem, steps=150, seed=2)
    assert found.start_condition == start.condition
    assert found.condition < start.condition / 1.1
    # the number reported is the condition number of the base regressor of the trajectory itself
    assert problem.condition(found.fourier) == found.condition


def test_the_command_writes_a_trajectory_rnea_reads_and_the_same_bytes_again(tmp_path):
    out = tmp_path / "excite.csv"
    args = ["excite", ARM, "--duration", "6", "--period", "3", "--rate", "50", "--steps", "20", "--seed", "4"]
    result = run(*args, "-o", out)
    assert result.exit_code == 0, result.stderr
    assert "condition number of the base regressor" in result.stderr
    table = pl.read_csv(out)
    assert table.height == 301 and table["time"][-1] == 6.0
    assert [c for c in table.columns if c.startswith("qdd_")] == [f"qdd_arm7_joint{k}" for k in range(1, 8)]
    first = out.read_bytes()
    assert run(*args, "-o", out).exit_code == 0 and out.read_bytes() == first
    checked = run("check", ARM, out)
    assert checked.exit_code == 0, checked.stdout + checked.stderr
    assert run(*args, "-o", tmp_path / "excite.parquet").exit_code == 0
    assert run("torques", ARM, tmp_path / "excite.parquet", "-o", tmp_path / "tau.csv").exit_code == 0


@pytest.mark.parametrize("args, message", [
    (["--duration", "10", "--period", "3"], "does not divide the duration"),
    (["--duration", "10", "--margin", "1.5"], "above 1"),
    (["--duration", "10", "--harmonics", "1"], "--harmonics"),
    (["--duration", "-1"], "--duration"),
    (["--duration", "10", "--rate", "nan"], "--rate"),
])
def test_bad_options_are_one_line_and_exit_2(args, message, tmp_path):
    out = tmp_path / "x.csv"
    args = ["excite", ARM, *args] + ([] if "--rate" in args else ["--rate", "10"])
    result = run(*args, "-o", out)
    assert result.exit_code == 2
    assert message in result.stderr
    assert not out.exists()


def test_a_limits_file_naming_an_unknown_joint_or_a_bad_acceleration_is_refused(tmp_path):
    for text, message in (("nope: {acceleration: 1}\n", "no joint 'nope' among the robot's joints"),
                          ("arm7_joint1: {acceleration: -1}\n", "positive")):
        limits = tmp_path / "limits.yaml"
        limits.write_text(text)
        result = run("excite", ARM, "--duration", "4", "--rate", "10", "--limits", limits, "-o", tmp_path / "x.csv")
        assert result.exit_code == 2 and message in result.stderr, result.stderr
        assert result.stderr.count("\n") == 1
    assert math.isfinite(ex.excite(_problem(ROBOTS / "planar2.urdf", harmonics=3), steps=5).condition)


MIMIC = """<robot name="mim">
  <link name="base"/>
  <link name="a"><inertial><mass value="1"/><origin xyz="0.1 0 0"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="b"><inertial><mass value="0.5"/><origin xyz="0.1 0 0"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="lead" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="100" velocity="1"/></joint>
  <joint name="fol" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0.2 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-0.5" upper="0.5" effort="100" velocity="1"/><mimic joint="lead" multiplier="3" offset="0.2"/></joint>
</robot>"""


@pytest.mark.parametrize("robot, args", [
    (ARM, ["--duration", "10", "--rate", "100"]),  # the docs' example
    (ROBOTS / "planar2.urdf", ["--duration", "3", "--rate", "22", "--period", "0.3", "--harmonics", "3"]),  # 6.6 a period
    (ROBOTS / "planar2.urdf", ["--duration", "4", "--rate", "12.25", "--period", "1"]),
    ("mimic", ["--duration", "2", "--rate", "50"]),  # a follower bounds its leader
])
def test_rnea_check_at_the_same_margin_passes_every_sample_written(robot, args, tmp_path):
    if robot == "mimic":
        robot = tmp_path / "mim.urdf"
        robot.write_text(MIMIC)
    out = tmp_path / "e.csv"
    result = run("excite", robot, *args, "--steps", "10", "-o", out)
    assert result.exit_code == 0, result.stderr
    checked = run("check", robot, out, "--margin", "0.9")
    assert checked.exit_code == 0, checked.stdout
    table = pl.read_csv(out)
    assert table["time"][-1] == float(args[args.index("--duration") + 1])  # the last sample at the end


def test_the_robot_and_the_limits_are_never_its_output(tmp_path):
    robot, limits = tmp_path / "p.urdf", tmp_path / "l.yaml"
    robot.write_bytes((ROBOTS / "planar2.urdf").read_bytes())
    limits.write_text("shoulder: {acceleration: 5}\n")
    (tmp_path / "link").symlink_to(robot)
    for output in (robot, tmp_path / "link", limits):
        result = run("excite", robot, "--duration", "1", "--rate", "20", "--limits", limits, "-o", output)
        assert result.exit_code == 2 and "input" in result.stderr, result.stderr
    assert robot.read_bytes() == (ROBOTS / "planar2.urdf").read_bytes()


@pytest.mark.parametrize("args, message", [
    (["--duration", "1.05", "--rate", "10"], "whole number of samples"),
    (["--duration", "1", "--rate", "2.5"], "whole number of samples"),
    (["--duration", "1", "--rate", "9", "--harmonics", "5"], "harmonic"),
])
def test_a_run_that_would_not_end_at_rest_or_is_undersampled_is_refused(args, message, tmp_path):
    result = run("excite", ROBOTS / "planar2.urdf", *args, "-o", tmp_path / "x.csv")
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert "None" not in result.stderr


def test_an_rms_limit_is_refused_not_ignored(tmp_path):
    limits = tmp_path / "l.yaml"
    limits.write_text("shoulder: {rms_effort: 0.5}\n")
    result = run("excite", ROBOTS / "planar2.urdf", "--duration", "2", "--rate", "50", "--limits", limits,
                 "-o", tmp_path / "x.csv")
    assert result.exit_code == 2 and "rms_effort" in result.stderr and "unknown key" in result.stderr


def test_a_follower_held_at_its_offset_bounds_nothing(tmp_path):
    """A mimic multiplier of 0 holds the follower at its offset (it divided by zero: exit 70)."""
    robot = tmp_path / "m0.urdf"
    robot.write_text(MIMIC.replace('multiplier="3" offset="0.2"', 'multiplier="0" offset="0.2"'))
    out = tmp_path / "e.csv"
    result = run("excite", robot, "--duration", "2", "--rate", "50", "--steps", "5", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert run("check", robot, out, "--margin", "0.9").exit_code == 0
    robot.write_text(MIMIC.replace('multiplier="3" offset="0.2"', 'multiplier="0" offset="0.9"'))
    result = run("excite", robot, "--duration", "2", "--rate", "50", "-o", out)
    assert result.exit_code == 2 and "outside its range" in result.stderr, result.stderr


def _ratio(path, seeds=range(1, 10), friction=True):
    """cond(random) / cond(excite) at the defaults (10 s at 100 Hz, 5 harmonics, margin 0.9), on the
    samples written: the median over seeds of random Fourier series of the same harmonics and period,
    each joint filled to the same bounds (`random_fourier`, what a user would otherwise run)."""
    problem = _problem(path, period=10.0, harmonics=5, friction=friction)
    (t, *_), found = ex.samples(ex.excite(problem), problem, 10.0, 100)
    drawn = [ex.random_fourier(problem, np.random.default_rng(seed)) for seed in seeds]
    randoms = [problem.condition(problem.feasible(f, t), t) for f in drawn if f is not None]
    return float(np.median(randoms)) / problem.condition(found.fourier, t)


@pytest.mark.parametrize("path, better", [pytest.param(ARM, 2.0, id="arm7")] + [
    pytest.param(p.values[0], {"ur5": 1.9, "double_pendulum": 1.7}[p.id], id=p.id)
    for p in corpus_params(["ur5", "double_pendulum"])])
def test_the_search_beats_random_fourier_series_of_the_same_length(path, better):
    """Measured (the trajectory is the same bits on every machine, so no flake): arm7 2.11x, the UR5
    2.48x, the double pendulum 1.80x. The issue asks 3x: not reached (docs/identify.md says why)."""
    if path is None:
        need_corpus(path)
    assert _ratio(path) >= better


@pytest.mark.parametrize("path", [pytest.param(ARM, id="arm7")] + corpus_params(["ur5", "iiwa14", "double_pendulum"]))
def test_without_friction_the_search_beats_random_fourier_series_3x(path):
    """The inertial parameters alone (`--no-friction`, random series conditioned likewise): the
    issue's 3x holds. Measured: arm7 3.92x, the UR5 4.94x, the iiwa14 3.53x, the double pendulum
    6.30x (the trajectory is the same bits on every machine; only LAPACK's condition numbers may
    differ, in their last bits). With friction the viscous-Coulomb pairs floor it (docs/identify.md)."""
    if path is None:
        need_corpus(path)
    assert _ratio(path, friction=False) >= 3.0


CHILD = r"""
import hashlib, json, sys
import numpy as np, threadpoolctl
from rnea_cli import load_urdf
from rnea_cli.model.tree import Coordinates
from rnea_cli.run import limits as L
from rnea_cli.run.answers import excite as ex
coords = Coordinates(load_urdf(sys.argv[2]))
limits, _ = L.joint_limits(coords.model, None)
problem = ex.Problem(coords, 4.0, 4, ex.bounds(coords, limits, {}, 0.9))
(t, q, qd, qdd), found = ex.samples(ex.excite(problem, steps=6, starts=3, seed=5), problem, 4.0, 50)
digest = hashlib.sha256(b"".join(np.ascontiguousarray(x).tobytes() for x in (t, q, qd, qdd))).hexdigest()
""" + REPORT + """print(json.dumps({"blas": blas, "simd": simd, "digest": digest}))
"""


def test_the_trajectory_is_the_same_bits_under_every_blas_kernel_and_simd_level(tmp_path):
    """The search compares and steps with element-wise arithmetic only: another CPU's BLAS or SIMD
    kernels (run here in child processes) give the same trajectory, bit for bit."""
    from test_same_bits import in_every_variant

    digests = {json.dumps(extra): r["digest"] for extra, r in in_every_variant(CHILD, [ARM], tmp_path)}
    assert len(set(digests.values())) == 1, digests


def test_the_element_wise_linear_algebra_agrees_with_lapack():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((200, 12)) * np.logspace(0, 3, 12)  # columns of unlike scale, as W's
    G = X.T @ X
    L_ = excitation._cholesky(G)
    np.testing.assert_allclose(L_, np.linalg.cholesky(G), rtol=1e-10, atol=1e-10 * np.abs(L_).max())
    np.testing.assert_allclose(ex.fl.solve_lower(L_, np.eye(12)) @ L_, np.eye(12), atol=1e-12)
    np.testing.assert_allclose(ex.fl.matmul(X.T, X), G, rtol=1e-13)
    assert excitation._cholesky(G - 2 * np.linalg.eigvalsh(G)[0] * np.eye(12)) is None  # not positive definite


def test_the_spread_brackets_the_condition_number_and_its_gradient_is_its_derivative():
    """spread^(1/2k) within [cond, rank^(1/k) cond] (the search's stand-in for cond); the gradient
    the search steps with is d log spread / dx, checked by central differences."""
    problem = _problem(harmonics=3)
    fourier = ex.random_fourier(problem, np.random.default_rng(6))
    root = problem.spread(fourier) ** (1 / (2 * excitation.POWER))
    cond = problem.condition(fourier)
    assert root < cond * problem.base.rank ** (1 / excitation.POWER)
    # (the Coulomb columns are smoothed in the spread: the bracket holds for cond without friction)
    plain = ex.Problem(problem.coords, problem.period, 3, problem.limits, friction=False)
    assert plain.condition(fourier) <= plain.spread(fourier) ** (1 / (2 * excitation.POWER)) * (1 + 1e-12)
    x = ex._free(fourier)
    value, gradient, _ = problem.descent(x)
    for k in (0, 5, len(x) - 1):
        h = 1e-6 * max(1.0, abs(x[k]))
        up, down = x.copy(), x.copy()
        up[k] += h
        down[k] -= h
        numeric = (math.log(problem.descent(up)[0]) - math.log(problem.descent(down)[0])) / (2 * h)
        assert gradient[k] == pytest.approx(numeric, rel=1e-4, abs=1e-6 * np.abs(gradient).max()), k
