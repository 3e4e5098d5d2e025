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


def verdict(result, strict, name=str):
    """One line: OK or FAIL, and why. name: how a joint's name is written (Markdown: as code)."""
    bad = result.violations
    unchecked = result.unchecked
    if bad:
        what = ", ".join(f"{name(c.joint)} {c.quantity}" for c in bad[:6]) + (", ..." if len(bad) > 6 else "")
        line = f"FAIL: {len(bad)} limit{'s' if len(bad) > 1 else ''} exceeded ({what})"
    elif strict and unchecked:
        line = f"FAIL: {len(unchecked)} unchecked (--strict)"
    else:
        line = f"OK: {len(result.checks)} checks within limits over {result.samples} samples"
    if unchecked:
        line += f"; {len(unchecked)} unchecked (no limit): " + ", ".join(f"{name(j)} {q}" for j, q in unchecked[:6]) \
            + (", ..." if len(unchecked) > 6 else "")
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
    return junit_document([junit_suite(model, result, strict, source)])


def junit_suite(model, result, strict, source):
    """The <testsuite> element of one trajectory's check."""
    import xml.etree.ElementTree as ET

    classname = "rnea.check." + (model.name or "robot")
    suite = ET.Element("testsuite", name=_xml(f"rnea check {source}"))
    for c in result.checks:
        case = ET.SubElement(suite, "testcase", classname=_xml(classname), name=_xml(f"{c.joint}.{c.quantity}"))
        if not c.ok:
            ET.SubElement(case, "failure", message=_xml(c.describe() + f" ({percent(c.utilisation)} of allowed)"),
                          type="limit")
    for joint, quantity in result.unchecked:
        case = ET.SubElement(suite, "testcase", classname=_xml(classname), name=_xml(f"{joint}.{quantity}"))
        ET.SubElement(case, "failure" if strict else "skipped", message=_xml(f"no {quantity} limit for {joint}"))
    failures = len(result.violations) + (len(result.unchecked) if strict else 0)
    _count(suite, len(suite), failures, 0, 0 if strict else len(result.unchecked))
    return suite


def junit_error_suite(source, message, kind):
    """The <testsuite> of a trajectory that could not be checked: one test case, its <error>."""
    import xml.etree.ElementTree as ET

    suite = ET.Element("testsuite", name=_xml(f"rnea check {source}"))
    case = ET.SubElement(suite, "testcase", classname="rnea.check", name="input")
    ET.SubElement(case, "error", message=_xml(message), type=kind)
    return _count(suite, 1, 0, 1, 0)


JUNIT_TOTALS = ("tests", "failures", "errors", "skipped")


def _count(suite, *numbers):
    for key, number in zip(JUNIT_TOTALS, numbers):
        suite.set(key, str(number))
    return suite


def junit_document(suites):
    """<testsuites> of the suites, with their totals, as XML text (written by ElementTree)."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites")
    _count(root, *(sum(int(s.get(key)) for s in suites) for key in JUNIT_TOTALS))
    root.extend(suites)
    ET.indent(root, " ")
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _xml(text):
    """An attribute's text: XML 1.0 holds no control characters, so they are escaped as text."""
    from ..errors import printable

    return printable(text, 2000)


def bad_input(fmt, source, message, kind="bad input"):
    """The report of a trajectory that could not be checked (one among several), in a check format:
    GitHub an ::error, Markdown a heading and the message, text a line of the message (JUnit:
    junit_error_suite). kind: 'bad input', or 'internal error' for a bug of ours."""
    from ..errors import printable

    message = printable(message.removeprefix("rnea: error: "), 2000)
    if fmt == "github":
        return f"::error file={_property(source)},title={_property(f'rnea check: {kind}')}::{_data(message)}\n"
    if fmt == "markdown":
        return f"### ⚠️ rnea check: {_code(source)}\n\n{kind.upper()}: {_code(message)}\n"
    return f"{kind.upper()}: {message}\n"  # text


def _data(text):
    """The message of a GitHub workflow command (::error ...::message), on one line: %, CR and LF
    escaped as the runner reads them (%25, %0D, %0A), other control characters as text."""
    from ..errors import printable

    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"), 4000)


def _property(text):
    """A property of a GitHub workflow command (file=, title=): as _data, and : and , as %3A, %2C."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def check_github(result, strict, source, line_of):
    """GitHub workflow commands: an ::error at the trajectory row of each first violation."""
    lines = []
    for c in result.violations:
        line = line_of(c.first_sample) if c.first_sample is not None else None
        loc = f"file={_property(source)}" + (f",line={line}" if line is not None else "")
        lines.append(f"::error {loc},title={_property('rnea check: ' + c.joint + ' ' + c.quantity)}::"
                     + _data(c.describe() + f" ({percent(c.utilisation)} of allowed)"))
    for joint, quantity in result.unchecked:
        kind = "error" if strict else "warning"
        lines.append(f"::{kind} file={_property(source)}::" + _data(f"{joint} {quantity} unchecked: no limit"))
    return "\n".join(lines) + ("\n" if lines else "")


def check_markdown(model, result, strict, source, has_time):
    """For a GitHub job summary: the verdict, the checks at 80 % of their limit or more (worst
    first, with the first violation), and the unchecked limits. Names are code spans."""
    joints = {j.name: j for j in model.joints}
    failed = bool(result.violations) or (strict and bool(result.unchecked))
    lines = [f"### {'❌' if failed else '✅'} rnea check: {_code(source)}", "", verdict(result, strict, _code), ""]
    near = sorted((c for c in result.checks if not c.ok or c.utilisation >= 0.8), key=lambda c: -c.utilisation)
    if near:
        lines += ["| joint | quantity | worst | limit | use | first over at | samples over |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        for c in near:
            u = unit(joints[c.joint], c.quantity)
            first = first_over(c, has_time)
            mark = "🔴 " if not c.ok else "🟡 "
            lines.append(f"| {_code(c.joint, table=True)} | {c.quantity} | {c.worst:.4g} {u} | {limit_text(c, u)} | "
                         f"{mark}{percent(c.utilisation)} | {first} | {c.count} |")
    else:
        lines.append(f"Every one of the {len(result.checks)} checks is below 80 % of its limit.")
    if result.unchecked:
        lines += ["", "**Unchecked** (no limit): " + ", ".join(f"{_code(j)} {q}" for j, q in result.unchecked)]
    return "\n".join(lines) + "\n"


def _code(text, table=False):
    """A name as a GitHub-flavoured Markdown code span: nothing in it is markup (emphasis, links,
    autolinks, HTML, emoji codes, mentions), on one line (errors.printable); in a table cell its
    pipes escaped, which the table reads back as pipes. The fence is one backtick longer than the
    longest run of them in the name; a space pads it where the reader takes one off each end (a
    name that starts or ends with a backtick, or with a space at both ends)."""
    import re

    from ..errors import printable

    text = printable(text, 1000)
    if table:
        text = text.replace("|", "\\|")
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if "`" in (text[:1], text[-1:]) or (text[:1] == text[-1:] == " " and text.strip()) else ""
    return f"{fence}{pad}{text}{pad}{fence}"
