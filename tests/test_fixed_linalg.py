"""The fixed-order linear algebra identification solves with (run/answers/fixed_linalg.py) against
LAPACK: the same answers to round-off, whatever shortcuts its sparse and small cases take."""

import numpy as np
import pytest

from rnea_cli.run.answers import fixed_linalg as fl


def _stack(rng, p=50, bodies=4):
    """[R0; B] as the estimate's Newton steps make it: R0 upper triangular, then per body 16 rows on
    its own 10 columns, then one row per remaining column on its diagonal (friction)."""
    R0 = np.triu(rng.standard_normal((p, p))) + 5 * np.eye(p)
    B = np.zeros((16 * bodies + p - 10 * bodies, p))
    for k in range(bodies):
        B[16 * k:16 * k + 16, 10 * k:10 * k + 10] = rng.standard_normal((16, 10)) * 10.0 ** k
    B[16 * bodies + np.arange(p - 10 * bodies), np.arange(10 * bodies, p)] = rng.uniform(0.5, 3.0, p - 10 * bodies)
    return np.vstack([R0, B])


@pytest.mark.parametrize("seed", range(3))
def test_householder_of_a_sparse_stack_is_lapacks_r(seed):
    rng = np.random.default_rng(seed)
    M = _stack(rng)
    R = fl.householder(M)
    ref = np.linalg.qr(M, mode="r")
    signs = np.sign(np.diag(R)) * np.sign(np.diag(ref))
    assert np.allclose(np.tril(R, -1), 0.0)
    np.testing.assert_allclose(R, signs[:, None] * ref, rtol=0, atol=1e-12 * np.abs(ref).max())


@pytest.mark.parametrize("seed", range(3))
def test_lstsq_of_a_sparse_stack_and_of_a_dense_matrix_is_lapacks(seed):
    rng = np.random.default_rng(seed)
    for M in (_stack(rng), rng.standard_normal((50, 12)) * np.logspace(0, 3, 12)):
        b = rng.standard_normal(len(M))
        x, ref = fl.lstsq(M, b), np.linalg.lstsq(M, b, rcond=None)[0]
        np.testing.assert_allclose(x, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())


def _householder_before(A, b):
    """fixed_linalg.householder as it was before reflections skipped zero rows (every row of
    RC[k:] in every reflection), frozen here: a dense matrix must give its bits."""
    import math

    m, n = A.shape
    RC = np.concatenate([A, b[:, None]], axis=1)
    for k in range(n):
        x = RC[k:, k]
        norm = math.sqrt(math.fsum((x * x).tolist()))
        if norm == 0.0:
            continue
        alpha = -norm if x[0] >= 0 else norm
        v = x.copy()
        v[0] -= alpha
        vv = 2.0 * norm * (norm + abs(float(x[0])))
        rest = RC[k:, k + 1:]
        rest -= v[:, None] * (fl.ordered_sum(v[:, None] * rest) * (2.0 / vv))
        RC[k, k], RC[k + 1:, k] = alpha, 0.0
    return np.triu(RC[:n, :n]), RC[:n, n]


def test_a_dense_matrix_is_reduced_to_the_bits_it_had_before():
    """No entry of a dense matrix is zero: every reflection takes every row, as before."""
    rng = np.random.default_rng(4)
    for shape in ((40, 9), (9, 9), (5, 3), (1, 1)):
        A = rng.standard_normal(shape)
        b = rng.standard_normal(shape[0])
        for ours, before in zip(fl.householder(A, b), _householder_before(A.copy(), b.copy())):
            np.testing.assert_array_equal(ours, before)
    A = rng.standard_normal((40, 9))
    R, c = fl.householder(A, A[:, 0] + 2 * A[:, 3])
    np.testing.assert_allclose(fl.solve_upper(R, c), np.eye(9)[0] + 2 * np.eye(9)[3], atol=1e-13)


def test_the_shortcuts_refuse_what_they_refused_before():
    with pytest.raises(IndexError):
        fl.solve_lower(np.eye(3), np.ones(2))  # a vector of the wrong length: not 2 of 3 answers
    wide = np.arange(1.0, 7.0).reshape(2, 3)  # m < n: the columns beyond the rows left as they are
    np.testing.assert_array_equal(fl.householder(wide), _householder_before(wide.copy(), np.zeros(2))[0])


def test_one_triangular_solve_is_each_row_correctly_rounded():
    """A vector against one factor: each x_i is (b_i - sum_j L_ij x_j) / L_ii with the sum exactly
    rounded (fsum), checked against exact rationals."""
    from fractions import Fraction

    rng = np.random.default_rng(5)
    L = np.tril(rng.standard_normal((25, 25))) + 4 * np.eye(25)
    b = rng.standard_normal(25)
    x = fl.solve_lower(L, b)
    for i in range(25):
        exact = Fraction(float(b[i])) - sum(Fraction(float(L[i, j]) * float(x[j])) for j in range(i))
        assert x[i] == float(Fraction(float(exact)) / Fraction(float(L[i, i])))  # both roundings IEEE's
    np.testing.assert_allclose(L @ x, b, atol=1e-13)
    np.testing.assert_allclose(fl.solve_upper(L.T, b), np.linalg.solve(L.T, b), rtol=1e-12)
    X = fl.solve_lower(np.stack([L, L]), np.stack([b, 2 * b]))  # the batched path agrees
    np.testing.assert_allclose(X, np.stack([x, 2 * x]), rtol=1e-13, atol=1e-15)


def test_a_solve_beyond_the_doubles_gives_what_numpy_gives_not_an_exception():
    L = np.array([[1.0, 0.0, 0.0], [1e308, 1.0, 0.0], [1e308, 1e308, 1.0]])  # x_2: inf - inf
    b = np.array([1e10, 0.0, 0.0])
    with np.errstate(all="ignore"):
        x = fl.solve_lower(L, b)
    assert x[0] == 1e10 and x[1] == -np.inf and np.isnan(x[2])


def test_a_zero_pivot_gives_what_numpy_gives_not_an_exception():
    with np.errstate(all="ignore"):
        x = fl.solve_lower(np.array([[0.0, 0.0], [1.0, 1.0]]), np.array([1.0, 0.0]))
    assert x[0] == np.inf and x[1] == -np.inf
