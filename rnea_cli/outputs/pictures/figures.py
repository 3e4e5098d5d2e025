"""The figures of a run, drawn by matplotlib into SVG text (or a file for `rnea plot`).

Each figure comes with where its axes stand in the SVG (user units) and what data range they
show, so that a reader (or a test) can map a drawn point back to the data. Markers carry ids:
`peak-<joint>` at each joint's largest |effort|, `violation-<joint>-<quantity>` at the first
sample over a limit.

Every text of a figure is drawn as written, on one line (names come from the user's files): a joint
named 'a$\\x$' is not mathtext (text.parse_math off), a legend entry '_x' is not hidden (the legend
is given its labels), a line break is drawn as \\n (errors.printable)."""

import io
import re

import numpy as np

from ...errors import printable

COLORS = {"curve": "#1f5fa8", "band": "#d9e6f5", "margin": "#f2c14e", "limit": "#c0392b", "measured": "#2e8b57",
          "ok": "#2e8b57", "near": "#e0a800", "over": "#c0392b"}


def pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"text.parse_math": False, "text.usetex": False,  # (names drawn as written)
                         "svg.fonttype": "none", "font.size": 9, "axes.titlesize": 10, "figure.dpi": 72,
                         "savefig.dpi": 72, "axes.grid": True, "grid.alpha": 0.3})
    return plt


def svg(fig, salt):
    """(the figure as inline SVG text, its axes' positions and data ranges)."""
    plt = pyplot()
    plt.rcParams["svg.hashsalt"] = salt  # stable, and unique per figure of one document
    out = io.StringIO()
    fig.savefig(out, format="svg", bbox_inches=None, metadata={"Date": None, "Creator": None})
    height = fig.get_size_inches()[1] * 72  # SVG user units are points, y downwards
    axes = []
    for ax in fig.axes:  # where savefig drew them (the layout is fixed: no tight bbox)
        box = ax.get_position()
        width = fig.get_size_inches()[0] * 72
        (t0, t1), (v0, v1) = ax.get_xlim(), ax.get_ylim()
        axes.append({"name": ax.get_gid() or "", "x0": box.x0 * width, "x1": box.x1 * width,
                     "y0": height * (1 - box.y0), "y1": height * (1 - box.y1), "t0": t0, "t1": t1, "v0": v0,
                     "v1": v1})
    plt.close(fig)
    text = out.getvalue()
    return text[text.index("<svg"):], axes


def _limit_lines(ax, limit, margin, color_key="limit", symmetric=True):
    if limit is None:
        return
    values = (limit, -limit) if symmetric else limit
    for v in values:
        ax.axhline(v, color=COLORS[color_key], lw=1, ls="--")
    if symmetric and margin != 1:
        for v in (margin * limit, -margin * limit):
            ax.axhline(v, color=COLORS["margin"], lw=1, ls=":")


def joint_figure(plt, name, effort, velocity, position, limits, checks, time_label, units):
    """Three stacked plots of one joint: effort in its ±limit band, velocity, position in its range."""
    fig, axes = plt.subplots(3, 1, figsize=(8.5, 5.4), sharex=True)
    fig.subplots_adjust(left=0.1, right=0.98, top=0.93, bottom=0.09, hspace=0.18)
    fig.suptitle(printable(name), fontsize=11)
    for ax, series, title, unit in zip(axes, (effort, velocity, position), ("effort", "velocity", "position"),
                                       units):
        ax.set_gid(clean_id(f"{name}:{title}"))
        if series is None:
            ax.text(0.5, 0.5, "not a column of the trajectory (a mimic follower)", ha="center", va="center",
                    transform=ax.transAxes)
            continue
        t, v = series.points()
        ax.plot(t, v, color=COLORS["curve"], lw=1)
        ax.set_ylabel(f"{title} ({unit})")
    effort_check = checks.get("effort")
    if effort_check is not None:
        limit = effort_check.limit
        axes[0].axhspan(-limit, limit, color=COLORS["band"], zorder=0)
        _limit_lines(axes[0], limit, effort_check.margin)
    velocity_check = checks.get("velocity")
    if velocity_check is not None:
        _limit_lines(axes[1], velocity_check.limit, velocity_check.margin)
    position_check = checks.get("position")
    if position_check is not None:
        _limit_lines(axes[2], position_check.limit, 1.0, symmetric=False)
    if effort is not None:
        t, v = effort.points()
        if len(v):
            k = int(np.argmax(np.abs(v)))
            axes[0].plot([t[k]], [v[k]], marker="o", ms=5, color=COLORS["limit"], ls="none", gid=clean_id(f"peak-{name}"))
    for quantity, ax in (("effort", axes[0]), ("velocity", axes[1]), ("position", axes[2])):
        check = checks.get(quantity)
        if check is not None and not check.ok and check.first_value is not None:
            ax.plot([check.first_at], [check.first_value], marker="X", ms=8, color=COLORS["over"], ls="none",
                    gid=clean_id(f"violation-{name}-{quantity}"))
    axes[-1].set_xlabel(time_label)
    return fig


