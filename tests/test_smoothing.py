"""Noisy measured positions: local cubic fits (--smooth) and resampling (--resample)."""

import os

import numpy as np
import polars as pl
import pytest

from conftest import ROBOTS, columns as read_csv, run, torques
from rnea_cli import load_urdf


ARM = ROBOTS / "arm7.urdf"
MODEL = load_urdf(ARM)
JOINTS = MODEL.joint_names


def noisy_motion(rate=500.0, duration=4.0, jitter=0.1, noise=1e-4, seed=0):
    """arm7's smooth example motion sampled at `rate` with stamp jitter and noise on q:
    (t, q measured, q, qd, qdd true)."""
    rng = np.random.default_rng(seed)
    n = int(duration * rate)
    t = np.arange(n) / rate + rng.uniform(-jitter, jitter, n) / rate
    a = np.array([0.7, 0.5, 0.5, 0.5, 0.6, 0.6, 0.5])
    w = np.pi * np.array([0.4, 0.5, 0.6, 0.5, 0.75, 0.75, 0.8])
    phase, offset = np.array([0, 0.5 * np.pi, 0.3, -0.5, 0, 1, 0]), np.array([0, 0.4, 0, -1.2, 0, 0.5, 0])
    arg = np.outer(t, w) + phase
    q, qd, qdd = a * np.sin(arg) + offset, a * w * np.cos(arg), -a * w ** 2 * np.sin(arg)
    return t, q + rng.normal(0, noise, q.shape), q, qd, qdd


def write_q(path, t, q):
    cols = {"time": t, **{f"q_{j}": q[:, i] for i, j in enumerate(JOINTS)}}
    pl.DataFrame(cols).write_csv(path)
    return path


def test_smoothing_recovers_the_torques_of_a_noisy_measurement(tmp_path):
    """The README's numbers: 500 Hz, ±10 % stamp jitter, 1e-4 rad of noise on q. Plain
    differences are off by more than 100 % RMS; --smooth 0.05 is within 3 %."""
    from rnea_cli import rnea

    t, measured, q, qd, qdd = noisy_motion()
    true = rnea(MODEL, q, qd, qdd)
    path = write_q(tmp_path / "noisy.csv", t, measured)

    def error(*options):
        out = read_csv(torques(ARM, path, *options))
        tau = np.column_stack([out[f"tau_{j}"] for j in JOINTS])
        return np.sqrt(np.mean((tau - true) ** 2)) / np.sqrt(np.mean(true ** 2))

    assert error() > 1.0
    assert error("--smooth", "0.05") < 0.03


@pytest.mark.parametrize("block_bytes", [None, 700])
def test_resampling_interpolates_every_column_linearly(tmp_path, monkeypatch, block_bytes):
    """On jittered stamps, --resample 150 gives Pinocchio's torques of numpy's np.interp of the
    given q, qd, qdd on t0 + k/150, in one block or many."""
    from oracle import pin_model, pin_rnea

    reader = __import__("importlib").import_module("rnea_cli.trajectory.sources.csvfile")
    rng = np.random.default_rng(5)
    t = np.arange(120) / 100 + rng.uniform(-0.003, 0.003, 120)
    q, qd, qdd = (rng.uniform(-1, 1, (120, MODEL.n)) for _ in range(3))
    cols = {"time": t, **{f"{p}_{j}": x[:, i] for p, x in (("q", q), ("qd", qd), ("qdd", qdd))
                          for i, j in enumerate(JOINTS)}}
    path = tmp_path / "jittered.csv"
    pl.DataFrame(cols).write_csv(path)
    if block_bytes:
        monkeypatch.setattr(reader, "BLOCK_BYTES", block_bytes)
    out = read_csv(torques(ARM, path, "--resample", "150"))
    grid = t[0] + np.arange(int(np.floor((t[-1] - t[0]) * 150 + 1e-9)) + 1) / 150
    np.testing.assert_allclose(out["time"], grid, rtol=1e-15, atol=0)
    expected = {p: np.column_stack([np.interp(grid, t, x[:, i]) for i in range(MODEL.n)])
                for p, x in (("q", q), ("qd", qd), ("qdd", qdd))}
    tau = np.column_stack([out[f"tau_{j}"] for j in JOINTS])
    reference = pin_rnea(pin_model(ARM), JOINTS, expected["q"], expected["qd"], expected["qdd"])
    np.testing.assert_allclose(tau, reference, rtol=0, atol=1e-9 * np.abs(reference).max())


