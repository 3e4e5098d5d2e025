"""Linear algebra whose results are the same bits on every CPU, for identification (identify/).

A BLAS or LAPACK call rounds by the CPU's kernel: with or without FMA, in an order set by its
SIMD width and blocking. Two ways round that here:

- `block_grams`: Z Z^T over blocks of samples by BLAS, but on integer pieces of Z whose every
  partial sum is an integer below 2^53 (an error-free splitting, Ozaki et al. 2012): each product
  is exact, whatever the kernel, FMA or order, and the pieces are put together in a fixed order.
- The small dense solves of the estimate (`cholesky`, `solve_lower`, `householder`, `lstsq`,
  `log`, `symmetric_eigen`) in element-wise numpy operations (or Python floats) in a fixed order:
  +, -, *, /, sqrt are correctly rounded element by element, every sum runs in `ordered_sum`'s
  fixed tree (or math.fsum, correctly rounded), and no libm or SIMD transcendental is called.
- `uniform`, `normal`: random draws made of integers by exact arithmetic (and Box-Muller with
  `log` and spatial.cos_sin) (numpy's normal sampler calls
  libm's log1p and exp, whose last bits differ by platform; its uniform one may be fused into an FMA
  by the compiler of another architecture).
"""

import math

import numpy as np

BLOCK_BITS = 10
UNIT = 2.0 ** -53
BLOCK = 1 << BLOCK_BITS  # samples of a block: its products are summed exactly
PIECE_BITS = (52 - BLOCK_BITS) // 2  # 21: 2 PIECE_BITS + BLOCK_BITS <= 52, a block's sums stay below 2^53
PIECES = 3  # 63 bits of each row below its block's largest |entry|


def block_grams(Z, scratch=None):
    """(blocks, k, k) the Gram matrix Z_b Z_b^T of each block b of Z (k, blocks, K), K <= BLOCK.

    Each row of a block is scaled by a power of two (exact) to below 2^PIECE_BITS in its largest
    |entry| and cut into PIECES integer pieces of at most PIECE_BITS bits (rint: exact); a product
    of two piece matrices then sums at most K integers below 2^(2 PIECE_BITS), every partial sum
    below 2^52: BLAS computes it exactly, in any order. The products kept are those whose pieces'
    weights reach 2^(-2 PIECE_BITS) of the leading one's (six of the nine, four BLAS products by
    symmetry); those left out, and the rest of each entry below its row's 63 bits, weigh less than
    2^-61 of the block's |largest product| per sample. The three levels are added from the smallest,
    then scaled back (exact but for an underflow): within about an ulp of the exact sum, the same
    bits on every CPU. A row that is 0 in a block stays 0; inf or nan rows give inf or nan.

    scratch: a `Scratch` to cut the pieces in, for a caller summing block after block (fresh
    arrays of this size cost the allocator new pages, call after call)."""
    return block_products(*block_pieces(Z, scratch))


class Scratch:
    """Arrays for `block_pieces` of up to k rows and `blocks` blocks of BLOCK samples."""

    def __init__(self, k, blocks):
        self.pieces = np.empty((blocks * PIECES * k * BLOCK))
        self.rest = np.empty((blocks * k * BLOCK))


def block_pieces(Z, scratch=None):
    """The element-wise half of `block_grams`: (pieces (blocks, PIECES, k, K), exponent (k, blocks)),
    Z's rows scaled by 2^(PIECE_BITS - exponent) and cut into integer pieces; `block_products`
    makes the Gram matrices of them. Z may be a list of arrays (k_i, blocks, K), its rows in turn."""
    parts = [Z] if isinstance(Z, np.ndarray) else list(Z)
    k, (blocks, K) = sum(len(part) for part in parts), parts[0].shape[1:]
    if K > BLOCK:
        raise ValueError(f"blocks of {K} samples: at most {BLOCK} sum exactly")
    with np.errstate(invalid="ignore"):  # an inf or nan row: its products are, too
        exponent = np.concatenate([np.frexp(np.maximum(np.max(part, axis=2), -np.min(part, axis=2)))[1]
                                   for part in parts])  # (k, blocks): |Z| < 2^exponent
        fits = scratch is not None and scratch.rest.size >= blocks * k * K
        pieces = scratch.pieces[:blocks * PIECES * k * K].reshape(blocks, PIECES, k, K) if fits else (
            np.empty((blocks, PIECES, k, K)))
        rest = scratch.rest[:blocks * k * K].reshape(blocks, k, K) if fits else np.empty((blocks, k, K))
        # rest: Z's rows times 2^shift, |rest| < 2^PIECE_BITS
        shift = (PIECE_BITS - exponent).T[:, :, None]
        near = np.clip(shift, -1000, 1000)  # 2^shift in two exact factors where it is no double
        first = 0
        for part in parts:
            np.multiply(part.transpose(1, 0, 2), np.ldexp(1.0, near[:, first:first + len(part)]),
                        out=rest[:, first:first + len(part)])
            first += len(part)
        if np.any(near != shift):
            rest *= np.ldexp(1.0, shift - near)
        for s in range(PIECES):
            np.rint(rest, out=pieces[:, s])
            if s + 1 < PIECES:
                rest -= pieces[:, s]  # exact: what rint left, |rest| <= 1/2
                rest *= float(1 << PIECE_BITS)
    return pieces, exponent


