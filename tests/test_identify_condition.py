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


# W_b^T W_b (6 x 6) at the edge where the two tests of "determined" disagree: its unpivoted Cholesky
# factor has a pivot 9.81e-15 of the largest, each pivot over its own column's scale (below DEFICIENT:
# `_solve` goes to the pivoted factor), but the pivoted Cholesky keeps all six pivots. That factor has
# all 6 columns (`ols` takes the run as determined) and is lower triangular only with its rows in pivot
# order. Found by a random search (again when the pivots came to be judged each against its column).
EDGE = [[0.0009065662785099678, -0.0027632268628662838, 0.004900025370492396,
         0.043689337470544425, -0.022765005351473484, -0.053670139021328056],
        [-0.0027632268628662838, 0.010421419648128545, -0.014896309379325571,
         -0.16240072215099358, 0.0862109013734153, 0.19735143280721673],
        [0.004900025370492396, -0.014896309379325571, 0.026529008415017128,
         0.23553354493441797, -0.12266109685365767, -0.2893932444745667],
        [0.043689337470544425, -0.16240072215099358, 0.23553354493441797,
         2.533058658892429, -1.34316655929609, -3.080288239286936],
        [-0.022765005351473484, 0.0862109013734153, -0.12266109685365767,
         -1.34316655929609, 0.7133007573220083, 1.6319088881314365],
        [-0.053670139021328056, 0.19735143280721673, -0.2893932444745667,
         -3.080288239286936, 1.6319088881314365, 3.7476622020194443]]


def test_standard_errors_from_a_pivoted_factor_of_full_rank():
    """Where the pivoted factor has every column, the standard errors are sqrt(diag(G^-1)), finite
    (they were nan: the factor solved as if lower triangular, a 0 on its diagonal), as its finite
    condition number says they should be."""
    from types import SimpleNamespace

    G = np.array(EDGE)
    k = len(G)
    model = SimpleNamespace(source="edge", joints=[None])
    layout = SimpleNamespace(model=model, joints=[0], leaders=[0], terms=[], parameters=lambda: np.zeros(k))
    base = SimpleNamespace(layout=layout, rank=k, independent=np.arange(k), dependent=np.arange(0), K=np.zeros((k, 0)))
    normal = SimpleNamespace(layout=layout, G=[G], b=[G @ np.ones(k)], c=np.array([1e3]), rows=np.array([1000]),
                             count=1000, moved=np.array([True]), slowest=np.zeros(1),
                             rss=lambda theta: np.array([1000.0 - k]))  # sigma 1: G as it is
    fit = identify.ols(normal, base, deficient=True)
    assert fit.sigma[0] == 1.0
    assert fit.factor.shape == (k, k) and not np.allclose(fit.factor, np.tril(fit.factor))  # the edge case
    assert math.isfinite(fit.condition)
    expected = np.sqrt(np.diag(np.linalg.inv(G / fit.sigma[0] ** 2)))
    np.testing.assert_allclose(fit.se, expected, rtol=0.05)  # G's condition 1e14: inv(G) to about 1 %
