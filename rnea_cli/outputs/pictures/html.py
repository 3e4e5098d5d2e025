"""`rnea report`: one self-contained HTML file (inline SVG and CSS; no script, font, image or style
fetched from anywhere), so that it opens offline from a CI artifact."""

import html
import json

from .. import checkreport
from ..report import percent, time_text, unit
from . import figures

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 1.5em auto;
       max-width: 62em; color: #222; line-height: 1.4; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; margin-top: 1.8em;
     border-bottom: 1px solid #ddd; }
.verdict { font-size: 1.15em; font-weight: 600; padding: 0.5em 0.8em; border-radius: 4px; }
.ok { background: #e6f4ea; color: #1e6b34; } .fail { background: #fdecea; color: #a12a1e; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { padding: 0.2em 0.6em; border-bottom: 1px solid #eee; text-align: right; }
th:first-child, td:first-child, th:nth-child(2), td:nth-child(2) { text-align: left; }
td.over { color: #a12a1e; font-weight: 600; } td.near { color: #8a6d00; }
figure { margin: 1em 0; } figure svg { width: 100%; height: auto; } figure.small { max-width: 36em; }
figcaption { font-size: 0.8em; color: #555; }
pre { font-size: 0.8em; background: #f7f7f7; padding: 0.6em; overflow-x: auto; }
"""


def document(run, check, recorder, strict, facts, tree_text):
    """The report's HTML text. The figures are drawn in worker processes where there are cores to spare."""
    jobs = []
    page = _page(run, check, recorder, strict, facts, tree_text, jobs)
    drawn = _draw_all(jobs)
    return page.format(*drawn) if jobs else page


def _draw_all(jobs):
    """The SVG <figure> of each job, in order: two worker processes (forked, matplotlib already
    imported) when there are two cores and enough figures, else here."""
    import os

    from ...workers import parallel, usable_cores

    figures.pyplot()  # imported once, before any fork
    if hasattr(os, "fork") and usable_cores() > 1 and len(jobs) > 3:
        return parallel(_draw, [(job,) for job in jobs], 2, fork=True)  # (the drawing uses no polars)
    return [_draw(job) for job in jobs]


def _draw(job):
    builder, args, salt, caption, data = job
    plt = figures.pyplot()
    return _figure(plt, getattr(figures, builder)(plt, *args), salt, caption, data)


def _page(run, check, recorder, strict, facts, tree_text, jobs):
    """The page with a {} where each figure goes (the figures are listed in jobs)."""
    model, coords = run.model, run.coords
    time_label = "time (s)" if recorder.time_known else "sample"
    failed = bool(check.violations) or (strict and bool(check.unchecked))
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
             f"<title>rnea report: {_e(run.traj.label)}</title><style>{STYLE}</style></head><body>",
             f"<h1>{_e(model.name or 'robot')}: {_e(run.traj.label)}</h1>",
             f"<p class=\"verdict {'fail' if failed else 'ok'}\">{_e(checkreport.verdict(check, strict))}</p>",
             _limit_table(model, check, recorder.time_known)]
    salt = iter(range(10 ** 6))
    rows = [(f"{c.joint} {c.quantity}", max(c.utilisation, 0.0)) for c in check.checks]
    if rows:
        parts.append("<h2>Use of every limit</h2>")
        parts.append(_job(jobs, "utilisation_figure", (rows,), f"rnea{next(salt)}",
                          "the largest value over the run as a share of what is allowed; the line is 100 %"))
    parts.append("<h2>Joints</h2>")
    by_joint = {}
    for c in check.checks:
        by_joint.setdefault(c.joint, {})[c.quantity] = c
    columns = {name: k for k, name in enumerate(coords.joint_names)}
    peaks = run.pipeline.peaks["effort"]
    for i, joint in enumerate(model.joints):
        k = columns.get(joint.name)
        units = (unit(joint), unit(joint, "velocity"), unit(joint, "position"))
        args = (joint.name, recorder.effort[k] if k is not None else None, recorder.velocity[i],
                recorder.position[i], joint.limits, by_joint.get(joint.name, {}), time_label, units)
        caption = f"{_e(joint.name)}: effort, velocity and position"
        if k is not None:
            when = f"t = {time_text(peaks.time[k])} s" if recorder.time_known else f"sample {int(peaks.sample[k])}"
            caption += f"; peak |effort| {peaks.peak[k]:.6g} {units[0]}" + (
                f" at {when}" if peaks.peak[k] > 0 else "")  # (a joint that never pulls has no peak's time)
        parts.append(_job(jobs, "joint_figure", args, f"rnea{next(salt)}", caption,
                          {"joint": joint.name, "peak": float(peaks.peak[k]) if k is not None else None}))
    drives = run.pipeline.drives
    if recorder.motor:
        parts.append("<h2>Motors</h2>")
        for k, grid in recorder.motor.items():
            name = coords.joint_names[k]
            parts.append(_job(jobs, "motor_figure", (name, grid, drives[name], check.margin), f"rnea{next(salt)}",
                              f"{_e(name)}: motor torque against speed, with the envelope (solid), peak torque "
                              "(dashed) and continuous torque (dash-dot)", small=True))
    if recorder.power is not None and recorder.time_known:
        parts.append("<h2>Power</h2>")
        parts.append(_job(jobs, "curves_figure", ("power delivered at each joint", list(zip(coords.joint_names,
                                                                                             recorder.power)),
                                                   "power (W)", time_label, "power"), f"rnea{next(salt)}",
                          "effort times joint velocity"))
    if recorder.measured is not None:
        parts.append("<h2>Measured against model</h2>")
        for k, joint in enumerate(coords.joints):
            args = (joint.name, recorder.measured[k], recorder.effort[k], recorder.residual[k], unit(joint),
                    time_label)
            parts.append(_job(jobs, "measured_figure", args, f"rnea{next(salt)}",
                              f"{_e(joint.name)}: measured and model effort, and their difference"))
    parts.append("<h2>The robot</h2>")
    parts.append(f"<p>{facts['dof']} degrees of freedom{' + 6 of the floating base' if facts['floating'] else ''}, "
                 f"total mass {facts['total_mass']:.6g} kg, root link {_e(facts['root_link'])}; "
                 f"{recorder.samples} samples.</p><pre>{_e(tree_text)}</pre>")
    if facts["warnings"]:
        parts.append("<ul>" + "".join(f"<li>{_e(w)}</li>" for w in facts["warnings"]) + "</ul>")
    parts.append("</body></html>\n")
    return "\n".join(p.replace("{", "{{").replace("}", "}}") if p != "{}" else p for p in parts)


def _job(jobs, builder, args, salt, caption, data=None, small=False):
    """A figure to draw; its place in the page."""
    jobs.append((builder, args, salt, caption, dict(data or {}, small=small) if small or data else None))
    return "{}"


def _figure(plt, fig, salt, caption, data=None):
    text, axes = figures.svg(fig, salt)
    small = bool(data and data.pop("small", False))
    attributes = f" data-axes='{_e(json.dumps(axes))}'" + (f" data-info='{_e(json.dumps(data))}'" if data else "")
    kind = ' class="small"' if small else ""
    return f"<figure{kind}{attributes}>{text}<figcaption>{caption}</figcaption></figure>"


def _limit_table(model, check, time_known):
    joints = {j.name: j for j in model.joints}
    head = "<table><tr>" + "".join(f"<th>{t}</th>" for t in ("joint", "quantity", "worst", "limit", "use",
                                                               "first over at", "samples over")) + "</tr>"
    rows = []
    for c in check.checks:
        u = unit(joints[c.joint], c.quantity)
        first = checkreport.first_over(c, time_known)
        style = "over" if not c.ok else "near" if c.utilisation >= 0.8 else ""
        rows.append(f"<tr><td>{_e(c.joint)}</td><td>{_e(c.quantity)}</td><td>{c.worst:.4g} {u}</td>"
                    f"<td>{_e(checkreport.limit_text(c, u))}</td><td class=\"{style}\">{percent(c.utilisation)}"
                    f"</td><td>{first}</td><td>{c.count}</td></tr>")
    for joint, quantity in check.unchecked:
        rows.append(f"<tr><td>{_e(joint)}</td><td>{quantity}</td><td></td><td>none</td><td>unchecked</td>"
                    "<td></td><td></td></tr>")
    return head + "".join(rows) + "</table>"


def _e(text):
    return html.escape(str(text), quote=True)
