"""The human-readable reports: torque, actuator, wrench and limit tables; robot facts for `info`."""

import numpy as np


def unit(joint, kind="effort"):
    """SI unit of a joint quantity: effort N·m / N, velocity rad/s / m/s, position rad / m."""
    angular = joint.is_angular
    return {"effort": "N·m" if angular else "N", "rms_effort": "N·m" if angular else "N",
            "velocity": "rad/s" if angular else "m/s", "position": "rad" if angular else "m"}[kind]


def _row(table, *cells):
    """Add a row whose text is shown as is (a joint may be named 'j[/x]'); long names fold."""
    from rich.text import Text

    table.columns[0].no_wrap, table.columns[0].overflow = False, "fold"
    table.add_row(*(Text(c) if isinstance(c, str) else c for c in cells))


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
        _row(table, joint.name, f"{_fmt(peaks.peak[i])} {u}", when, f"{_fmt(peaks.rms[i])} {u}", limit, pct)
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
        _row(table, joint.name, *(f"{_fmt(peaks[key].peak[i])} {u}" for key, _ in columns))
    return table


def base_wrench_line(base, has_time):
    """The floating base's wrench in words: what contacts or supports must provide."""
    def when(k):
        if base.peak[k] == 0:
            return "every sample"
        return f"t = {base.time[k]:.6g} s" if has_time else f"sample {base.sample[k]}"

    return (f"base wrench: peak force {_fmt(base.peak[0])} N at {when(0)}, peak moment {_fmt(base.peak[1])} N·m "
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
            return _fmt(float(acc.time[i]), 6) if has_time else str(int(acc.sample[i]))
        _row(table, name, f"{_fmt(force.peak[i])} N", when(force), f"{_fmt(moment.peak[i])} N·m", when(moment))
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
    return (f"{model.name or 'robot'}: {model.n} joint{'s' if model.n != 1 else ''}, "
            f"{count} sample{'s' if count != 1 else ''}{span}{worst}")


# -- rnea check ------------------------------------------------------------------------------------

def _limit_text(check, u):
    if check.quantity == "position":
        lower, upper = check.limit
        return f"[{lower:.6g}, {upper:.6g}] {u}"
    if check.margin != 1:
        return f"{check.margin:g} × {check.limit:.6g} {u}"
    return f"{check.limit:.6g} {u}"


def verdict(result, strict):
    """One line: OK or FAIL, and why."""
    bad = result.violations
    unchecked = result.unchecked
    if bad:
        what = ", ".join(f"{c.joint} {c.quantity}" for c in bad[:6]) + (", ..." if len(bad) > 6 else "")
        line = f"FAIL: {len(bad)} limit{'s' if len(bad) > 1 else ''} exceeded ({what})"
    elif strict and unchecked:
        line = f"FAIL: {len(unchecked)} unchecked (--strict)"
    else:
        line = f"OK: {len(result.checks)} checks within limits over {result.samples} samples"
    if unchecked:
        line += f"; {len(unchecked)} unchecked (no limit): " + ", ".join(f"{j} {q}" for j, q in unchecked[:6]) + (
            ", ..." if len(unchecked) > 6 else "")
    if result.margin != 1.0:
        line += f"; margin {result.margin:g}"
    if result.effort_terms:
        line += f"; effort = tau + {' + '.join(result.effort_terms)}"
    return line


def check_table(model, result, has_time, plain):
    from rich import box
    from rich.table import Table
    from rich.text import Text

    joints = {j.name: j for j in model.joints}
    table = Table(box=None if plain else box.SIMPLE_HEAD, pad_edge=False)
    for title in ("joint", "quantity", "worst", "limit", "use", "first over at", "samples over"):
        table.add_column(title, justify="left" if title in ("joint", "quantity") else "right", no_wrap=True)
    for c in result.checks:
        u = unit(joints[c.joint], c.quantity)
        style = None if plain else utilisation_style(c.utilisation)
        first = "—"
        if c.first_sample is not None:
            first = f"{c.first_time:.6g} s" if has_time and c.first_time is not None else f"sample {c.first_sample}"
        elif c.quantity == "rms_effort" and not c.ok:
            first = "whole run"
        quantity = c.quantity + (f" (τ+{'+'.join(c.terms)})" if c.terms else "")
        _row(table, c.joint, quantity, f"{c.worst:.4g} {u}", _limit_text(c, u),
                      Text(f"{100 * c.utilisation:.0f} %", style=style), first, str(c.count))
    for joint, quantity in result.unchecked:
        _row(table, joint, quantity, "", "none", Text("unchecked", style=None if plain else "dim"), "", "")
    return table


def check_json(model, result, strict, source):
    def entry(c):
        return {"joint": c.joint, "quantity": c.quantity, "value": c.worst,
                "limit": list(c.limit) if c.quantity == "position" else c.limit, "allowed": c.allowed,
                "utilisation": c.utilisation, "time": c.first_time, "sample": c.first_sample, "count": c.count,
                "worst_time": c.worst_time, "worst_sample": c.worst_sample if c.quantity != "rms_effort" else None}

    ok = not result.violations and not (strict and result.unchecked)
    return {
        "ok": ok,
        "robot": model.name,
        "trajectory": source,
        "samples": result.samples,
        "margin": result.margin,
        "effort_includes": list(result.effort_terms),
        "violations": [entry(c) for c in result.violations],
        "unchecked": [{"joint": j, "quantity": q} for j, q in result.unchecked],
        "checks": [entry(c) for c in result.checks],
    }


def check_junit(model, result, strict, source):
    """JUnit XML: one test case per joint and quantity; a <failure> per violation."""
    from xml.sax.saxutils import quoteattr

    cases = []
    for c in result.checks:
        name = quoteattr(f"{c.joint}.{c.quantity}")
        head = f'  <testcase classname={quoteattr("rnea.check." + (model.name or "robot"))} name={name}'
        if c.ok:
            cases.append(head + "/>")
        else:
            message = c.describe() + f" ({100 * c.utilisation:.0f} % of allowed)"
            cases.append(f"{head}>\n    <failure message={quoteattr(message)} type=\"limit\"/>\n  </testcase>")
    for joint, quantity in result.unchecked:
        name = quoteattr(f"{joint}.{quantity}")
        head = f'  <testcase classname={quoteattr("rnea.check." + (model.name or "robot"))} name={name}'
        tag = "failure" if strict else "skipped"
        cases.append(f'{head}>\n    <{tag} message={quoteattr(f"no {quantity} limit for {joint}")}/>\n  </testcase>')
    failures = len(result.violations) + (len(result.unchecked) if strict else 0)
    skipped = 0 if strict else len(result.unchecked)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuites tests="{len(cases)}" failures="{failures}" errors="0" skipped="{skipped}">\n'
            f' <testsuite name={quoteattr("rnea check " + source)} tests="{len(cases)}" failures="{failures}" '
            f'errors="0" skipped="{skipped}">\n' + "\n".join(cases) + "\n </testsuite>\n</testsuites>\n")


