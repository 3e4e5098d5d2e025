"""Running statistics over the blocks of a trajectory: the peak of |x| and when, and the RMS;
the RMS over a sliding thermal window; the energy a drive draws and gives back. Each has the
same bits whatever the chunks the trajectory comes in (its sums are exact, or made in a fixed
order over fixed blocks of the run)."""

import numpy as np


class ExactSum:
    """Per column, the exact sum of float64 values (or of their squares), rounded only when read:
    the same bits whatever the chunks, the order, or the grouping of merged partial sums.

    Each value is m 2^e (np.frexp), its 53-bit mantissa an integer M = m 2^53 split into two
    halves below 2^27, summed (exactly: np.bincount's float sums stay below 2^53) into int64
    buckets per power of two; a square is m² 2^2e, m² an integer of 54 bits over 2^54. Buckets
    carry their high bits 20 powers up after each update, so none overflows (the top 20, far
    above any double's square, keep theirs)."""

    BUCKETS, ZERO, CARRY = 4600, 2300, 20  # exponents -2300 .. 2299; carries move 20 up
    MAX_ROWS = 1 << 25  # values per column summed in one pass (27 + 25 bits < 53)

    def __init__(self, n):
        self.n = n
        self.buckets = np.zeros((n, self.BUCKETS), dtype=np.int64)
        self.special = np.zeros(n)  # inf or nan of the values that were not finite (0 while all are)
        self._offsets = (self.ZERO + np.arange(n) * self.BUCKETS).astype(np.int32)  # each column's buckets

    def add(self, x):
        """Add the columns of x (N, n); a value that is not finite makes its column's sum inf or nan."""
        x = np.asarray(x, dtype=float)
        finite = np.isfinite(x)
        if not finite.all():
            self.special = self.special + np.where(finite, 0.0, x).sum(axis=0)
            x = np.where(finite, x, 0.0)
        m, e = np.frexp(x)
        self._add(m * 2.0 ** 53, e - 53)

    def add_squares(self, x):
        """Add the squares of the columns of x (N, n), exactly as rounded m², with no overflow."""
        m, e = np.frexp(np.asarray(x, dtype=float))
        self._add(m * m * 2.0 ** 54, 2 * e - 54)

    def _add(self, mantissa, exponent):
        """mantissa: integers as floats, below 2^54 in size; the values are mantissa 2^exponent.
        (Products by powers of two are exact: no ldexp needed.)"""
        size = self.n * self.BUCKETS
        for k in range(0, len(mantissa), self.MAX_ROWS):
            M = mantissa[k:k + self.MAX_ROWS]
            index = (exponent[k:k + self.MAX_ROWS] + self._offsets).ravel()
            high = np.floor(M * 2.0 ** -27)  # M = high 2^27 + low, each exact, |high|, low < 2^27
            low = M - high * 2.0 ** 27
            sums = np.bincount(index + 27, high.ravel(), size) + np.bincount(index, low.ravel(), size)
            self.buckets += sums[:size].reshape(self.n, self.BUCKETS).astype(np.int64)
            self._carry()

    def _carry(self):
        """Each bucket keeps a remainder in [-2^19, 2^19) and gives the rest 20 powers up (balanced,
        so that a negative sum carries no chain of -1s to the top)."""
        low = self.buckets[:, :-self.CARRY]
        carry = (low + (1 << (self.CARRY - 1))) >> self.CARRY
        low -= carry << self.CARRY
        self.buckets[:, self.CARRY:] += carry

    def merge(self, other):
        self.buckets += other.buckets
        self.special = self.special + other.special
        self._carry()
        return self

    def fractions(self):
        """The exact sums, as Fractions."""
        from fractions import Fraction

        out = []
        for row in self.buckets:
            used = np.flatnonzero(row)
            total = sum(int(row[k]) << int(k - used[0]) for k in used) if len(used) else 0
            out.append(Fraction(total) * Fraction(2) ** int((used[0] if len(used) else 0) - self.ZERO))
        return out

    def values(self):
        """(n,) the sums, each rounded once."""
        return np.array([_rounded(f) for f in self.fractions()]) + self.special


