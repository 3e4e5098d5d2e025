"""Running statistics over the blocks of a trajectory: the peak of |x| and when, and the RMS;
the energy a drive draws and gives back."""

import numpy as np


class Peaks:
    """Per column: largest |x|, the sample and time where it first occurs, and the RMS.

    The sum of squares is kept relative to the peak (sum of (x / peak)², rescaled when the peak
    grows, as LAPACK's dnrm2 does), so that the RMS of values beyond 1e154 does not overflow."""

    def __init__(self, n):
        self.peak = np.zeros(n)
        self.sample = np.zeros(n, dtype=int)
        self.time = np.full(n, np.nan)
        self.scaled = np.zeros(n)  # sum of (x / peak)²
        self.count = 0
        self.t_first = self.t_last = None

    def update(self, start, time, x):
        """x: (N, n) values of samples start .. start+N-1; time: (N,) or None."""
        if len(x) == 0:
            return
        a = np.abs(x)
        k = a.argmax(axis=0)
        value = a[k, np.arange(a.shape[1])]
        better = value > self.peak
        self._rescale(np.where(better, value, self.peak))
        self.sample[better] = start + k[better]
        if time is not None:
            self.time[better] = time[k[better]]
            self.t_first = time[0] if self.t_first is None else self.t_first
            self.t_last = time[-1]
        r = _over(x, self.peak)
        self.scaled += np.einsum("ij,ij->j", r, r)
        self.count += len(x)

    def _rescale(self, peak):
        """Raise the peak per column, keeping the scaled sum of squares the same sum."""
        self.scaled *= _over(self.peak, peak) ** 2
        self.peak = peak

    def merge(self, other):
        """Combine with the Peaks of the samples that follow (associative: partitions of a run)."""
        better = other.peak > self.peak
        self._rescale(np.where(better, other.peak, self.peak))
        self.scaled += other.scaled * _over(other.peak, self.peak) ** 2
        self.sample[better] = other.sample[better]
        self.time[better] = other.time[better]
        self.count += other.count
        self.t_first = self.t_first if self.t_first is not None else other.t_first
        self.t_last = other.t_last if other.t_last is not None else self.t_last
        return self

    @property
    def rms(self):
        return self.peak * np.sqrt(self.scaled / max(self.count, 1))


def _over(x, peak):
    """x / peak per column, where the peak is 0 (so is x): x."""
    return x / np.where(peak > 0, peak, 1.0)


class ThermalWindow:
    """RMS of x over a sliding window of `window` seconds ending at each sample, across chunks:
    the mean of x² over the samples with times in (t - window, t]. Samples less than a window
    after the first have no full window and give none."""

    def __init__(self, window):
        self.window = window
        self.t0 = None
        self.tail_t, self.tail_x = np.empty(0), np.empty(0)

    def update(self, time, x):
        """(RMS at the samples with a full window: the last ones of this chunk) or None."""
        if self.t0 is None:
            self.t0 = time[0]
        t = np.concatenate([self.tail_t, time])
        values = np.concatenate([self.tail_x, x])
        top = float(np.abs(values).max(initial=0.0)) or 1.0  # squares relative to the largest: no overflow
        sums = np.concatenate([[0.0], np.cumsum((values / top) ** 2)])
        new = np.arange(len(self.tail_t), len(t))
        start = np.searchsorted(t, t[new] - self.window, side="right")
        full = t[new] - self.t0 >= self.window
        keep = np.searchsorted(t, t[-1] - self.window, side="right")
        self.tail_t, self.tail_x = t[keep:], values[keep:]
        if not full.any():
            return None
        first = int(np.argmax(full))
        new, start = new[first:], start[first:]
        return top * np.sqrt(np.maximum(sums[new + 1] - sums[start], 0.0) / (new + 1 - start))


class Energy:
    """Per joint: peak |power|, energy drawn (P > 0) and given back (P < 0), trapezoidal in time."""

    def __init__(self, n):
        self.peaks, self.drawn, self.regenerated = Peaks(n), np.zeros(n), np.zeros(n)
        self._last = None  # (time, power) of the previous block's last sample

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
            self.drawn += (0.5 * (np.maximum(p[1:], 0) + np.maximum(p[:-1], 0)) * dt).sum(axis=0)
            self.regenerated += (0.5 * (np.minimum(p[1:], 0) + np.minimum(p[:-1], 0)) * dt).sum(axis=0)
        self._last = (t[-1], p[-1])
