"""Pictures: the HTML report (self-contained, its drawings true to the data, rendered in a real
browser), `rnea plot`, `check --format markdown`, and the terminal's sparklines."""

import json
import os
import re
import shutil
import sys

import numpy as np
import polars as pl
import pytest

from conftest import ROBOTS, joint_columns, load, run, under_ci, write_csv

ARM = ROBOTS / "arm7.urdf"
ARM_CSV = ROBOTS / "arm7_traj.csv"
DRIVES = ROBOTS / "arm7_drives.yaml"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    limits = folder / "limits.yaml"
    limits.write_text("arm7_joint2: {effort: 45}\narm7_joint4: {velocity: 0.7}\n")
    result = run("report", ARM, ARM_CSV, "--actuators", DRIVES, "--limits", limits, "-o", folder / "report.html")
    assert result.exit_code == 1, result.stderr  # a limit is exceeded: as check, and the report is written
    checked = json.loads(run("check", ARM, ARM_CSV, "--actuators", DRIVES, "--limits", limits, "--format",
                             "json").stdout)
    return folder / "report.html", (folder / "report.html").read_text(), checked


def test_the_report_fetches_nothing(report):
    _, page, _ = report
    assert "<script" not in page and "<link" not in page and "<img" not in page and "@import" not in page
    assert "@font-face" not in page
    assert all(ref.startswith("#") for ref in re.findall(r'href="([^"]*)"', page))
    assert all(ref.startswith("#") for ref in re.findall(r"url\(([^)]*)\)", page))
    assert 'src="' not in page


def figure_of(page, name):
    """(its data-axes, its SVG text) of the figure whose axes include `name`."""
    for match in re.finditer(r"<figure[^>]*data-axes='([^']*)'[^>]*>(.*?)</figure>", page, re.S):
        axes = json.loads(match.group(1).replace("&quot;", '"'))
        if any(a["name"] == name for a in axes):
            return axes, match.group(2)
    raise AssertionError(f"no figure with axes {name}")


def marker_position(svg_text, gid, axes, axes_name):
    """The data coordinates of the marker drawn with id `gid`, through its axes' placement."""
    group = re.search(rf'<g id="{re.escape(gid)}">(.*?)</g>', svg_text, re.S)
    assert group, f"no marker {gid}"
    use = re.search(r'<use[^>]*x="([-\d.e]+)"[^>]*y="([-\d.e]+)"', group.group(1))
    x, y = float(use.group(1)), float(use.group(2))
    box = next(a for a in axes if a["name"] == axes_name)
    t = box["t0"] + (x - box["x0"]) / (box["x1"] - box["x0"]) * (box["t1"] - box["t0"])
    v = box["v0"] + (y - box["y0"]) / (box["y1"] - box["y0"]) * (box["v1"] - box["v0"])
    pixel = ((box["t1"] - box["t0"]) / (box["x1"] - box["x0"]), abs(box["v1"] - box["v0"]) / abs(box["y1"] - box["y0"]))
    return t, v, pixel


def test_the_peak_drawn_is_the_peak_in_the_table(report):
    _, page, checked = report
    for joint in ("arm7_joint2", "arm7_joint3"):
        effort = next(c for c in checked["checks"] if c["joint"] == joint and c["quantity"] == "effort")
        axes, svg_text = figure_of(page, f"{joint}:effort")
        t, v, pixel = marker_position(svg_text, f"peak-{joint}", axes, f"{joint}:effort")
        assert abs(t - effort["worst_time"]) <= pixel[0] and abs(v - effort["value"]) <= pixel[1]
        assert f"peak |effort| {abs(effort['value']):.6g} N·m at t = {effort['worst_time']:.6g} s" in page


def test_a_violation_is_drawn_where_check_reports_it(report):
    _, page, checked = report
    for joint, quantity in (("arm7_joint2", "effort"), ("arm7_joint4", "velocity")):
        violation = next(c for c in checked["violations"] if c["joint"] == joint and c["quantity"] == quantity)
        axes, svg_text = figure_of(page, f"{joint}:{quantity}")
        t, v, pixel = marker_position(svg_text, f"violation-{joint}-{quantity}", axes, f"{joint}:{quantity}")
        assert abs(t - violation["time"]) <= pixel[0]
    assert "FAIL: 2 limits exceeded" in page