def check_github(result, strict, source, line_of):
    """GitHub workflow commands: an ::error at the trajectory row of each first violation."""
    def esc(text):
        return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

    def prop(text):
        return esc(text).replace(":", "%3A").replace(",", "%2C")

    lines = []
    for c in result.violations:
        line = line_of(c.first_sample) if c.first_sample is not None else None
        loc = f"file={prop(source)}" + (f",line={line}" if line is not None else "")
        lines.append(f"::error {loc},title={prop('rnea check: ' + c.joint + ' ' + c.quantity)}::"
                     + esc(c.describe() + f" ({100 * c.utilisation:.0f} % of allowed)"))
    for joint, quantity in result.unchecked:
        kind = "error" if strict else "warning"
        lines.append(f"::{kind} file={prop(source)}::" + esc(f"{joint} {quantity} unchecked: no limit"))
    return "\n".join(lines) + ("\n" if lines else "")


# -- rnea info -------------------------------------------------------------------------------------

def robot_facts(model):
    """Everything `rnea info` shows, as plain data (the JSON output)."""
    from .limits import joint_limits

    _, limit_notes = joint_limits(model)
    carried = model.subtree_mass()
    warnings = list(model.warnings)
    for i, joint in enumerate(model.joints):
        if carried[i] == 0:
            warnings.append(f"{joint.name}: moves only massless links (zero row in the mass matrix)")
        lim = joint.limits
        missing = [k for k in ("effort", "velocity") if getattr(lim, k) is None]
        if joint.type != "continuous" and (lim.lower is None or lim.upper is None):
            missing.append("position")
        if missing:
            warnings.append(f"{joint.name}: no {', '.join(missing)} limit")
    warnings += limit_notes
    parts = {}  # URDF joint -> its coordinates (several for a planar joint)
    for i, j in enumerate(model.joints):
        parts.setdefault(j.urdf_joint or j.name, []).append((i, j))
    tree_joints = []
    for tj in model.tree:
        entry = {"name": tj.name, "type": tj.type, "parent_link": tj.parent_link, "child_link": tj.child_link}
        if tj.name in parts:
            (i, j), last = parts[tj.name][0], parts[tj.name][-1][1]
            lim = j.limits
            entry.update({
                "index": i, "coordinates": [p.name for _, p in parts[tj.name]],
                "axis": [float(x) for x in last.axis],  # for a planar joint, the plane's normal
                "limits": {"lower": lim.lower, "upper": lim.upper, "effort": lim.effort, "velocity": lim.velocity},
                "damping": j.damping, "friction": j.friction, "carried_mass": float(carried[i]),
                "mimic": None if j.mimic is None else {"joint": j.mimic.joint, "multiplier": j.mimic.multiplier,
                                                       "offset": j.mimic.offset},
            })
        tree_joints.append(entry)
    heads = {model.root_link: -1} | {j.child_link: i for i, j in enumerate(model.joints)}
    links = []
    for link in model.links:
        entry = {"name": link.name, "mass": link.mass,
                 "body": None if link.body < 0 else model.joints[link.body].name}
        if link.name in heads:
            entry["body_mass"] = model.body_mass(heads[link.name])
        links.append(entry)
    return {
        "robot": model.name, "file": model.source, "root_link": model.root_link, "dof": model.n,
        "floating": model.floating,
        "total_mass": model.body_mass(-1) + sum(model.body_mass(i) for i in range(model.n)),
        "joint_names": model.joint_names, "links": links, "joints": tree_joints, "warnings": warnings,
    }


