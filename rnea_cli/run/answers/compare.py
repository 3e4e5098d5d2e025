"""Measured against model: per joint, the residual (measured - model effort), its RMS and largest
size, the correlation, and the least-squares fit measured = scale model + offset. Streamed as
exact sums (stats.ExactSum) of the deviations from the first sample and of their products, so that
long runs keep their digits and the numbers are the same bits however the run is cut."""

import numpy as np

from ...errors import RneaError
from ..stats import ExactSum, Peaks

RESOLVED = 2.0 ** -26  # a spread below this share of the values' size is round-off's to decide (sqrt of eps)


class Comparison:
    def __init__(self, n):
        self.count = 0
        self.origin = None  # (2, n) the first sample's model and measured efforts
        self.sums = ExactSum(5 * n)  # of dm, dx, dm², dx², dm dx: d the deviations from the origin
        self.residual = Peaks(n)  # its RMS and largest size
        self.low = np.full((2, n), np.inf)  # model, measured: constant where low == high (exactly)
        self.high = np.full((2, n), -np.inf)

    def update(self, start, model, measured):
        n = len(model)
        if n == 0:
            return
        self.residual.update(start, None, measured - model)
        self.low = np.minimum(self.low, [model.min(axis=0), measured.min(axis=0)])
        self.high = np.maximum(self.high, [model.max(axis=0), measured.max(axis=0)])
        if self.origin is None:
            self.origin = np.stack([model[0], measured[0]])
        dm, dx = model - self.origin[0], measured - self.origin[1]
        self.sums.add(np.concatenate([dm, dx, dm * dm, dx * dx, dm * dx], axis=1))
        self.count += n

    def _moments(self):
        """(mean (2, n), sums of squared deviations from the mean (2, n), their cross sum (n,)), from
        the exact sums, each rounded once (inf or nan where a product overflowed)."""
        from fractions import Fraction

        n, count = len(self.low[0]), self.count
        exact = self.sums.fractions()
        s1m, s1x, s2m, s2x, sxy = (exact[k * n:(k + 1) * n] for k in range(5))
        special = self.sums.special.reshape(5, n)
        def rounded(x):  # inf beyond the doubles' range (the caller's message says the efforts are too large)
            try:
                return float(x)
            except OverflowError:
                return float("inf") if x > 0 else float("-inf")

        mean = np.array([[rounded(Fraction(self.origin[0, j]) + Fraction(s1m[j], count)) for j in range(n)],
                         [rounded(Fraction(self.origin[1, j]) + Fraction(s1x[j], count)) for j in range(n)]])
        m2 = np.array([[rounded(s2m[j] - s1m[j] * s1m[j] / count) for j in range(n)],
                       [rounded(s2x[j] - s1x[j] * s1x[j] / count) for j in range(n)]])
        cross = np.array([rounded(sxy[j] - s1m[j] * s1x[j] / count) for j in range(n)])
        return mean + special[:2], m2 + special[2:4], cross + special[4]

    def joints(self, names, label="compare"):
        """Per joint: rms, max, correlation, scale, offset; None where the data do not determine
        them: the fit where the model's effort varies by no more than RESOLVED of the efforts'
        size (round-off in the deviations, about 1e-16 of it, would be most of the slope: a
        constant measurement fitted a scale of 7e118), the correlation where either effort does."""
        out = []
        rms = self.residual.rms
        n = len(names)
        means, m2, crosses = self._moments() if self.count else (np.zeros((2, n)), np.zeros((2, n)), np.zeros(n))
        for j, name in enumerate(names):
            var_model, var_measured, cross = m2[0, j], m2[1, j], crosses[j]
            # a constant is exactly so: its round-off deviations (x - mean, 1 ulp) fit no line
            if self.low[0, j] == self.high[0, j]:
                var_model = cross = 0.0
            if self.low[1, j] == self.high[1, j]:
                var_measured = cross = 0.0
            size = np.abs([self.low[:, j], self.high[:, j]]).max(axis=0)  # model, measured
            mean = np.where(self.low[:, j] == self.high[:, j], self.low[:, j], means[:, j])  # a constant: itself
            with np.errstate(all="ignore"):
                spread = np.sqrt(np.array([var_model, var_measured]) / self.count)
                fitted = spread[0] > RESOLVED * size.max()
                correlated = (spread > RESOLVED * size).all()
                scale = float(cross / var_model) if fitted else None
                row = {"joint": name, "rms": float(rms[j]), "max": float(self.residual.peak[j]),
                       "correlation": float(np.clip(cross / np.sqrt(var_model) / np.sqrt(var_measured), -1, 1))
                       if correlated else None,
                       "scale": scale,
                       "offset": None if scale is None else float(mean[1] - scale * mean[0])}
            bad = [key for key, value in row.items() if isinstance(value, float) and not np.isfinite(value)]
            if bad or not np.isfinite([var_model, var_measured, cross]).all():
                raise RneaError(label, None, f"joint {name}: the efforts are too large, or too alike, for their "
                                             f"{', '.join(bad) or 'correlation and fit'} (values up to "
                                             f"{float(np.abs([self.low[:, j], self.high[:, j]]).max()):.3g})")
            out.append(row)
        return out


def current_factors(coords, drives, actuators_file):
    """(n,) torque per ampere of each joint's drive (kt · ratio · η), for --effort-is current."""
    if not actuators_file:
        raise RneaError("--effort-is current", None, "needs --actuators with a torque_constant for every joint")
    factors = []
    for joint in coords.joints:
        drive = drives.get(joint.name)
        if drive is None or drive.torque_constant is None:
            raise RneaError(actuators_file, None, f"joint {joint.name} has no torque_constant (--effort-is current "
                                                  "needs one for every joint)")
        factors.append(drive.torque_constant * drive.gear_ratio * drive.efficiency)
    return np.array(factors)


def measured_torque(chunk, factors, label):
    """(N, n) measured joint torque: the effort columns, times `factors` when they are currents."""
    effort = chunk.data.get("effort")
    if effort is None:
        raise RneaError(label, None, "no measured effort: give effort_<joint> columns (or --columns effort=..., "
                                     "a preset, a bag whose JointState messages carry effort)")
    return effort if factors is None else effort * factors
