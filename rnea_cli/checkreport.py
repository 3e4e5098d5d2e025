"""The reports of `rnea check`: a table and verdict, JSON, JUnit XML, GitHub annotations, Markdown."""

from .report import add_row, percent, unit, time_text, utilisation_style


def limit_text(check, u):
    if check.quantity == "position":
        lower, upper = check.limit
        return f"[{lower:.6g}, {upper:.6g}] {u}"
    if check.quantity == "envelope":
        at = f"{check.allowed:.6g} {u} at the worst speed" if check.allowed is not None else "torque-speed curve"
        return f"{check.margin:g} × envelope: {at}" if check.margin != 1 else f"envelope: {at}"
    if check.quantity == "motor_rms" and check.window:
        return f"{check.margin:g} × {check.limit:.6g} {u} per {check.window:g} s" if check.margin != 1 else \
            f"{check.limit:.6g} {u} per {check.window:g} s"
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


def first_over(check, has_time):
    """When a check was first over its limit, for a table: a time, a sample, 'whole run' for an RMS."""
    if check.first_sample is not None:
        return f"{time_text(check.first_time)} s" if has_time and check.first_time is not None else \
            f"sample {check.first_sample}"
    return "whole run" if check.quantity == "rms_effort" and not check.ok else "—"


def check_table(model, result, has_time, plain, sparklines=None):
    """The table of every check; sparklines: {joint: |effort|/allowed over time} for the effort rows."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    joints = {j.name: j for j in model.joints}
    table = Table(box=None if plain else box.SIMPLE_HEAD, pad_edge=False)
    titles = ["joint", "quantity", "worst", "limit", "use", "first over at", "samples over"]
    for title in titles + (["over time"] if sparklines else []):
        table.add_column(title, justify="left" if title in ("joint", "quantity", "over time") else "right",
                         no_wrap=True)
    for c in result.checks:
        u = unit(joints[c.joint], c.quantity)
        style = None if plain else utilisation_style(c.utilisation)
        first = first_over(c, has_time)
        quantity = c.quantity + (f" (τ+{'+'.join(c.terms)})" if c.terms else "")
        spark = [sparklines.get(c.joint, "") if c.quantity == "effort" else ""] if sparklines else []
        add_row(table, c.joint, quantity, f"{c.worst:.4g} {u}", limit_text(c, u),
                Text(percent(c.utilisation), style=style), first, str(c.count), *spark)
    for joint, quantity in result.unchecked:
        add_row(table, joint, quantity, "", "none", Text("unchecked", style=None if plain else "dim"), "", "",
                *([""] if sparklines else []))
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
    from xml.sax.saxutils import quoteattr as quote

    from .errors import printable

    def quoteattr(text):  # XML 1.0 has no control characters: escaped as text
        return quote(printable(text, 2000))

    cases = []
    for c in result.checks:
        name = quoteattr(f"{c.joint}.{c.quantity}")
        head = f'  <testcase classname={quoteattr("rnea.check." + (model.name or "robot"))} name={name}'
        if c.ok:
            cases.append(head + "/>")
        else:
            message = c.describe() + f" ({percent(c.utilisation)} of allowed)"
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


def bad_input(fmt, source, message, kind="bad input"):
    """The report of a trajectory that could not be checked (one among several), in a check format:
    JUnit a suite with one <error>, GitHub an ::error, Markdown a heading and the message, text a
    line of the message. kind: 'bad input', or 'internal error' for a bug of ours."""
    from xml.sax.saxutils import quoteattr

    from .errors import printable

    message = printable(message.removeprefix("rnea: error: "), 2000)
    if fmt == "junit":
        return (f' <testsuite name={quoteattr("rnea check " + printable(source, 2000))} tests="1" failures="0" '
                f'errors="1" skipped="0">\n  <testcase classname="rnea.check" name="input">\n'
                f'    <error message={quoteattr(message)} type={quoteattr(kind)}/>\n  </testcase>\n </testsuite>')
    if fmt == "github":
        def esc(text):
            return text.replace("%", "%25")

        where = esc(printable(source, 2000)).replace(":", "%3A").replace(",", "%2C")
        return f"::error file={where},title=rnea check%3A {kind}::{esc(message)}\n"
    if fmt == "markdown":
        return f"### ⚠️ rnea check: {_md(source)}\n\n{kind.upper()}: {_md(message)}\n"
    return f"{kind.upper()}: {message}\n"  # text


def check_github(result, strict, source, line_of):
    """GitHub workflow commands: an ::error at the trajectory row of each first violation."""
    from .errors import printable

    def esc(text):
        return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"), 4000)

    def prop(text):
        return esc(text).replace(":", "%3A").replace(",", "%2C")

    lines = []
    for c in result.violations:
        line = line_of(c.first_sample) if c.first_sample is not None else None
        loc = f"file={prop(source)}" + (f",line={line}" if line is not None else "")
        lines.append(f"::error {loc},title={prop('rnea check: ' + c.joint + ' ' + c.quantity)}::"
                     + esc(c.describe() + f" ({percent(c.utilisation)} of allowed)"))
    for joint, quantity in result.unchecked:
        kind = "error" if strict else "warning"
        lines.append(f"::{kind} file={prop(source)}::" + esc(f"{joint} {quantity} unchecked: no limit"))
    return "\n".join(lines) + ("\n" if lines else "")


def check_markdown(model, result, strict, source, has_time):
    """For a GitHub job summary: the verdict, the checks at 80 % of their limit or more (worst
    first, with the first violation), and the unchecked limits."""
    joints = {j.name: j for j in model.joints}
    failed = bool(result.violations) or (strict and bool(result.unchecked))
    lines = [f"### {'❌' if failed else '✅'} rnea check: {_md(source)}", "", _md(verdict(result, strict)), ""]
    near = sorted((c for c in result.checks if not c.ok or c.utilisation >= 0.8), key=lambda c: -c.utilisation)
    if near:
        lines += ["| joint | quantity | worst | limit | use | first over at | samples over |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        for c in near:
            u = unit(joints[c.joint], c.quantity)
            first = first_over(c, has_time)
            mark = "🔴 " if not c.ok else "🟡 "
            lines.append(f"| {_md(c.joint)} | {c.quantity} | {c.worst:.4g} {u} | {_md(limit_text(c, u))} | "
                         f"{mark}{percent(c.utilisation)} | {first} | {c.count} |")
    else:
        lines.append(f"Every one of the {len(result.checks)} checks is below 80 % of its limit.")
    if result.unchecked:
        lines += ["", "**Unchecked** (no limit): " + ", ".join(f"{_md(j)} {q}" for j, q in result.unchecked)]
    return "\n".join(lines) + "\n"


def _md(text):
    """Text for a Markdown table cell: no pipes, no line breaks, no markup, no control characters."""
    from .errors import printable

    text = printable(str(text).replace("\n", " "), 1000)
    return "".join("\\" + ch if ch in "\\`*_[]<>|#" else ch for ch in str(text).replace("\n", " "))
