"""Measured against model: per joint, the residual (measured - model effort), its RMS and largest
size, the correlation, and the least-squares fit measured = scale model + offset. Streamed with
pairwise-merged moments (Chan et al.), so that long runs keep their digits."""

import numpy as np

from ..errors import RneaError
from ..stats import Peaks


class Comparison:
    def __init__(self, n):
        self.count = 0
        self.mean = np.zeros((2, n))  # model, measured
        self.m2 = np.zeros((2, n))  # sums of squared deviations
        self.cross = np.zeros(n)  # sum of (model - mean)(measured - mean)
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
        mean = np.stack([model.mean(axis=0), measured.mean(axis=0)])
        dm, dx = model - mean[0], measured - mean[1]
        m2 = np.stack([np.einsum("ij,ij->j", dm, dm), np.einsum("ij,ij->j", dx, dx)])
        cross = np.einsum("ij,ij->j", dm, dx)
        total = self.count + n
        if self.count == 0:  # the first block: its own moments (no merge term, whose 0 x inf would be NaN)
            self.m2, self.cross, self.mean, self.count = m2, cross, mean, total
            return
        delta = mean - self.mean
        w = self.count * n / total
        self.m2 += m2 + delta ** 2 * w
        self.cross += cross + delta[0] * delta[1] * w
        self.mean += delta * n / total
        self.count = total

    def joints(self, names, label="compare"):
        """Per joint: rms, max, correlation, scale, offset (None where the model's effort is constant)."""
        out = []
        rms = self.residual.rms
        for j, name in enumerate(names):
            var_model, var_measured = self.m2[0, j], self.m2[1, j]
            # a constant is exactly so: its round-off variance (x - mean, 1 ulp) fits no line
            if self.low[0, j] == self.high[0, j]:
                var_model = 0.0
            if self.low[1, j] == self.high[1, j]:
                var_measured = 0.0
            with np.errstate(all="ignore"):
                scale = float(self.cross[j] / var_model) if var_model > 0 else None
                denominator = np.sqrt(var_model) * np.sqrt(var_measured)
                row = {"joint": name, "rms": float(rms[j]), "max": float(self.residual.peak[j]),
                       "correlation": float(np.clip(self.cross[j] / denominator, -1, 1)) if denominator > 0
                       else None,
                       "scale": scale,
                       "offset": None if scale is None else float(self.mean[1, j] - scale * self.mean[0, j])}
            bad = [key for key, value in row.items() if isinstance(value, float) and not np.isfinite(value)]
            if bad or not np.isfinite([var_model, var_measured, self.cross[j]]).all():
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