def block_products(pieces, exponent):
    """(blocks, k, k) Gram matrices from `block_pieces`: the products of the pieces, exact
    integers below 2^53, added from the smallest level and scaled back."""
    blocks, _, k, K = pieces.shape
    with np.errstate(invalid="ignore"):
        first = np.matmul(pieces[:, 0], pieces.reshape(blocks, PIECES * k, K).transpose(0, 2, 1))
        second = np.matmul(pieces[:, 1], pieces[:, 1].transpose(0, 2, 1))
        top, middle, low = first[:, :, :k], first[:, :, k:2 * k], first[:, :, 2 * k:]
        # each level an exact integer (below 2^53) in its unit 2^(-2, -3, -4 PIECE_BITS)
        low = second + low + low.transpose(0, 2, 1)
        middle = middle + middle.transpose(0, 2, 1)
        unit = 1.0 / (1 << PIECE_BITS)
        total = (low * unit + middle) * unit + top
        scale = exponent.T[:, :, None] + exponent.T[:, None, :] - 2 * PIECE_BITS
        return np.ldexp(total, scale)


# -- small dense linear algebra in a fixed order ------------------------------------------------

def ordered_sum(x, axis=0):
    """x summed over an axis in a tree fixed by its length, element-wise adds only: the entries
    beyond the largest power of two P <= length are added onto the first ones, then halves onto
    halves."""
    x = np.asarray(x, dtype=float)
    if axis not in (0, -x.ndim):
        axis %= x.ndim
        x = x.transpose((axis,) + tuple(a for a in range(x.ndim) if a != axis))
    n = len(x)
    if n <= 1:
        return x[0].copy() if n else np.zeros(x.shape[1:])
    P = 1 << (n.bit_length() - 1)
    head = x[:P].copy()
    head[:n - P] += x[P:]
    while P > 1:
        P //= 2
        head[:P] += head[P:2 * P]
    return head[0]


def matvec(A, x):
    """A (..., m, n) times x (n,) or (..., n): each row's products summed in `ordered_sum`'s tree."""
    return ordered_sum(A * np.asarray(x)[..., None, :], axis=-1)


def dot(x, y):
    """x . y of two vectors, in `ordered_sum`'s tree."""
    return float(ordered_sum(np.asarray(x) * np.asarray(y)))


def matmul(A, B):
    """A (m, k) B (k, n), each entry's products summed in `ordered_sum`'s tree (small matrices)."""
    return ordered_sum(np.asarray(A, dtype=float).T[:, :, None] * np.asarray(B, dtype=float)[:, None, :])


def cholesky(M):
    """Lower triangular L with L L^T = M for symmetric positive definite M (..., k, k), by columns,
    each entry's sum in a fixed tree. np.linalg.LinAlgError where a pivot is not positive (or nan)."""
    M = np.asarray(M, dtype=float)
    k = M.shape[-1]
    L = np.zeros_like(M)
    for j in range(k):
        d = M[..., j, j] - ordered_sum(L[..., j, :j] * L[..., j, :j], axis=-1) if j else M[..., j, j].copy()
        if not np.all(d > 0):
            raise np.linalg.LinAlgError("not positive definite")
        L[..., j, j] = np.sqrt(d)
        if j + 1 < k:
            s = M[..., j + 1:, j] - (ordered_sum(L[..., j + 1:, :j] * L[..., j, None, :j], axis=-1) if j else 0.0)
            L[..., j + 1:, j] = s / L[..., j, j, None]
    return L


def solve_lower(L, B):
    """X with L X = B, L (..., k, k) lower triangular, B (..., k) or (..., k, m)."""
    vector = np.ndim(B) == np.ndim(L) - 1
    if vector and np.ndim(L) == 2 and np.shape(L) == (np.shape(B)[0],) * 2:
        try:
            return _substitute(np.asarray(L, dtype=float), np.asarray(B, dtype=float))
        except (OverflowError, ValueError, ZeroDivisionError):  # inf - inf, beyond the doubles, a 0 pivot: as numpy
            pass
    B = np.asarray(B, dtype=float)[..., None] if vector else np.asarray(B, dtype=float)
    X = np.empty(np.broadcast_shapes(L.shape[:-2], B.shape[:-2]) + B.shape[-2:])
    for i in range(L.shape[-1]):
        s = B[..., i, :] - ordered_sum(L[..., i, :i, None] * X[..., :i, :], axis=-2) if i else B[..., i, :]
        X[..., i, :] = s / L[..., i, i, None]
    return X[..., 0] if vector else X