def robot_tree(facts):
    """A Rich tree: links, and under each the joints to its children (fixed links folded in)."""
    from rich.markup import escape
    from rich.tree import Tree

    links = {link["name"]: link for link in facts["links"]}
    by_parent = {}
    for joint in facts["joints"]:
        by_parent.setdefault(joint["parent_link"], []).append(joint)

    def label(name):
        link = links[name]
        if "body_mass" in link:
            return f"[bold]{escape(name)}[/]  {link['body_mass']:.4g} kg" + (
                f" [dim](own {link['mass']:.4g} kg + fixed links)[/]" if link["body_mass"] != link["mass"] else "")
        return f"{escape(name)}  [dim]{link['mass']:.4g} kg, folded into its parent body[/]"

    def joint_label(j):
        if j["type"] in ("fixed", "floating"):
            return f"[dim]{escape(j['name'])} ({j['type']})[/]"
        lim = j["limits"]
        parts = [f"[cyan]{escape(j['name'])}[/] {j['type']}", "axis " + " ".join(f"{x:.4g}" for x in j["axis"])]
        if len(j["coordinates"]) > 1:
            parts.insert(1, "coordinates " + ", ".join(escape(c) for c in j["coordinates"]))
        if lim["lower"] is not None or lim["upper"] is not None:
            parts.append(f"range [{_fmt(lim['lower'])}, {_fmt(lim['upper'])}]")
        parts.append(f"effort {_fmt(lim['effort'])}, velocity {_fmt(lim['velocity'])}")
        if j["mimic"]:
            parts.append(f"mimics {escape(j['mimic']['joint'])}")
        return ", ".join(parts)

    floating = [j for j in facts["joints"] if j["type"] == "floating"]
    if floating:  # the world link, the floating joint, then the root body
        top = Tree(f"{escape(floating[0]['parent_link'])} [dim](the world)[/]")
        root = top.add(joint_label(floating[0])).add(label(facts["root_link"]))
    else:
        top = root = Tree(label(facts["root_link"]))
    stack = [(facts["root_link"], root)]
    while stack:
        name, node = stack.pop()
        for joint in by_parent.get(name, []):
            child = node.add(joint_label(joint)).add(label(joint["child_link"]))
            stack.append((joint["child_link"], child))
    return top