def utilisation_figure(plt, rows):
    """Horizontal bars: per joint and quantity, the largest |value| / allowed (100 % at the line)."""
    height = max(2.0, 0.22 * len(rows) + 0.8)
    fig, ax = plt.subplots(figsize=(8.5, height))
    fig.subplots_adjust(left=0.3, right=0.97, top=0.97 - 0.3 / height, bottom=0.5 / height)
    ax.set_gid("utilisation")
    labels = [printable(label) for label, _ in rows]
    values = np.array([min(use, 10.0) for _, use in rows])  # beyond 1000 % the bar stops at the frame
    colors = [COLORS["ok"] if u < 0.8 else COLORS["near"] if u <= 1 else COLORS["over"] for _, u in rows]
    ax.barh(np.arange(len(rows)), 100 * values, color=colors)
    ax.set_yticks(np.arange(len(rows)), labels)
    ax.invert_yaxis()
    ax.axvline(100, color=COLORS["limit"], lw=1, ls="--")
    ax.set_xlabel("use of the limit (%)")
    ax.set_xlim(0, max(110, 100 * values.max() * 1.05) if len(values) else 110)
    return fig


def motor_figure(plt, name, grid, drive, margin):
    """Motor torque against motor speed: the operating points, the envelope, the continuous torque."""
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    fig.subplots_adjust(left=0.15, right=0.97, top=0.9, bottom=0.14)
    ax.set_gid(clean_id(f"{name}:motor"))
    ax.set_title(printable(f"{name}: motor operating points"))
    x, y = grid.points()
    ax.plot(x, y, ls="none", marker=".", ms=3, color=COLORS["curve"])
    if drive.envelope is not None:
        pts = drive.envelope_points()
        speed = np.concatenate([-pts[::-1, 0], pts[:, 0]])
        torque = np.concatenate([pts[::-1, 1], pts[:, 1]])
        ax.plot(speed, margin * torque, color=COLORS["limit"], lw=1)
        ax.plot(speed, -margin * torque, color=COLORS["limit"], lw=1)
    if drive.peak_torque is not None:
        _limit_lines(ax, drive.peak_torque, margin)
    if drive.continuous_torque is not None:
        for v in (drive.continuous_torque, -drive.continuous_torque):
            ax.axhline(v, color=COLORS["margin"], lw=1, ls="-.")
    if drive.max_speed is not None:
        for v in (drive.max_speed, -drive.max_speed):
            ax.axvline(v, color=COLORS["limit"], lw=1, ls="--")
    ax.set_xlabel("motor speed (rad/s)")
    ax.set_ylabel("motor torque (N·m)")
    return fig


def curves_figure(plt, title, named_series, ylabel, time_label, gid):
    """Several curves on one plot (power of every joint, or one quantity of chosen joints)."""
    fig, ax = plt.subplots(figsize=(8.5, 3.4))
    fig.subplots_adjust(left=0.1, right=0.98, top=0.9, bottom=0.15)
    ax.set_gid(gid)
    ax.set_title(printable(title))
    lines = []
    for _, series in named_series:
        t, v = series.points()
        lines += ax.plot(t, v, lw=1)
    if len(named_series) > 1:
        ax.legend(lines, [printable(name) for name, _ in named_series], fontsize=7, ncol=min(len(named_series), 4))
    ax.set_xlabel(time_label)
    ax.set_ylabel(ylabel)
    return fig


def measured_figure(plt, name, measured, model, residual, unit, time_label):
    fig, axes = plt.subplots(2, 1, figsize=(8.5, 3.8), sharex=True)
    fig.subplots_adjust(left=0.1, right=0.98, top=0.9, bottom=0.13, hspace=0.15)
    fig.suptitle(printable(f"{name}: measured and model effort"), fontsize=10)
    lines = []
    for series, color in ((model, COLORS["curve"]), (measured, COLORS["measured"])):
        t, v = series.points()
        lines += axes[0].plot(t, v, lw=1, color=color)
    axes[0].legend(lines, ["model", "measured"], fontsize=7)
    axes[0].set_ylabel(f"effort ({unit})")
    t, v = residual.points()
    axes[1].plot(t, v, lw=1, color=COLORS["limit"])
    axes[1].set_ylabel(f"residual ({unit})")
    axes[1].set_xlabel(time_label)
    axes[0].set_gid(clean_id(f"{name}:measured"))
    axes[1].set_gid(clean_id(f"{name}:residual"))
    return fig


def clean_id(text):
    """An element id of the text: as it is when made of letters, digits and _.:- only, else those
    kept, the others as _, and a digest of the whole text (so 'a b' and 'a_b' stay two ids)."""
    kept = re.sub(r"[^A-Za-z0-9_.:-]", "_", text)
    if kept == text:
        return text
    import hashlib

    return f"{kept}_{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"
