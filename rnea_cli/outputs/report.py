"""The human-readable reports on stderr: torque, actuator and wrench tables, the summary line."""

import numpy as np

from ..text import fmt, percent, time_text  # noqa: F401  (report's importers use them from here too)


def unit(joint, kind="effort"):
    """SI unit of a joint quantity: effort N·m / N, velocity rad/s / m/s, position rad / m,
    acceleration rad/s² / m/s²; at the motor, N·m and rad/s."""
    angular = joint.is_angular
    return {"effort": "N·m" if angular else "N", "rms_effort": "N·m" if angular else "N",
            "velocity": "rad/s" if angular else "m/s", "position": "rad" if angular else "m",
            "acceleration": "rad/s²" if angular else "m/s²",
            "motor_torque": "N·m", "motor_rms": "N·m", "envelope": "N·m", "motor_speed": "rad/s"}[kind]


def add_row(table, *cells):
    """Add a row whose text is shown as is (a joint may be named 'j[/x]'); long names fold."""
    from rich.text import Text

    from ..errors import printable

    table.columns[0].no_wrap, table.columns[0].overflow = False, "fold"
    table.add_row(*(Text(printable(c, 500)) if isinstance(c, str) else c for c in cells))


SPARKLINE_COLUMNS = 42  # a sparkline's 40 characters and the gap before it


def print_whole(console, table, with_sparklines=None):
    """Print a table at its natural width, even on a narrower terminal, whose lines then wrap (rich
    would squeeze its columns, the first down to nothing). with_sparklines: a function making the
    same table with a column of sparklines, printed instead where the terminal has room for them."""
    if not getattr(console, "is_terminal", False):
        console.print(table)
        return
    needed = _natural_width(console, table)
    if with_sparklines is not None and console.width >= needed + SPARKLINE_COLUMNS:
        table = with_sparklines()
        needed = _natural_width(console, table)
    width = console.width
    console.width = max(width, needed)  # (print's own width= is capped at the console's)
    try:
        console.print(table)
    finally:
        console.width = width


def _natural_width(console, table):
    from rich.measure import Measurement

    return Measurement.get(console, console.options.update(width=10_000), table).maximum


def utilisation_style(fraction):
    return "green" if fraction < 0.8 else "yellow" if fraction <= 1.0 else "bold red"


def torque_table(model, peaks, has_time, plain, sparklines=None):
    """A Rich table: joint, unit, peak |tau| and when, RMS, effort limit, peak as % of limit (and,
    on a terminal, |tau|/limit over time)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None if plain else box.SIMPLE_HEAD, pad_edge=False)
    for title, justify in (("joint", "left"), ("peak |τ|", "right"), ("at " + ("t (s)" if has_time else "sample"),
                           "right"), ("RMS τ", "right"), ("limit", "right"), ("peak/limit", "right")) + (
                           (("|τ|/limit over time", "left"),) if sparklines is not None else ()):
        table.add_column(title, justify=justify, no_wrap=True)
    for i, joint in enumerate(model.joints):
        u = unit(joint)
        effort = joint.limits.effort
        at = time_text(float(peaks.time[i])) if has_time else str(int(peaks.sample[i]))
        if effort:
            share = peaks.peak[i] / effort
            pct = Text(percent(share), style=None if plain else utilisation_style(share))
            limit = f"{effort:g} {u}"
        else:
            pct, limit = Text("—"), "none"
        spark = [sparklines.line(i)] if sparklines is not None else []
        add_row(table, joint.name, f"{fmt(peaks.peak[i])} {u}", at, f"{fmt(peaks.rms[i])} {u}", limit, pct, *spark)
    return table


def actuator_table(coords, peaks, motors, plain):
    """Peaks of the actuator terms per joint: friction, and with drives armature and motor torque."""
    from rich import box
    from rich.table import Table

    table = Table(box=None if plain else box.SIMPLE_HEAD, pad_edge=False)
    columns = [("friction", "peak |τ friction|")] + ([("armature", "peak |τ armature|"),
                                                      ("motor", "peak |τ motor|")] if motors else [])
    table.add_column("joint", no_wrap=True)
    for _, title in columns:
        table.add_column(title, justify="right", no_wrap=True)
    for i, joint in enumerate(coords.joints):
        u = unit(joint)
        add_row(table, joint.name, *(f"{fmt(peaks[key].peak[i])} {u}" for key, _ in columns))
    return table


def base_wrench_line(base, has_time):
    """The floating base's wrench in words: what contacts or supports must provide."""
    def when(k):
        if base.peak[k] == 0:
            return "every sample"
        return f"t = {time_text(base.time[k])} s" if has_time else f"sample {base.sample[k]}"

    return (f"base wrench: peak force {fmt(base.peak[0])} N at {when(0)}, peak moment {fmt(base.peak[1])} N·m "
            f"at {when(1)}. It is what contacts or supports must supply: zero only when the motion is "
            "dynamically consistent with no contact at all.")


