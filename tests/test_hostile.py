"""Names from the user's files reach every output as written, in every format's own escaping: a
joint, link, robot or file named with mathtext, HTML, CSV, XML, workflow-command, Markdown or Rich
syntax is shown as that text, never as markup, and never crashes a command."""

import csv
import io
import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from conftest import ROBOTS, run
from rnea_cli.errors import printable

# Each name holds the syntax of every format: a legend's hidden label (_x), mathtext ($\bad{$ does
# not parse), HTML, CSV (a comma, a quote, a line break), GitHub workflow commands (%0A, ::, %, a
# comma, a colon), Markdown (pipes, emphasis, strikethrough, a link, an autolink, a heading), Rich
# markup and emoji codes.
SHOULDER = "_sh$\\bad{$ul [bold]x[/bold] :smile: _a_ <i>&amp;</i>"
ELBOW = 'el,"bow"\n| *x* ~~y~~ [l](http://e.com) www.e.com #h %0A::%,: `c`'
ROBOT = "r$\\bad{$ [bold] | *r* <b>"
HAND = "ha$\\bad{$nd | *h*"


def hostile_urdf(path):
    """planar2 with hostile joint, link and robot names (written by ElementTree: escaped XML)."""
    tree = ET.parse(ROBOTS / "planar2.urdf")
    robot = tree.getroot()
    robot.set("name", ROBOT)
    for element in robot.iter():
        for key in ("name", "link"):
            value = element.get(key)
            if value is not None:
                element.set(key, {"shoulder": SHOULDER, "elbow": ELBOW, "forearm": HAND}.get(value, value))
    tree.write(path, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """(URDF, trajectory with measured effort, limits YAML broken by both joints, drives YAML)."""
    folder = tmp_path_factory.mktemp("hostile")
    urdf = hostile_urdf(folder / "r.urdf")
    with open(ROBOTS / "planar2_traj.csv", newline="") as f:
        rows = list(csv.reader(f))
    data = np.array(rows[1:], dtype=float)
    column = {name: data[:, k].tolist() for k, name in enumerate(rows[0])}
    doc = {"time": column["time"]}
    for prefix in ("q", "qd", "qdd"):
        doc[prefix] = {SHOULDER: column[f"{prefix}_shoulder"], ELBOW: column[f"{prefix}_elbow"]}
    doc["effort"] = {SHOULDER: (0.3 * np.sin(data[:, 0])).tolist(), ELBOW: (0.1 * np.cos(data[:, 0])).tolist()}
    # (JSON: the CSV reader refuses a quoted line break in a header)
    traj = folder / 'tr,aj "$\\bad{$ | *t* [bold]:%.json'
    traj.write_text(json.dumps(doc))
    limits = folder / "limits.yaml"
    limits.write_text(json.dumps({SHOULDER: {"effort": 1.0}, ELBOW: {"effort": 0.5, "velocity": None}}))
    drives = folder / "drives.yaml"
    drives.write_text(json.dumps({name: {"gear_ratio": 10, "peak_torque": 0.2, "envelope": [[0, 0.2], [50, 0.1]]}
                                  for name in (SHOULDER, ELBOW)}))
    return urdf, traj, limits, drives


def test_report_draws_every_name_as_written(hostile, tmp_path):
    from html.parser import HTMLParser

    urdf, traj, limits, drives = hostile
    out = tmp_path / "r.html"
    result = run("report", urdf, traj, "--limits", limits, "--actuators", drives, "-o", out)
    assert result.exit_code == 1, result.stderr  # the limits are broken; the report is written
    page = out.read_text()

    class Text(HTMLParser):
        def __init__(self):
            super().__init__()
            self.cells, self.tags = [], []

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)

        def handle_data(self, data):
            self.cells.append(data)

    parser = Text()
    parser.feed(page)
    assert set(parser.tags) <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "table", "tr",
                                "th", "td", "figure", "figcaption", "pre", "ul", "li"} | SVG_TAGS, set(parser.tags)
    for name in (SHOULDER, ELBOW):
        assert name in parser.cells  # a cell of the limit table, the name alone
        assert any(cell.startswith(f"{name}: effort, velocity and position") for cell in parser.cells)
        drawn = printable(name)  # in a figure: on one line
        for text in (drawn, f"{drawn}: motor operating points", f"{drawn}: measured and model effort",
                     f"{drawn} effort"):  # a joint figure's title, the motor's, the measurement's, a tick label
            assert text in parser.cells, text
    assert f"{ROBOT}: {traj}" in parser.cells


