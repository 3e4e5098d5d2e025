"""Running statistics over a streamed trajectory, and the human-readable report of them."""

import numpy as np


def unit(joint, kind="effort"):
    """SI unit of a joint quantity: effort N·m / N, velocity rad/s / m/s, position rad / m."""
    angular = joint.is_angular
    return {"effort": "N·m" if angular else "N", "rms_effort": "N·m" if angular else "N",
            "velocity": "rad/s" if angular else "m/s", "position": "rad" if angular else "m"}[kind]


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

    @property
    def rms(self):
        return np.sqrt(self.sumsq / max(self.count, 1))


def _fmt(x, digits=4):
    return "—" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{digits}g}"


def utilisation_style(fraction):
    return "green" if fraction < 0.8 else "yellow" if fraction <= 1.0 else "bold red"


def torque_table(model, peaks, has_time, plain):
    """A Rich table: joint, unit, peak |tau| and when, RMS, effort limit, peak as % of limit."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None if plain else box.SIMPLE_HEAD, pad_edge=False)
    for title, justify in (("joint", "left"), ("peak |τ|", "right"), ("at " + ("t (s)" if has_time else "sample"),
                           "right"), ("RMS τ", "right"), ("limit", "right"), ("peak/limit", "right")):
        table.add_column(title, justify=justify, no_wrap=True)
    for i, joint in enumerate(model.joints):
        u = unit(joint)
        effort = joint.limits.effort
        when = _fmt(float(peaks.time[i]), 6) if has_time else str(int(peaks.sample[i]))
        if effort:
            share = peaks.peak[i] / effort
            pct = Text(f"{100 * share:.0f} %", style=None if plain else utilisation_style(share))
            limit = f"{effort:g} {u}"
        else:
            pct, limit = Text("—"), "none"
        table.add_row(joint.name, f"{_fmt(peaks.peak[i])} {u}", when, f"{_fmt(peaks.rms[i])} {u}", limit, pct)
    return table


def summary_line(model, peaks):
    count = peaks.count
    span = ""
    if peaks.t_first is not None:
        span = f" over {peaks.t_last - peaks.t_first:.6g} s"
    shares = [(peaks.peak[i] / j.limits.effort, i) for i, j in enumerate(model.joints) if j.limits.effort]
    worst = ""
    if shares:
        share, i = max(shares)
        worst = f"; highest load {100 * share:.0f} % of limit at {model.joints[i].name}"
    return f"{model.name or 'robot'}: {model.n} joints, {count} samples{span}{worst}"