def test_a_long_run_gives_a_small_report(tmp_path):
    """200k samples: every peak survives decimation (min/max per stretch), and the file stays under 2 MB."""
    N = 200_000
    t = np.arange(N) * 1e-3
    q = 0.3 * np.sin(np.outer(t, np.arange(1, 8) * 0.01))
    q[123_457, 1] += 0.2  # one sample's spike
    frame = {"time": t} | {f"q_arm7_joint{i + 1}": q[:, i] for i in range(7)}
    pl.DataFrame(frame).write_csv(tmp_path / "long.csv")
    result = run("report", ARM, tmp_path / "long.csv", "-o", tmp_path / "long.html", "-q")
    assert result.exit_code in (0, 1), result.stderr
    page = (tmp_path / "long.html").read_text()
    assert len(page.encode()) < 2_000_000
    axes, svg_text = figure_of(page, "arm7_joint2:position")
    group = svg_text.split('id="arm7_joint2:position"')[1]
    curve = max(re.findall(r'<path d="([^"]*)"', group), key=len)  # the longest path in those axes: the curve
    ys = [float(y) for y in re.findall(r"[ML] [-\d.]+ ([-\d.]+)", curve)]
    box = next(a for a in axes if a["name"] == "arm7_joint2:position")
    drawn = [box["v0"] + (y - box["y0"]) / (box["y1"] - box["y0"]) * (box["v1"] - box["v0"]) for y in ys]
    pixel = abs(box["v1"] - box["v0"]) / abs(box["y1"] - box["y0"])
    assert len(ys) > 10 and abs(max(drawn) - q[:, 1].max()) <= pixel  # the spike is drawn at its height
    assert q[:, 1].max() > np.sort(q[:, 1])[-2] + 1.5 * pixel  # and stands out above every other sample
    from rnea_cli.outputs.pictures.series import MinMax

    series = MinMax(600)
    for start in range(0, N, 16_384):
        series.update(t[start:start + 16_384], q[start:start + 16_384, 1])
    tt, vv = series.points()
    assert vv.max() == q[:, 1].max() and tt[vv.argmax()] == t[123_457] and len(tt) <= 4 * 600 + 2


