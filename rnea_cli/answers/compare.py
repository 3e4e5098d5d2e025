"""Measured against model: per joint, the residual (measured - model effort), its RMS and largest
size, the correlation, and the least-squares fit measured = scale model + offset. Streamed with
pairwise-merged moments (Chan et al.), so that long runs keep their digits."""

import numpy as np

from ..errors import RneaError


class Comparison:
    def __init__(self, n):
        self.count = 0
        self.mean = np.zeros((2, n))  # model, measured
        self.m2 = np.zeros((2, n))  # sums of squared deviations
        self.cross = np.zeros(n)  # sum of (model - mean)(measured - mean)
        self.sumsq = np.zeros(n)  # of the residual
        self.largest = np.zeros(n)
        self.largest_sample = np.zeros(n, dtype=int)

    def update(self, start, model, measured):
        n = len(model)
        if n == 0:
            return
        residual = measured - model
        self.sumsq += np.einsum("ij,ij->j", residual, residual)
        size = np.abs(residual)
        k = size.argmax(axis=0)
        better = size[k, np.arange(size.shape[1])] > self.largest
        self.largest[better] = size[k, np.arange(size.shape[1])][better]
        self.largest_sample[better] = start + k[better]
        mean = np.stack([model.mean(axis=0), measured.mean(axis=0)])
        dm, dx = model - mean[0], measured - mean[1]
        m2 = np.stack([np.einsum("ij,ij->j", dm, dm), np.einsum("ij,ij->j", dx, dx)])
        cross = np.einsum("ij,ij->j", dm, dx)
        total = self.count + n
        delta = mean - self.mean
        self.m2 += m2 + delta ** 2 * self.count * n / total
        self.cross += cross + delta[0] * delta[1] * self.count * n / total
        self.mean += delta * n / total
        self.count = total

    def joints(self, names):
        """Per joint: rms, max, correlation, scale, offset (None where the model's effort is constant)."""
        out = []
        for j, name in enumerate(names):
            var_model, var_measured = self.m2[0, j], self.m2[1, j]
            scale = float(self.cross[j] / var_model) if var_model > 0 else None
            denominator = np.sqrt(var_model * var_measured)
            out.append({"joint": name, "rms": float(np.sqrt(self.sumsq[j] / max(self.count, 1))),
                        "max": float(self.largest[j]),
                        "correlation": float(np.clip(self.cross[j] / denominator, -1, 1)) if denominator > 0
                        else None,
                        "scale": scale,
                        "offset": None if scale is None else float(self.mean[1, j] - scale * self.mean[0, j])})
        return out


def measured_torque(chunk, coords, drives, effort_is, label):
    """(N, n) measured joint torque: the effort columns, or currents through the drives."""
    effort = chunk.data.get("effort")
    if effort is None:
        raise RneaError(label, None, "no measured effort: give effort_<joint> columns (or --columns effort=..., "
                                     "a preset, a bag whose JointState messages carry effort)")
    if effort_is == "torque":
        return effort
    factors = []
    for joint in coords.joints:
        drive = drives.get(joint.name)
        if drive is None or drive.torque_constant is None:
            raise RneaError("--effort-is current", None, f"joint {joint.name} has no torque_constant in --actuators")
        factors.append(drive.torque_constant * drive.gear_ratio * drive.efficiency)
    return effort * np.array(factors)
