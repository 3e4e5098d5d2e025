"""The condition number the identify report gives, and the fit, on a run that hardly determines its
parameters.

A pendulum swinging by 1 mrad about one pose: its gravity, inertia and friction columns are nearly
collinear, the weighted Gram matrix G = W_b^T W_b has a condition number near 1/eps. Its Cholesky
factor exists (the fit goes on), but LAPACK's smallest eigenvalue of G came out negative (-1e-7
against 1e9): sqrt(max/min) was nan, and `--format json` ended in an internal error (exit 70,
"Out of range float values are not JSON compliant: nan"). Found on a random tree's 3 s weak run."""

import json
import math

import numpy as np
import polars as pl
import pytest

from conftest import run
from test_identify import chain_urdf
from rnea_cli import base_parameters, load_urdf
from rnea_cli.run.answers import identify
from rnea_cli.run.answers.identify.estimate import weighted


def hardly_moving(a=1e-3, q0=0.3, N=400):
    t = np.arange(N)[:, None] / 100.0
    w = np.pi
    q, qd, qdd = q0 + a * np.sin(w * t), a * w * np.cos(w * t), -a * w * w * np.sin(w * t)
    noise = 1e-3 * np.random.default_rng(0).normal(size=q.shape)
    effort = 9.81 * 0.3 * np.cos(q) + 0.01 * qdd + 0.5 * qd + 0.2 * np.sign(qd) + noise
    return t[:, 0], q, qd, qdd, effort


def test_a_barely_determined_run_is_fitted_by_the_prior_and_refused_to_least_squares(tmp_path):
    """G's Cholesky pivots fall below 1e-14 of the largest (cond(W_b) beyond 1e7): the data do not
    determine every base parameter. Least squares (--ols) says so as one line; the consistent
    estimate goes on, the prior holding what the data do not say (a pivoted Cholesky factor of G),
    with no standard errors and the condition number reported as not determined (JSON null), never
    nan; whether it fits or refuses no longer hangs on round-off at the edge of positive definite."""
    xml = chain_urdf(["0 0 1"])
    model = load_urdf(xml)
    base = base_parameters(model)
    t, q, qd, qdd, effort = hardly_moving()
    normal = identify.NormalEquations(base, min_speed=0.0)
    normal.add(q, qd, qdd, effort)
    normal.finish()
    with pytest.raises(identify.IdentificationError, match="do not determine"):
        identify.ols(normal, base)
    fit = identify.estimate(normal, base)
    assert fit.condition == math.inf and np.isnan(fit.se).all() and np.isfinite(fit.theta).all()
    assert identify.consistent(fit.theta[:10])
    assert fit.rms_after[0] < 1.5 * 1e-3  # the noise: the fit is as good as the data allow
    (tmp_path / "robot.urdf").write_text(xml)
    pl.DataFrame({"time": t, "q_j0": q[:, 0], "qd_j0": qd[:, 0], "qdd_j0": qdd[:, 0],
                  "effort_j0": effort[:, 0]}).write_csv(tmp_path / "run.csv")
    result = run("identify", tmp_path / "robot.urdf", tmp_path / "run.csv", "--min-speed", "0", "--format", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["condition"] is None and all(b["standard_error"] is None for b in report["base_parameters"])
    text = run("identify", tmp_path / "robot.urdf", tmp_path / "run.csv", "--min-speed", "0")
    assert text.exit_code == 0 and "does not determine them all" in text.stdout, text.stderr
    refused = run("identify", tmp_path / "robot.urdf", tmp_path / "run.csv", "--min-speed", "0", "--ols")
    assert refused.exit_code == 2 and "do not determine" in refused.stderr and refused.stderr.count("\n") == 1


def test_the_condition_number_is_that_of_the_weighted_base_regressor():
    """On a well-posed run it is cond(W_b) = sqrt(cond(G)), as before."""
    xml = chain_urdf(["0 0 1"])
    model = load_urdf(xml)
    base = base_parameters(model)
    t, q, qd, qdd, effort = hardly_moving(a=1.0)
    normal = identify.NormalEquations(base, min_speed=0.0)
    normal.add(q, qd, qdd, effort)
    normal.finish()
    fit = identify.ols(normal, base)
    G, _ = weighted(normal, base, fit.sigma)
    eig = np.linalg.eigvalsh(G)
    np.testing.assert_allclose(fit.condition, np.sqrt(eig[-1] / eig[0]), rtol=1e-6)