def browser():
    """The headless Chromium and its driver (Debian: chromium, chromium-driver), or a skip (a failure under CI)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    try:
        import selenium  # noqa: F401
    except ImportError:
        found = None
    if not (found and driver):
        message = "no headless Chromium with chromedriver and selenium (apt-get install chromium chromium-driver)"
        if under_ci():
            pytest.fail(message + f" (CI={os.environ['CI']}: .ci/run installs them)")
        pytest.skip(message)
    return found, driver


def test_the_report_renders_in_a_real_browser(report, tmp_path):
    chrome, driver_path = browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chrome
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,1600"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        path, page, _ = report
        driver.get(path.as_uri())
        sizes = driver.execute_script(
            "return [...document.querySelectorAll('figure svg')].map(s => {const r = s.getBoundingClientRect();"
            " return [r.width, r.height];})")
        shot = tmp_path / "report.png"
        driver.save_screenshot(str(shot))
    finally:
        driver.quit()
    assert len(sizes) == page.count("<figure") and len(sizes) >= 8
    assert all(w > 300 and h > 150 for w, h in sizes), sizes
    from PIL import Image

    pixels = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert pixels.std() > 10 and (pixels < 128).mean() > 0.01  # not blank: text and lines drawn


def test_plot_writes_one_figure_in_each_format(tmp_path):
    for name in ("p.png", "p.svg", "p.pdf"):
        result = run("plot", ARM, ARM_CSV, "-o", tmp_path / name, "--joints", "arm7_joint2,arm7_joint4", "-q")
        assert result.exit_code == 0, result.stderr
    assert (tmp_path / "p.png").read_bytes().startswith(b"\x89PNG")
    assert (tmp_path / "p.pdf").read_bytes().startswith(b"%PDF")
    assert "<svg" in (tmp_path / "p.svg").read_text()
    result = run("plot", ARM, ARM_CSV, "-o", tmp_path / "p.png", "--quantity", "power", "--actuators", DRIVES, "-q")
    assert result.exit_code == 0, result.stderr
    for args, message in ((["-o", tmp_path / "p.gif"], "must end in .png, .svg or .pdf"),
                          (["-o", tmp_path / "q.png", "--joints", "elbow"], "no joint 'elbow'"),
                          (["-o", tmp_path / "q.png", "--quantity", "power"], "needs --actuators")):
        result = run("plot", ARM, ARM_CSV, *args)
        assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert not (tmp_path / "q.png").exists()
    for name in ("r.png", "r.txt"):  # a report is an HTML page, whatever the name says
        result = run("report", ARM, ARM_CSV, "-o", tmp_path / name)
        assert result.exit_code == 2 and "the report's name must end in .html" in result.stderr, result.stderr
        assert not (tmp_path / name).exists()


def test_without_matplotlib_a_one_line_hint(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = run("report", ARM, ARM_CSV, "-o", tmp_path / "r.html")
    assert result.exit_code == 2 and result.stderr == \
        "rnea: error: rnea report: needs matplotlib: pip install 'rnea-cli[report]' (or matplotlib)\n"


def test_markdown_for_a_job_summary(tmp_path):
    limits = tmp_path / "limits.yaml"
    limits.write_text("arm7_joint2: {effort: 45}\narm7_joint1: {effort: 4.0}\narm7_joint7: {velocity: null}\n")
    result = run("check", ARM, ARM_CSV, "--limits", limits, "--format", "markdown")
    assert result.exit_code == 1
    text = result.stdout
    assert text.startswith("### ❌ rnea check: ") and "FAIL: 1 limit exceeded (`arm7_joint2` effort)" in text
    rows = [line for line in text.splitlines() if line.startswith("| `arm7")]
    from oracle import pin_model, pin_rnea

    frame = pl.read_csv(ARM_CSV)
    joints = [f"arm7_joint{i}" for i in range(1, 8)]
    tau = pin_rnea(pin_model(ARM), joints, *(frame.select([f"{p}_{j}" for j in joints]).to_numpy()
                                            for p in ("q", "qd", "qdd")))
    over = np.abs(tau[:, 1]) > 45
    first = frame["time"][int(np.argmax(over))]
    assert rows[0].startswith("| `arm7_joint2` | effort |")
    assert f"🔴 {100 * np.abs(tau[:, 1]).max() / 45:.0f} % | {first:g} s | {over.sum()} |" in rows[0], rows[0]
    near = f"🟡 {100 * np.abs(tau[:, 0]).max() / 4:.0f} %"
    assert any(r.startswith("| `arm7_joint1` | effort |") and near in r for r in rows)
    assert all("🟡" in r or "🔴" in r for r in rows)  # only those at 80 % or more
    assert "**Unchecked** (no limit): `arm7_joint7` velocity" in text


def test_sparklines_keep_every_peak():
    from rnea_cli.outputs.report import Sparklines

    sparks = Sparklines([2.0, 0.0], width=10)
    x = np.zeros((10_000, 2))
    x[7_777, 0] = 3.0  # over its limit, once
    x[:, 1] = 1.0  # no limit: no line
    for start in range(0, 10_000, 333):
        sparks.update(x[start:start + 333])
    line = sparks.line(0)
    assert len(line) == 10 and line.count("!") == 1 and abs(line.index("!") - 7.777) <= 1  # its stretch
    assert sparks.line(1) == ""


def test_a_robot_at_rest_reports_no_nan(tmp_path):
    """At rest, a joint about the vertical carries no torque: its caption has no time of a peak
    (never 't = nan s'), and nothing in the report is NaN or infinite."""
    zero = np.zeros((20, 7))
    still = write_csv(tmp_path / "still.csv", {"time": np.arange(20) * 0.01,
                                               **joint_columns(load(ARM).joint_names, zero, zero, zero)})
    result = run("report", ARM, still, "-o", tmp_path / "r.html", "-q")
    assert result.exit_code == 0, result.stderr
    html = (tmp_path / "r.html").read_text()
    assert "peak |effort| 0 N·m;" in html or "peak |effort| 0 N·m<" in html or "peak |effort| 0 N·m\"" in html
    assert not re.search(r"\bnan\b|\binf\b|NaN|Infinity", html), re.search(r".{60}(nan|inf|NaN).{20}", html)


def test_an_rms_limit_broken_over_the_whole_run_reads_so_in_the_report_as_in_check(tmp_path):
    limits = tmp_path / "limits.yaml"
    limits.write_text("arm7_joint2: {rms_effort: 1}\n")
    assert run("report", ARM, ARM_CSV, "--limits", limits, "-o", tmp_path / "r.html").exit_code == 1
    row = next(r for r in re.findall(r"<tr>.*?</tr>", (tmp_path / "r.html").read_text(), re.S)
               if "<td>rms_effort</td>" in r)
    assert "<td>whole run</td>" in row, row
    markdown = run("check", ARM, ARM_CSV, "--limits", limits, "--format", "markdown").stdout
    assert next(line for line in markdown.splitlines() if "| rms_effort |" in line).count("| whole run |") == 1


def test_element_ids_of_names_that_differ_only_in_odd_characters_differ():
    from rnea_cli.outputs.pictures.figures import clean_id

    names = ["a b", "a_b", "a\tb", "a/b", "a:b", "ä_b"]
    ids = [clean_id(f"peak-{name}") for name in names]
    assert len(set(ids)) == len(names) and all(re.fullmatch(r"[A-Za-z0-9_.:-]+", i) for i in ids)
    assert clean_id("peak-arm7_joint1") == "peak-arm7_joint1"  # a plain name stays readable