SVG_TAGS = {"svg", "g", "path", "defs", "clippath", "use", "text", "rect", "style", "metadata", "rdf:rdf",
            "ns2:work", "dc:type", "dc:date", "dc:format", "dc:creator", "cc:work", "dc:title", "cc:agent",
            "title", "desc", "tspan", "image", "polyline", "line"}


def test_plot_draws_every_name_as_written(hostile, tmp_path):
    urdf, traj, limits, drives = hostile
    for quantity in ("torque", "power"):
        out = tmp_path / f"{quantity}.svg"
        result = run("plot", urdf, traj, "--quantity", quantity, "--actuators", drives, "-o", out, "-q")
        assert result.exit_code == 0, result.stderr
        texts = [t.text for t in ET.parse(out).getroot().iter("{http://www.w3.org/2000/svg}text")]
        assert printable(SHOULDER) in texts and printable(ELBOW) in texts  # the legend, as written


def test_compare_csv_holds_every_name_as_written(hostile, tmp_path):
    urdf, traj, _, _ = hostile
    result = run("compare", urdf, traj, "--format", "csv", "-q")
    assert result.exit_code == 0, result.stderr
    rows = list(csv.reader(io.StringIO(result.stdout, newline="")))
    assert rows[0] == ["joint", "rms", "max", "correlation", "scale", "offset"]
    assert [r[0] for r in rows[1:]] == [SHOULDER, ELBOW] and all(len(r) == 6 for r in rows)
    two = tmp_path / "two.json"  # several files: one table, its first column the trajectory
    two.write_bytes(traj.read_bytes())
    result = run("compare", urdf, traj, two, "--format", "csv", "--jobs", "1", "-q")
    assert result.exit_code == 0, result.stderr
    rows = list(csv.reader(io.StringIO(result.stdout, newline="")))
    assert [r[:2] for r in rows[1:]] == [[str(traj), SHOULDER], [str(traj), ELBOW], [str(two), SHOULDER],
                                         [str(two), ELBOW]]


def failing_check(hostile, fmt, *more):
    urdf, traj, limits, _ = hostile
    result = run("check", urdf, traj, *more, "--limits", limits, "--format", fmt)
    assert result.exit_code == 1, result.stderr  # both joints over their effort limit
    return result.stdout


def test_junit_holds_every_name_as_written(hostile, tmp_path):
    urdf, traj, limits, _ = hostile
    root = ET.fromstring(failing_check(hostile, "junit"))
    suite = root.find("testsuite")
    assert suite.get("name") == f"rnea check {traj}"
    cases = suite.findall("testcase")
    assert {c.get("classname") for c in cases} == {f"rnea.check.{printable(ROBOT)}"}
    assert [c.get("name") for c in cases] == \
        [printable(f"{SHOULDER}.{q}") for q in ("effort", "velocity", "position")] \
        + [printable(f"{ELBOW}.{q}") for q in ("effort", "position", "velocity")]  # (velocity: unchecked)
    assert [c.get("name") for c in cases if c.find("failure") is not None] == \
        [printable(f"{SHOULDER}.effort"), printable(f"{ELBOW}.effort")]
    # several files: the totals are the suites' own, whatever their names hold (a file named tests="9")
    twin = tmp_path / 'x tests="9" failures="0">.json'
    twin.write_bytes(traj.read_bytes())
    broken = tmp_path / 'y tests="7".json'
    broken.write_text("{}")
    result = run("check", urdf, twin, traj, broken, "--limits", limits, "--format", "junit", "--jobs", "1")
    assert result.exit_code == 2, result.stderr
    root = ET.fromstring(result.stdout)
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [f"rnea check {p}" for p in (twin, traj, broken)]
    for key, expected in (("tests", [6, 6, 1]), ("failures", [2, 2, 0]), ("errors", [0, 0, 1]),
                          ("skipped", [1, 1, 0])):
        assert [int(s.get(key)) for s in suites] == expected and int(root.get(key)) == sum(expected), key
    for path, expected in (("testcase", [6, 6, 1]), ("testcase/failure", [2, 2, 0]), ("testcase/error", [0, 0, 1]),
                           ("testcase/skipped", [1, 1, 0])):
        assert [len(s.findall(path)) for s in suites] == expected, path


def github_commands(text):
    """[(command, {property: value}, message)] of workflow-command lines, unescaped as the runner
    does (actions/toolkit's command.ts: %25 %0D %0A in the message; also %3A %2C in properties)."""
    def data(s):
        return s.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")

    def prop(s):
        return data(s.replace("%3A", ":").replace("%2C", ","))

    out = []
    for line in text.splitlines():
        assert line.startswith("::"), line
        head, message = line[2:].split("::", 1)
        command, _, props = head.partition(" ")
        out.append((command, dict((k, prop(v)) for k, v in (p.split("=", 1) for p in props.split(","))),
                    data(message)))
    return out