def wrench_table(joint_names, force, moment, has_time, plain):
    """Per joint: peak force and moment magnitude that the joint's structure carries."""
    from rich import box
    from rich.table import Table

    table = Table(box=None if plain else box.SIMPLE_HEAD, pad_edge=False)
    at = "at " + ("t (s)" if has_time else "sample")
    for title in ("joint", "peak |force|", at, "peak |moment|", at):
        table.add_column(title, justify="left" if title == "joint" else "right", no_wrap=True)
    for i, name in enumerate(joint_names):
        def when(acc):
            return time_text(float(acc.time[i])) if has_time else str(int(acc.sample[i]))
        add_row(table, name, f"{fmt(force.peak[i])} N", when(force), f"{fmt(moment.peak[i])} N·m", when(moment))
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
        worst = f"; highest load {percent(share)} of limit at {model.joints[i].name}"
    return (f"{model.name or 'robot'}: {model.n} joint{'s' if model.n != 1 else ''}, "
            f"{count} sample{'s' if count != 1 else ''}{span}{worst}")


SPARKS = "▁▂▃▄▅▆▇█"


class Sparklines:
    """|x| / limit over time per column, kept as the peaks of at most 2 * width stretches, drawn as
    one line of block characters each ('!' where the limit is exceeded)."""

    def __init__(self, limits, width=40):
        self.limits = np.asarray(limits, dtype=float)  # (n,), 0 or NaN: no line
        self.width, self.stretch, self.values, self.partial = width, 1, [], None

    def update(self, x):
        with np.errstate(divide="ignore", invalid="ignore"):
            use = np.abs(x) / np.where(self.limits > 0, self.limits, np.nan)
        if self.partial is not None:
            use = np.vstack([self.partial, use])
        whole = len(use) // self.stretch * self.stretch
        if whole:
            self.values.extend(np.fmax.reduce(use[:whole].reshape(-1, self.stretch, use.shape[1]), axis=1))
        self.partial = use[whole:] if whole < len(use) else None
        while len(self.values) > 2 * self.width:
            pairs = np.array(self.values[: len(self.values) // 2 * 2])
            merged = np.fmax(pairs[0::2], pairs[1::2])
            self.values = list(merged) + self.values[len(pairs):]
            self.stretch *= 2

    def line(self, k):
        values = [v[k] for v in self.values] + ([np.fmax.reduce(self.partial[:, k])] if self.partial is not None
                                                else [])
        values = [v for v in values if np.isfinite(v)]
        if not values:
            return ""
        n = len(values)
        cells = [max(values[c * n // self.width:max((c + 1) * n // self.width, c * n // self.width + 1)])
                 for c in range(min(self.width, n))]
        return "".join("!" if x > 1 else SPARKS[min(int(x * len(SPARKS)), len(SPARKS) - 1)] for x in cells)


def energy_table(coords, energy, plain):
    """Per joint: peak power, energy drawn (P > 0) and given back (P < 0) over the run."""
    from rich import box
    from rich.table import Table

    table = Table(box=None if plain else box.SIMPLE_HEAD, pad_edge=False)
    for title in ("joint", "peak |power|", "energy drawn", "energy regenerated"):
        table.add_column(title, justify="left" if title == "joint" else "right", no_wrap=True)
    drawn, regenerated = energy.drawn, energy.regenerated
    for i, joint in enumerate(coords.joints):
        add_row(table, joint.name, f"{fmt(energy.peaks.peak[i])} W", f"{fmt(drawn[i])} J",
                f"{fmt(0.0 - regenerated[i])} J")
    return table


COMPARISON = ("rms", "max", "correlation", "scale", "offset")


def comparison_csv(joints):
    """`rnea compare --format csv`: a row per joint, written by the csv module (a joint's name may
    hold a comma, a quote or a line break); an undetermined value is an empty cell."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(("joint",) + COMPARISON)
    writer.writerows([j["joint"]] + ["" if j[k] is None else repr(j[k]) for k in COMPARISON] for j in joints)
    return out.getvalue()


def comparison_table(coords, joints, plain):
    """`rnea compare`: per joint the residual's RMS and max, the correlation and the fit."""
    from rich import box
    from rich.table import Table

    table = Table(box=None if plain else box.SIMPLE_HEAD, pad_edge=False)
    for title in ("joint", "RMS residual", "max |residual|", "correlation", "fit: scale", "offset"):
        table.add_column(title, justify="left" if title == "joint" else "right", no_wrap=True)
    for joint, j in zip(coords.joints, joints):
        u = unit(joint)
        add_row(table, j["joint"], f"{fmt(j['rms'])} {u}", f"{fmt(j['max'])} {u}", fmt(j["correlation"]),
                fmt(j["scale"]), "—" if j["offset"] is None else f"{fmt(j['offset'])} {u}")
    return table
