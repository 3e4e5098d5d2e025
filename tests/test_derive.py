"""Derivation: finite differences on non-uniform grids, streamed across blocks exactly; derived
velocities, degrees and --dt."""

import importlib

import numpy as np
import pytest

from conftest import ROBOTS, child, read_csv, run
from rnea_cli import load_urdf, rnea
from rnea_cli.trajectory.derive import derivative
from rnea_cli.trajectory.open import open_trajectory

reader = importlib.import_module("rnea_cli.trajectory.sources.csvfile")
PLANAR = ROBOTS / "planar2.urdf"
PLANAR_CSV = str(ROBOTS / "planar2_traj.csv")


def nonuniform_grid(n, seed=0):
    rng = np.random.default_rng(seed)
    return np.concatenate([[0.0], np.cumsum(rng.uniform(0.5, 1.5, n - 1))]) / n


def test_derivative_is_exact_on_quadratics_even_on_a_nonuniform_grid():
    t = nonuniform_grid(30)
    f = np.column_stack([3 - 2 * t + 5 * t**2, 0.5 * t**2])
    np.testing.assert_allclose(derivative(t, f), np.column_stack([-2 + 10 * t, t]), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(derivative(t, derivative(t, f)), np.tile([10.0, 1.0], (30, 1)), atol=1e-7)


def test_derivative_is_second_order():
    """On sin(3t), halving the steps of a non-uniform grid divides the error by about 4."""
    errors = []
    for n in (50, 100, 200, 400):
        t = nonuniform_grid(n, seed=1)
        t = t / t[-1]
        errors.append(np.abs(derivative(t, np.sin(3 * t)) - 3 * np.cos(3 * t)).max())
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert (orders > 1.7).all(), orders


def polynomial_csv(t, model):
    """A cubic trajectory, and its exact derivatives."""
    coeffs = np.random.default_rng(2).normal(size=(4, model.n))
    T = t[:, None]
    q = coeffs[0] + coeffs[1] * T + coeffs[2] * T**2 + coeffs[3] * T**3
    qd = coeffs[1] + 2 * coeffs[2] * T + 3 * coeffs[3] * T**2
    qdd = 2 * coeffs[2] + 6 * coeffs[3] * T
    lines = ["time," + ",".join(f"q_{j}" for j in model.joint_names)]
    lines += [",".join(repr(float(x)) for x in [t[k], *q[k]]) for k in range(len(t))]
    return "\n".join(lines) + "\n", q, qd, qdd


def read_all(path, model, **kw):
    traj = open_trajectory(path, model, **kw)
    chunks = list(traj.chunks)
    return traj, {x: np.concatenate([getattr(c, x) for c in chunks]) for x in ("time", "q", "qd", "qdd")}, chunks


def test_streamed_differences_equal_whole_file_differences(tmp_path, monkeypatch):
    """Blocks of a few hundred bytes give exactly what one block gives, and converge on a cubic."""
    model = load_urdf(ROBOTS / "planar2.urdf")
    t = nonuniform_grid(400, seed=3)
    text, q, qd, qdd = polynomial_csv(t, model)
    (tmp_path / "p.csv").write_text(text)
    _, whole, chunks = read_all(tmp_path / "p.csv", model)
    assert len(chunks) == 2  # one block; the last two samples wait for the end of the input
    monkeypatch.setattr(reader, "BLOCK_BYTES", 300)
    traj, streamed, chunks = read_all(tmp_path / "p.csv", model)
    assert len(chunks) > 20 and traj.derived == ("qd", "qdd")
    assert [c.start for c in chunks] == list(np.cumsum([0] + [len(c) for c in chunks[:-1]]))
    for x in ("time", "q", "qd", "qdd"):
        np.testing.assert_array_equal(streamed[x], whole[x])
    np.testing.assert_array_equal(whole["q"], q)
    h = np.diff(t).max()
    assert np.abs(whole["qd"] - qd).max() < 50 * h**2 * np.abs(q).max()
    assert np.abs(whole["qdd"][2:-2] - qdd[2:-2]).max() < 50 * h * np.abs(q).max()


def test_qdd_derived_from_given_qd(tmp_path):
    model = load_urdf(ROBOTS / "planar2.urdf")
    t = np.linspace(0, 1, 21)
    lines = ["time,q_shoulder,q_elbow,qd_shoulder,qd_elbow"]
    lines += [f"{x!r},0,0,{2 * x!r},{x * x!r}" for x in map(float, t)]
    (tmp_path / "v.csv").write_text("\n".join(lines) + "\n")
    traj, data, _ = read_all(tmp_path / "v.csv", model)
    assert traj.derived == ("qdd",)
    np.testing.assert_allclose(data["qdd"], np.column_stack([np.full(21, 2.0), 2 * t]), atol=1e-9)


def test_a_given_rates_time_may_repeat_but_never_go_back(tmp_path):
    """With qd and qdd in the file, time is not differentiated, yet peaks' times and thermal windows
    read it: it is checked across blocks too (a step back just after the first block of 8 MB)."""
    import polars as pl

    from conftest import run
    from rnea_cli.trajectory.sources.csvfile import BLOCK_BYTES

    frame = pl.read_csv(ROBOTS / "arm7_traj.csv")
    assert any(c.startswith("qdd_") for c in frame.columns)
    rows = frame.height * (BLOCK_BYTES // len(frame.write_csv()) + 2)
    big = pl.concat([frame] * (rows // frame.height)).with_columns(pl.Series("time", np.arange(rows) * 1e-3))
    body = big.write_csv().encode().split(b"\n", 1)[1]
    assert len(body) > BLOCK_BYTES + 10_000
    cut = body[:BLOCK_BYTES].count(b"\n") + (body[BLOCK_BYTES - 1] != ord("\n"))  # the second block's first row
    for label, k, at in (("repeat", 4, None), ("back", 4, 3), ("back_across_blocks", cut, cut - 1)):
        t = big["time"].to_numpy().copy()
        t[k] = t[at] - 1e-4 if at is not None else t[k - 1]
        path = tmp_path / f"{label}.csv"
        big.with_columns(pl.Series("time", t)).write_csv(path)
        result = run("torques", ROBOTS / "arm7.urdf", path, "-q")
        if at is None:
            assert result.exit_code == 0, result.stderr
        else:
            assert result.exit_code == 2 and result.stderr == (
                f"rnea: error: {path}: line {k + 2}: time {float(t[k])!r} is before the previous time {float(t[at])!r} "
                "(time may repeat but not go back)\n"), result.stderr


@pytest.mark.parametrize("times", ["1e308,1.7e308,1.75e308", "-1e308,0,1e308", "0,1e17,1.7e18"])
def test_a_time_beyond_1e18_seconds_is_one_line_naming_it(tmp_path, times):
    """(Spans of such times overflow: a run 'over inf s', a plot that cannot place its ticks.)"""
    from conftest import run

    rows = "".join(f"{t},0.1,0.2,0.3,0.4,0.5,0.6\n" for t in times.split(","))
    path = tmp_path / "t.csv"
    path.write_text("time,q_shoulder,q_elbow,qd_shoulder,qd_elbow,qdd_shoulder,qdd_elbow\n" + rows)
    bad = next(k for k, t in enumerate(times.split(",")) if abs(float(t)) > 1e18)
    for command in ("torques", "check"):
        result = run(command, ROBOTS / "planar2.urdf", path, "-q")
        assert result.exit_code == 2 and result.stderr == (
            f"rnea: error: {path}: line {bad + 2}: time {float(times.split(',')[bad])!r} s is more than 1e+18 s from "
            "0 (another unit? see --time-unit)\n"), result.stderr
    no_time = tmp_path / "q.csv"
    no_time.write_text("q_shoulder,q_elbow\n" + "0.1,0.2\n" * 13)
    result = run("torques", ROBOTS / "planar2.urdf", no_time, "--dt", "1e17", "-q")
    assert result.exit_code == 2 and result.stderr.endswith("s is more than 1e+18 s from 0 (--dt)\n"), result.stderr

def test_tiny_time_steps_give_one_line_not_numpy_warnings(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("time,q_shoulder,q_elbow\n0,0,0\n5e-324,1,1\n1e-323,2,2\n1.5e-323,3,3\n")
    code, err, _ = child("from rnea_cli.cli import run\nimport sys\nsys.argv = ['rnea', 'torques', "
                         f"{str(PLANAR)!r}, {str(path)!r}]\nrun()")
    assert code == 2 and err.count("\n") == 1 and "derived here is not finite: time steps of" in err, err

def write_q_only(path, t, q, names, degrees=False, with_time=True):
    q = np.degrees(q) if degrees else q
    header = (["time"] if with_time else []) + [f"q_{n}" for n in names]
    rows = [([repr(float(t[k]))] if with_time else []) + [repr(float(x)) for x in q[k]] for k in range(len(q))]
    path.write_text("\n".join(",".join(r) for r in [header] + rows) + "\n")


def test_derived_velocities_degrees_and_dt(tmp_path):
    """q(t) quadratic: finite differences are exact, so torques equal those of the exact derivatives."""
    model = load_urdf(PLANAR)
    t = np.linspace(0, 1, 41)
    a, b, c = np.array([0.3, -0.2]), np.array([1.0, 0.5]), np.array([-2.0, 3.0])
    q = a + b * t[:, None] + c * t[:, None] ** 2
    qd, qdd = b + 2 * c * t[:, None], np.broadcast_to(2 * c, q.shape)
    expected = rnea(model, q, qd, qdd)
    write_q_only(tmp_path / "q.csv", t, q, model.joint_names)
    result = run("torques", PLANAR, str(tmp_path / "q.csv"))
    assert "note: qd and qdd derived from q and time by second-order finite differences" in result.stderr
    np.testing.assert_allclose(read_csv(result.stdout)[1][:, 1:], expected, rtol=1e-9, atol=1e-9)
    write_q_only(tmp_path / "deg.csv", t, q, model.joint_names, degrees=True)
    result = run("torques", PLANAR, str(tmp_path / "deg.csv"), "--degrees", "-q")
    np.testing.assert_allclose(read_csv(result.stdout)[1][:, 1:], expected, rtol=1e-9, atol=1e-9)
    write_q_only(tmp_path / "notime.csv", t, q, model.joint_names, with_time=False)
    result = run("torques", PLANAR, str(tmp_path / "notime.csv"), "--dt", "0.025", "-q")
    header, data = read_csv(result.stdout)
    assert header[0] == "time"
    np.testing.assert_allclose(data[:, 0], t, rtol=0, atol=1e-15)
    np.testing.assert_allclose(data[:, 1:], expected, rtol=1e-9, atol=1e-9)


def test_dt_with_a_time_column_is_an_error():
    result = run("torques", PLANAR, PLANAR_CSV, "--dt", "0.5")
    assert result.exit_code == 2 and "--dt is for a trajectory without a time column" in result.stderr
