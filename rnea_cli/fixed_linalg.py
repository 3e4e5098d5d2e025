"""Linear algebra whose results are the same bits on every CPU, for identification (identify.py).

A BLAS or LAPACK call rounds by the CPU's kernel: with or without FMA, in an order set by its
SIMD width and blocking. Two ways round that here:

- `block_grams`: Z Z^T over blocks of samples by BLAS, but on integer pieces of Z whose every
  partial sum is an integer below 2^53 (an error-free splitting, Ozaki et al. 2012): each product
  is exact, whatever the kernel, FMA or order, and the pieces are put together in a fixed order.
- The small dense solves of the estimate (`cholesky`, `solve_lower`, `qr_solve`, ...) in
  element-wise numpy operations in a fixed order: +, -, *, /, sqrt are correctly rounded element
  by element, and every sum runs in `ordered_sum`'s fixed tree.
"""

import numpy as np

BLOCK_BITS = 10
BLOCK = 1 << BLOCK_BITS  # samples of a block: its products are summed exactly
PIECE_BITS = (52 - BLOCK_BITS) // 2  # 21: 2 PIECE_BITS + BLOCK_BITS <= 52, a block's sums stay below 2^53
PIECES = 3  # 63 bits of each row below its block's largest |entry|


def block_grams(Z):
    """(blocks, k, k) the Gram matrix Z_b Z_b^T of each block b of Z (k, blocks, K), K <= BLOCK.

    Each row of a block is scaled by a power of two (exact) to below 2^PIECE_BITS in its largest
    |entry| and cut into PIECES integer pieces of at most PIECE_BITS bits (rint: exact); a product
    of two piece matrices then sums at most K integers below 2^(2 PIECE_BITS), every partial sum
    below 2^52: BLAS computes it exactly, in any order. The products kept are those whose pieces'
    weights reach 2^(-2 PIECE_BITS) of the leading one's (six of the nine, four BLAS products by
    symmetry); those left out, and the rest of each entry below its row's 63 bits, weigh less than
    2^-61 of the block's |largest product| per sample. The three levels are added from the smallest,
    then scaled back (exact but for an underflow): within about an ulp of the exact sum, the same
    bits on every CPU. A row that is 0 in a block stays 0; inf or nan rows give inf or nan."""
    k, blocks, K = Z.shape
    if K > BLOCK:
        raise ValueError(f"blocks of {K} samples: at most {BLOCK} sum exactly")
    with np.errstate(invalid="ignore"):  # an inf or nan row: its products are, too
        exponent = np.frexp(np.max(np.abs(Z), axis=2))[1]  # (k, blocks): |Z| < 2^exponent
        pieces = np.empty((blocks, PIECES, k, K))
        rest = np.ldexp(Z, (PIECE_BITS - exponent)[:, :, None]).transpose(1, 0, 2)  # |rest| < 2^PIECE_BITS
        for s in range(PIECES):
            np.rint(rest, out=pieces[:, s])
            if s + 1 < PIECES:
                rest -= pieces[:, s]  # exact: what rint left, |rest| <= 1/2
                rest *= float(1 << PIECE_BITS)
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

