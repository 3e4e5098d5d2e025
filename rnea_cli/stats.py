"""Running statistics over the blocks of a trajectory: the peak of |x| and when, and the RMS."""

import numpy as np


class Peaks:
    """Per column: largest |x|, the sample and time where it first occurs, and the RMS."""

    def __init__(self, n):
        self.peak = np.zeros(n)
        self.sample = np.zeros(n, dtype=int)
        self.time = np.full(n, np.nan)
        self.sumsq = np.zeros(n)
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
        self.peak[better] = value[better]
        self.sample[better] = start + k[better]
        if time is not None:
            self.time[better] = time[k[better]]
            self.t_first = time[0] if self.t_first is None else self.t_first
            self.t_last = time[-1]
        self.sumsq += np.einsum("ij,ij->j", x, x)
        self.count += len(x)

    def merge(self, other):
        """Combine with the Peaks of the samples that follow (associative: partitions of a run)."""
        better = other.peak > self.peak
        self.peak[better] = other.peak[better]
        self.sample[better] = other.sample[better]
        self.time[better] = other.time[better]
        self.sumsq += other.sumsq
        self.count += other.count
        self.t_first = self.t_first if self.t_first is not None else other.t_first
        self.t_last = other.t_last if other.t_last is not None else self.t_last
        return self

    @property
    def rms(self):
        return np.sqrt(self.sumsq / max(self.count, 1))