def _rounded(fraction):
    """The double nearest a Fraction, or ±inf beyond the doubles' range (a sum of finite values may be)."""
    try:
        return float(fraction)
    except OverflowError:
        return float("inf") if fraction > 0 else float("-inf")


def exact_sqrt(fraction):
    """sqrt of a Fraction >= 0 to 64 bits (integer square roots): a function of its exact value."""
    import math
    from fractions import Fraction

    if fraction <= 0:
        return 0.0
    shift = max(0, 128 - fraction.numerator.bit_length() + fraction.denominator.bit_length()) // 2 + 1
    return float(Fraction(math.isqrt(fraction.numerator * 4 ** shift // fraction.denominator), 2 ** shift))


class Peaks:
    """Per column: largest |x|, the sample and time where it first occurs, and the RMS.

    The sum of squares is exact (ExactSum), so the RMS has the same bits whatever the chunks and
    however partial Peaks merge, and values beyond 1e154 do not overflow it."""

    def __init__(self, n):
        self.peak = np.zeros(n)
        self.sample = np.zeros(n, dtype=int)
        self.time = np.full(n, np.nan)
        self.squares = ExactSum(n)
        self.count = 0
        self.t_first = self.t_last = None
        self._rms = None  # the RMS of the samples so far, once asked for

    def update(self, start, time, x):
        """x: (N, n) values of samples start .. start+N-1; time: (N,) or None."""
        if len(x) == 0:
            return
        a = np.abs(x)
        k = a.argmax(axis=0)
        value = a[k, np.arange(a.shape[1])]
        better = value > self.peak
        self.peak = np.where(better, value, self.peak)
        self.sample[better] = start + k[better]
        if time is not None:
            self.time[better] = time[k[better]]
            self.t_first = time[0] if self.t_first is None else self.t_first
            self.t_last = time[-1]
        self.squares.add_squares(np.where(np.isfinite(x), x, 0.0))
        self.count += len(x)
        self._rms = None

    def merge(self, other):
        """Combine with the Peaks of the samples that follow (associative: partitions of a run)."""
        better = other.peak > self.peak
        self.peak = np.where(better, other.peak, self.peak)
        self.squares.merge(other.squares)
        self._rms = None
        self.sample[better] = other.sample[better]
        self.time[better] = other.time[better]
        self.count += other.count
        self.t_first = self.t_first if self.t_first is not None else other.t_first
        self.t_last = other.t_last if other.t_last is not None else self.t_last
        return self

    @property
    def rms(self):
        from fractions import Fraction

        if self._rms is None:
            count = max(self.count, 1)
            rms = np.array([exact_sqrt(total / Fraction(count)) for total in self.squares.fractions()])
            self._rms = np.where(np.isfinite(self.peak), rms, self.peak)  # (an infinite peak: so is the RMS)
        return self._rms


class ThermalWindow:
    """RMS of x over a sliding window of `window` seconds ending at each sample, across chunks:
    the mean of x² over the samples with times in (t - window, t]. Samples less than a window
    after the first have no full window and give none.

    A window's sum of squares is made of sums over blocks of BLOCK samples at fixed places of the
    run (the part of the window in its first block, the whole blocks between, the part in its
    last), each added up in one order from its block's start: the same bits whatever the chunks.
    Squares are of x / scale (the limit: no overflow below 1e154 times it)."""

    BLOCK = 4096

    def __init__(self, window, scale=1.0):
        self.window, self.scale = window, scale
        self.t0 = None
        self.count = 0  # samples seen
        self.tail_t, self.tail_prefix = np.empty(0), np.empty(0)  # where a window may still start (and one before)
        self.prefix = 0.0  # sum of squares from the current block's start to the last sample
        self.totals, self.before = [], [0.0]  # per completed block: its sum; sum of the blocks before each block

    def update(self, time, x):
        """(RMS at the samples with a full window: the last ones of this chunk) or None."""
        if self.t0 is None:
            self.t0 = time[0]
        first = self.count
        prefix = self._prefixes(np.square(np.asarray(x, dtype=float) / self.scale))
        t = np.concatenate([self.tail_t, time])
        sums_in = np.concatenate([self.tail_prefix, prefix])  # in-block prefix sum at each sample of t
        base = first - len(self.tail_t)  # the run's index of t[0]
        new = np.arange(len(self.tail_t), len(t))
        start = np.searchsorted(t, t[new] - self.window, side="right")
        full = t[new] - self.t0 >= self.window
        keep = max(np.searchsorted(t, t[-1] - self.window, side="right") - 1, 0)
        self.tail_t, self.tail_prefix = t[keep:], sums_in[keep:]
        if not full.any():
            return None
        k = int(np.argmax(full))
        new, start = new[k:], start[k:]
        j, s = base + new, base + start  # run indices of each window's last and first sample
        bs, bj = s // self.BLOCK, j // self.BLOCK  # the blocks of each window's first and last sample
        ahead = np.where(s % self.BLOCK > 0, sums_in[np.maximum(start - 1, 0)], 0.0)  # bs's part before s
        totals, before = np.array(self.totals + [0.0]), np.array(self.before)
        # sum(s..j) = (total[bs] - ahead) + (before[bj] - before[bs + 1]) + prefix[j], or in one block prefix[j] - ahead
        between = (totals[bs] - ahead) + (before[bj] - before[np.minimum(bs + 1, bj)])
        sums = np.where(bs == bj, sums_in[new] - ahead, between + sums_in[new])
        return self.scale * np.sqrt(np.maximum(sums, 0.0) / (j + 1 - s))

    def _prefixes(self, squares):
        """Per sample, the sum of squares from its block's start to it, added in order."""
        out = np.empty(len(squares))
        B, done = self.BLOCK, 0
        while done < len(squares):
            room = B - self.count % B
            part = squares[done:done + room]
            out[done:done + len(part)] = np.cumsum(np.concatenate([[self.prefix], part]))[1:]
            self.count += len(part)
            self.prefix = out[done + len(part) - 1]
            done += len(part)
            if self.count % B == 0:  # the block is complete
                self.totals.append(self.prefix)
                self.before.append(self.before[-1] + self.prefix)
                self.prefix = 0.0
        return out


class Energy:
    """Per joint: peak |power|, energy drawn (P > 0) and given back (P < 0), trapezoidal in time,
    each interval's energy summed exactly (the same bits whatever the chunks)."""

    def __init__(self, n):
        self.peaks, self._drawn, self._regenerated = Peaks(n), ExactSum(n), ExactSum(n)
        self._last = None  # (time, power) of the previous block's last sample

    @property
    def drawn(self):
        return self._drawn.values()

    @property
    def regenerated(self):
        return self._regenerated.values()

    def update(self, block):
        """block: a pipeline Block with drives (its power, and its chunk's time)."""
        chunk, P = block.chunk, block.power
        self.peaks.update(chunk.start, chunk.time, P)
        if chunk.time is None:
            return
        t, p = chunk.time, P
        if self._last is not None:
            t, p = np.concatenate([[self._last[0]], t]), np.vstack([self._last[1], p])
        if len(t) > 1:
            dt = np.diff(t)[:, None]
            self._drawn.add(0.5 * (np.maximum(p[1:], 0) + np.maximum(p[:-1], 0)) * dt)
            self._regenerated.add(0.5 * (np.minimum(p[1:], 0) + np.minimum(p[:-1], 0)) * dt)
        self._last = (t[-1], p[-1])
