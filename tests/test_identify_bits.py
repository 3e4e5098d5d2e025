"""Identification's same-bits promise: the normal equations' sums (exact products of integer pieces by
BLAS, `fixed_linalg.block_grams`) within an ulp or so of the exact sums, and the whole estimate, down
to the URDF's bytes, the same bits in any chunking and under every BLAS kernel and numpy SIMD level
this CPU runs (as tests/test_same_bits.py for the torques)."""

from fractions import Fraction

import numpy as np
import pytest

from conftest import corpus_robot
from rnea_cli.run.answers import fixed_linalg
from test_same_bits import REPORT, in_every_variant


def exact_gram(Z):
    """Z Z^T as Fractions: the exact sums of the exact products."""
    rows = [[Fraction(x) for x in row] for row in Z]
    return [[sum(a * b for a, b in zip(u, v)) for v in rows] for u in rows]


def test_a_blocks_sums_are_within_an_ulp_of_the_exact_ones():
    """Rows of every scale (one with a sample 1e6 times its others, one at 1e-300 with subnormal
    entries, one near 1e150, one zero), in a whole block and a short one: each entry within 1.5 ulp
    of its exact sum plus 2^-58 of its Cauchy-Schwarz scale sqrt(G_ii G_jj) (plain float sums of
    1024 products are good to about 1024 ulp of that scale at worst)."""
    rng = np.random.default_rng(4)
    for K in (fixed_linalg.BLOCK, 37):
        Z = rng.standard_normal((7, K)) * np.array([1.0, 1e-3, 3e5, 1e-300, 1e150, 0.0, 1.0])[:, None]
        Z[1, ::5] *= 1e-6
        Z[3, ::7] = 3e-320  # subnormal
        Z[6] = rng.integers(-3, 4, K)  # exactly representable sums
        Z[6, 0] = 1e6
        got = fixed_linalg.block_grams(Z[:, None, :])[0]
        exact = exact_gram(Z)
        worst = 0.0
        for i in range(len(Z)):
            for j in range(len(Z)):
                error = abs(Fraction(got[i, j]) - exact[i][j])
                ulp = Fraction(np.spacing(abs(float(exact[i][j])))) if exact[i][j] else Fraction(0)
                scale2 = exact[i][i] * exact[j][j]  # the Cauchy-Schwarz scale, squared
                slack = error - Fraction(3, 2) * ulp
                assert slack <= 0 or slack * slack * 2 ** 116 <= scale2, (K, i, j, float(error))
                if abs(exact[i][j]) >= np.finfo(float).tiny:  # beyond underflow
                    worst = max(worst, float(error * error / scale2) ** 0.5)
        assert worst < 2 ** -52, worst
        print(f"K={K}: worst error {worst:.3g} of sqrt(G_ii G_jj)")
        assert got[6, 6] == float(exact[6][6]) and got[5].tolist() == [0.0] * len(Z)
    assert fixed_linalg.block_grams(np.ones((2, 3, 8)))[1].tolist() == [[8.0, 8.0], [8.0, 8.0]]


def test_a_non_finite_entry_makes_its_sums_non_finite():
    Z = np.ones((3, 1, 16))
    Z[1, 0, 3] = np.inf
    Z[2, 0, 5] = np.nan
    got = fixed_linalg.block_grams(Z)[0]
    assert got[0, 0] == 16.0 and not np.isfinite(got[1:, 1:]).any() and not np.isfinite(got[0, 1:]).any()


def test_more_samples_than_a_block_are_refused():
    with pytest.raises(ValueError, match="at most"):
        fixed_linalg.block_grams(np.ones((2, 1, fixed_linalg.BLOCK + 1)))


# -- the same bytes under every kernel this CPU runs ------------------------------------------------

CHILD = r"""
import hashlib, json, sys
import numpy as np, threadpoolctl
sys.path.insert(0, sys.argv[1])
from random_urdf import random_urdf
from rnea_cli import base_parameters, load_urdf
from rnea_cli.outputs.identified_urdf import identified_urdf
from rnea_cli.run.answers import identify

def digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()

out = {}
robots = [random_urdf(31, n_links=6, types=("revolute", "prismatic", "fixed"), massless=0.0)[0]] + sys.argv[2:]
for k, robot in enumerate(robots):
    model = load_urdf(robot)
    base = base_parameters(model)
    rng = np.random.default_rng(k)
    N = 5000
    q, qd, qdd = (rng.uniform(-1.5, 1.5, (N, model.n)) for _ in range(3))
    W = base.layout.regressor(q, qd, qdd)
    theta = base.layout.parameters() * rng.uniform(0.8, 1.25, base.layout.size) + 0.3 * (
        np.arange(base.layout.size) >= 10 * model.n)
    effort = np.zeros(W.shape[:2])
    for c in range(W.shape[2]):  # W theta, element-wise in order: the same input on every CPU
        effort += W[:, :, c] * theta[c]
    effort += rng.uniform(-1, 1, effort.shape) * 0.05 * np.abs(effort).max(axis=0)
    normal = identify.NormalEquations(base)
    for s in range(0, N, 1777):
        normal.add(q[s:s + 1777], qd[s:s + 1777], qdd[s:s + 1777], effort[s:s + 1777])
    normal.finish()
    ols = identify.ols(normal, base)
    fit = identify.estimate(normal, base)
    out[f"robot{k}"] = {"sums": digest(normal.G, normal.b, normal.c), "base": digest(base.K, base.independent),
                        "ols": digest(ols.theta, ols.beta, ols.se, ols.sigma, np.float64(ols.condition)),
                        "estimate": digest(fit.theta, fit.beta, fit.rms_after),
                        "urdf": digest(np.frombuffer(identified_urdf(robot, model, base.layout, fit.theta), np.uint8))}
""" + REPORT + """print(json.dumps({"blas": blas, "simd": simd, "digests": out}))
"""


def test_the_estimate_is_the_same_bytes_under_every_blas_kernel_and_simd_level_this_cpu_runs(tmp_path):
    """A random tree and the UR5 identified from 5000 noisy samples in chunks of 1777: the sums, the
    base parameters' K, OLS, the consistent estimate and the URDF written, in child processes under
    each OpenBLAS kernel and numpy SIMD level this CPU can run."""
    results = in_every_variant(CHILD, [corpus_robot("ur5")], tmp_path, timeout=900)
    first = results[0][1]["digests"]
    differ = [(extra, r["blas"], robot, part) for extra, r in results for robot, parts in r["digests"].items()
              for part, d in parts.items() if d != first[robot][part]]
    assert not differ, f"other bits than the machine's ({results[0][1]['blas']}): {differ}"