def test_smoothing_streams_exactly_and_fits_cubics_exactly(tmp_path, monkeypatch):
    """Blocks of a few hundred bytes give the bits one block gives; a cubic motion on jittered
    stamps gives its own q, qd, qdd (the fit's polynomial is the motion's)."""
    reader = __import__("importlib").import_module("rnea_cli.trajectory.sources.csvfile")
    from rnea_cli.trajectory.open import open_trajectory

    rng = np.random.default_rng(3)
    t = np.arange(400) / 100 + rng.uniform(-0.002, 0.002, 400)
    coeff = rng.normal(size=(4, MODEL.n))
    q = coeff[0] + coeff[1] * t[:, None] + coeff[2] * t[:, None] ** 2 + coeff[3] * t[:, None] ** 3
    qd = coeff[1] + 2 * coeff[2] * t[:, None] + 3 * coeff[3] * t[:, None] ** 2
    qdd = 2 * coeff[2] + 6 * coeff[3] * t[:, None]
    path = write_q(tmp_path / "cubic.csv", t, q)

    def read(**options):
        traj = open_trajectory(path, MODEL, smooth=0.1, **options)
        chunks = list(traj.chunks)
        return chunks, {x: np.concatenate([getattr(c, x) for c in chunks]) for x in ("time", "q", "qd", "qdd")}

    whole_chunks, whole = read()
    monkeypatch.setattr(reader, "BLOCK_BYTES", 300)
    chunks, streamed = read()
    assert len(chunks) > 20 and [c.start for c in chunks] == list(np.cumsum([0] + [len(c) for c in chunks[:-1]]))
    for x in ("time", "q", "qd", "qdd"):
        assert streamed[x].tobytes() == whole[x].tobytes(), x
    np.testing.assert_allclose(whole["q"], q, atol=1e-9 * np.abs(q).max())
    np.testing.assert_allclose(whole["qd"], qd, atol=1e-8 * np.abs(qd).max())
    np.testing.assert_allclose(whole["qdd"], qdd, atol=1e-7 * np.abs(qdd).max())


def test_resampling_and_smoothing_options(tmp_path):
    t, measured, *_ = noisy_motion(duration=1.0)
    path = write_q(tmp_path / "noisy.csv", t, measured)
    out = read_csv(torques(ARM, path, "--resample", "200", "--smooth", "0.05"))
    np.testing.assert_allclose(np.diff(out["time"]), 0.005, rtol=1e-9)
    assert out["time"][0] == t[0] and out["time"][-1] <= t[-1]
    result = run("torques", ARM, path, "--smooth", "0.001")
    assert result.exit_code == 2 and "fewer than 4 samples within --smooth 0.001 s" in result.stderr
    long = run("torques", ARM, path, "--smooth", "2", "-o", tmp_path / "long.csv")
    assert long.exit_code == 0 and f"warning: --smooth 2 s is longer than the run ({t[-1] - t[0]:.6g} s): one cubic " \
        "is fitted to all of it" in long.stderr
    assert "longer than the run" not in run("torques", ARM, path, "--smooth", "0.05", "-o", tmp_path / "long.csv").stderr
    os.remove(tmp_path / "long.csv")
    no_time = tmp_path / "nt.csv"
    no_time.write_text(",".join(f"q_{j}" for j in JOINTS) + "\n" + ",".join(["0"] * len(JOINTS)) + "\n")
    result = run("torques", ARM, no_time, "--smooth", "0.05")
    assert result.exit_code == 2 and "--smooth and --resample need a time column" in result.stderr
    assert os.listdir(tmp_path) == ["noisy.csv", "nt.csv"]


def test_the_smoothing_solve_is_the_cholesky_solution():
    """smoothing.solve_positive (element-wise Cholesky, the same bits on every CPU) against numpy's
    LAPACK solve on random positive definite systems, and its refusal of a singular one."""
    import pytest

    from rnea_cli.trajectory.smoothing import solve_positive

    rng = np.random.default_rng(4)
    A = rng.normal(size=(50, 4, 4))
    M = A @ A.transpose(0, 2, 1) + 0.1 * np.eye(4)
    B = rng.normal(size=(50, 4, 3))
    np.testing.assert_allclose(solve_positive(M, B), np.linalg.solve(M, B), rtol=1e-10, atol=1e-12)
    with pytest.raises(np.linalg.LinAlgError):
        solve_positive(np.ones((1, 4, 4)), np.ones((1, 4, 1)))