def _substitute(L, b):
    """x with L x = b for one lower triangular L (k, k) and one b (k,): each row's b_i - sum L_ij x_j
    correctly rounded (math.fsum of the IEEE products), so the same everywhere, in Python's floats
    (a row's numpy calls would cost more than its few products)."""
    rows, x = L.tolist(), []
    for i, (row, bi) in enumerate(zip(rows, b.tolist())):
        x.append(math.fsum([bi] + [-a * y for a, y in zip(row[:i], x)]) / row[i])
    return np.array(x)


def solve_upper(U, B):
    """X with U X = B, U (..., k, k) upper triangular: `solve_lower` with rows and columns reversed."""
    rows = -1 if np.ndim(B) == np.ndim(U) - 1 else -2
    return np.flip(solve_lower(np.flip(U, (-2, -1)), np.flip(np.asarray(B, dtype=float), rows)), rows)


def householder(A, B=None):
    """R (n, n) of A = Q R (m, n), m >= n, by Householder reflections, each sum in a fixed tree; with
    B (m,) or (m, k) also Q^T B's first n rows: (R, Q^T B)."""
    A = np.asarray(A, dtype=float)
    m, n = A.shape
    RC = np.concatenate([A, np.zeros((m, 0)) if B is None else np.asarray(B, dtype=float).reshape(m, -1)], axis=1)
    for k in range(min(m, n)):
        # the reflection moves only the rows where column k is not zero, and row k: a stack such as
        # [R; B] (R triangular, B of blocks) is reduced at the cost of its rows that take part (a
        # row left out is unchanged: an inf there beside a 0 in column k stays an inf, not a nan)
        rows = k + np.concatenate([[0], 1 + np.flatnonzero(RC[k + 1:, k])])
        x = RC[rows, k]
        norm = math.sqrt(math.fsum((x * x).tolist()))  # fsum: correctly rounded, so the same everywhere
        if norm == 0.0:
            continue
        alpha = -norm if x[0] >= 0 else norm
        v = x.copy()
        v[0] -= alpha
        vv = 2.0 * norm * (norm + abs(float(x[0])))  # v . v = |x|² - 2 alpha x_0 + alpha²
        dense = len(rows) == m - k  # every row takes part: reflected in place
        rest = RC[k:, k + 1:] if dense else RC[rows, k + 1:]
        rest -= v[:, None] * (ordered_sum(v[:, None] * rest) * (2.0 / vv))
        if not dense:  # a copy of those rows
            RC[rows, k + 1:] = rest
        RC[k, k], RC[k + 1:, k] = alpha, 0.0
    R = np.triu(RC[:n, :n])
    if B is None:
        return R
    return R, (RC[:n, n] if np.ndim(B) == 1 else RC[:n, n:])


def lstsq(A, b, rcond=1e-15):
    """argmin |A x - b| (A (m, n), m >= n, of full column rank up to rcond: a column whose R_kk is
    below rcond max |R_jj| gets x_k = 0) by Householder QR."""
    R, c = householder(A, b)
    diagonal = np.abs(np.diag(R))
    keep = diagonal > rcond * (diagonal.max() if len(diagonal) else 0.0)
    x = np.zeros(R.shape[1:] + np.shape(c)[1:])
    x[keep] = solve_upper(R[np.ix_(keep, keep)], c[keep])
    return x


LN2_HI, LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10  # fdlibm's split of log(2)


def log(x):
    """Natural log of positive x (array), element-wise +, -, *, / only (numpy's and libm's log differ
    by CPU): x = 2^e m, m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172,
    by its series to s^21 (within 2 ulp)."""
    x = np.asarray(x, dtype=float)
    m, e = np.frexp(x)
    small = m < 0.7071067811865476
    m = np.where(small, 2.0 * m, m)
    e = (e - small).astype(float)
    s = (m - 1.0) / (m + 1.0)
    s2 = s * s
    series = np.zeros_like(s)
    for k in range(21, 1, -2):
        series = (series + 1.0 / k) * s2
    return e * LN2_HI + (2.0 * s + (2.0 * s * series + e * LN2_LO))