def test_github_annotations_hold_every_name_as_written(hostile, tmp_path):
    urdf, traj, limits, _ = hostile
    commands = github_commands(failing_check(hostile, "github"))
    assert [(c, p["title"]) for c, p, _ in commands[:2]] == [("error", f"rnea check: {SHOULDER} effort"),
                                                               ("error", f"rnea check: {ELBOW} effort")]
    assert all(p["file"] == str(traj) for _, p, _ in commands)
    assert commands[1][2].startswith(f"{ELBOW} effort ") and commands[2] == \
        ("warning", {"file": str(traj)}, f"{ELBOW} velocity unchecked: no limit")
    broken = tmp_path / "b,r:o%0Aken.json"
    broken.write_text("{}")
    result = run("check", urdf, traj, broken, "--limits", limits, "--format", "github", "--jobs", "1")
    command, props, message = github_commands(result.stdout)[-1]
    assert (command, props["file"], props["title"]) == ("error", str(broken), "rnea check: bad input")
    assert message.startswith(f"{broken}: expected a mapping")


def test_markdown_holds_every_name_as_written(hostile, tmp_path):
    """Rendered by GitHub's own Markdown (cmark-gfm): every name is a code span of its exact text,
    and nothing of a name became a link, emphasis, strikethrough, HTML or a table cell."""
    import re
    from html import unescape

    import cmarkgfm

    _, traj, _, _ = hostile
    page = cmarkgfm.github_flavored_markdown_to_html(failing_check(hostile, "markdown"))
    codes = [unescape(c) for c in re.findall(r"<code>(.*?)</code>", page, re.S)]
    shoulder, elbow = printable(SHOULDER), printable(ELBOW)
    # the heading, the verdict (two violations, one unchecked), the table, the unchecked line
    assert codes == [str(traj), shoulder, elbow, elbow, shoulder, elbow, elbow], codes
    rows = re.findall(r"<tr>\s*<td>(.*?)</td>", page, re.S)
    assert [unescape(r) for r in rows] == [f"<code>{shoulder}</code>", f"<code>{elbow}</code>"]
    assert all(len(re.findall("<td", r)) == 7 for r in re.findall(r"<tr>\s*<td>.*?</tr>", page, re.S))
    outside = re.sub(r"<code>.*?</code>", "", page, flags=re.S)
    assert set(re.findall(r"<(\w+)", outside)) == {"h3", "p", "table", "thead", "tr", "th", "tbody", "td", "strong"}


def test_the_console_prints_names_as_written(hostile):
    urdf, traj, limits, _ = hostile
    text = failing_check(hostile, "text")
    assert f"FAIL: 2 limits exceeded ({printable(SHOULDER)} effort, {printable(ELBOW)} effort)" in text
    info = run("info", urdf)
    assert info.exit_code == 0 and f"{ROBOT}: 2 degrees of freedom" in info.stdout


def test_plot_chooses_a_joint_named_with_a_comma(hostile, tmp_path):
    urdf, traj, _, _ = hostile
    quoted = '"' + ELBOW.replace('"', '""') + '"'  # --joints is a CSV row
    out = tmp_path / "one.svg"
    result = run("plot", urdf, traj, "--joints", quoted, "-o", out, "-q")
    assert result.exit_code == 0, result.stderr
    texts = [t.text for t in ET.parse(out).getroot().iter("{http://www.w3.org/2000/svg}text")]
    assert f"torque of {printable(ELBOW)}" in texts and printable(SHOULDER) not in texts


def test_answers_in_text_are_one_line_each(hostile, tmp_path):
    urdf, traj, _, _ = hostile
    limits = tmp_path / "limits.yaml"
    limits.write_text(json.dumps({SHOULDER: {"velocity": 1e9}, ELBOW: {"velocity": 0.1}}))
    result = run("scale", urdf, traj, "--limits", limits)
    assert result.exit_code == 1, result.stderr
    assert result.stdout.count("\n") == 1 and f"limited by {printable(ELBOW)} velocity at t = " in result.stdout
    result = run("payload", urdf, traj, "--link", HAND, "--limits", limits)
    assert result.exit_code == 1 and result.stdout.count("\n") == 2, result.stdout
    assert f"({printable(ELBOW)} velocity at t = " in result.stdout