def factor_condition(L, steps=300):
    """cond(L) of a nonsingular triangular factor L (k, k): sqrt of the largest over the smallest
    eigenvalue of G = L L^T, by `steps` of power iteration on G and on G^-1 (through L's solves)
    from a fixed start, their Rayleigh quotients in a fixed order: the same bits everywhere (no
    LAPACK). A quotient lies between the extreme eigenvalue and the next: where they are no closer
    than 1 % apart, 300 steps give it to round-off (fewer, where it stops changing)."""
    L = np.asarray(L, dtype=float)
    k = len(L)
    if k == 0:
        return 1.0
    start = 1.0 + np.arange(k) / k  # meets every eigenvector but by chance

    def extreme(apply):
        x = start / math.sqrt(dot(start, start))
        value = 0.0
        for _ in range(steps):
            y = apply(x)
            value, last = dot(x, y), value
            x = y / math.sqrt(dot(y, y))
            if abs(value - last) <= 1e-15 * value:  # converged to round-off
                break
        return value

    largest = extreme(lambda x: matvec(L, matvec(L.T, x)))
    inverse = extreme(lambda x: solve_upper(L.T, solve_lower(L, x)))  # 1 / the smallest eigenvalue
    return math.sqrt(largest * inverse)


def pivoted_cholesky(M, tolerance):
    """F (k, r) with F F^T = M for symmetric positive semi-definite M (k, k) up to what is left out:
    Cholesky with diagonal pivoting (the largest remaining diagonal first, ties to the lowest index),
    stopping where that is at most tolerance times the first pivot; each sum in a fixed tree."""
    M = np.asarray(M, dtype=float)
    k = len(M)
    F, d = np.zeros((k, k)), np.diagonal(M).copy()
    chosen = np.zeros(k, dtype=bool)
    first = None
    for j in range(k):
        i = int(np.argmax(np.where(chosen, -math.inf, d)))
        if chosen[i] or not d[i] > 0.0 or (first is not None and d[i] <= tolerance * first):
            return F[:, :j]
        first = d[i] if first is None else first
        column = M[:, i] - (matvec(F[:, :j], F[i, :j]) if j else 0.0)
        F[:, j] = column / math.sqrt(d[i])
        F[chosen, j] = 0.0  # the rows already pivoted: exactly what is left of them, 0
        chosen[i] = True
        d -= F[:, j] * F[:, j]
    return F


def symmetric_eigen(J, sweeps=30):
    """Eigenvalues (ascending) and eigenvectors (columns) of a small symmetric matrix by cyclic
    Jacobi rotations in Python floats (+, -, *, /, sqrt: the same bits everywhere)."""
    A = [[float(v) for v in row] for row in J]
    n = len(A)
    V = [[float(i == j) for j in range(n)] for i in range(n)]
    for _ in range(sweeps):
        off = sum(A[i][j] * A[i][j] for i in range(n) for j in range(n) if i != j)
        if off <= 1e-36 * sum(A[i][i] * A[i][i] for i in range(n)) or off == 0.0:
            break
        for p in range(n - 1):
            for q in range(p + 1, n):
                if A[p][q] == 0.0:
                    continue
                theta = (A[q][q] - A[p][p]) / (2.0 * A[p][q])
                t = (1.0 if theta >= 0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                for k in range(n):
                    akp, akq = A[k][p], A[k][q]
                    A[k][p], A[k][q] = c * akp - s * akq, s * akp + c * akq
                for k in range(n):
                    apk, aqk = A[p][k], A[q][k]
                    A[p][k], A[q][k] = c * apk - s * aqk, s * apk + c * aqk
                for k in range(n):
                    vkp, vkq = V[k][p], V[k][q]
                    V[k][p], V[k][q] = c * vkp - s * vkq, s * vkp + c * vkq
    order = sorted(range(n), key=lambda i: A[i][i])
    return np.array([A[i][i] for i in order]), np.array([[V[k][i] for i in order] for k in range(n)])


def uniform(rng, low, high, shape):
    """Draws uniform in [low, high) of a numpy Generator: 53-bit integers (integer arithmetic only)
    times 2^-53 (exact), then one multiply and one add, each correctly rounded."""
    u = rng.integers(0, 1 << 53, size=shape, dtype=np.int64) * UNIT
    return low + (high - low) * u


def normal(rng, shape):
    """Standard normal draws by Box-Muller from two `uniform` draws, with this module's `log` and
    the engine's cos/sin (fdlibm's, element-wise): the same bits on every machine."""
    from ...dynamics.spatial import cos_sin

    u, v = uniform(rng, 0.0, 1.0, (2,) + tuple(np.atleast_1d(shape)))
    radius = np.sqrt(-2.0 * log(1.0 - u))  # 1 - u in (0, 1]
    angle = (2.0 * math.pi) * v
    c = np.empty(angle.shape)
    cos_sin(angle, c, np.empty(angle.shape), np.empty((5,) + angle.shape))
    return radius * c
