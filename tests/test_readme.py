"""The README and the docs/ pages: every command they show on a bundled robot runs and exits 0, every
feature and command has such an example, the CI step works as GitHub runs it, and every relative
link (and #anchor) leads somewhere."""

import io
import os
import re
import shlex
import unicodedata
from collections import Counter

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import ROOT
from rnea_cli.cli import main

README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
CI_STEP = re.compile(r"```yaml\n(- name: Check planned trajectories.*?\n  run: \|\n(.*?)\n- uses:.*?)```", re.S)


def example_commands(page):
    """The page's examples on a bundled robot: indented lines `    rnea <command> robots/...`."""
    lines = page.read_text().splitlines()
    return [line.split("#")[0].strip() for line in lines if re.match(r"^    rnea \w+ robots/", line)]


def all_examples():
    return [pytest.param(c, id=f"{p.relative_to(ROOT)}: {c}") for p in PAGES for c in example_commands(p)]


def prose(page):
    """The page's text outside fenced code blocks, with inline code spans (which may span lines) removed."""
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    return re.sub(r"`[^`]*`", "", text)


def anchor(heading):
    """GitHub's anchor of a heading: its text lower-cased, punctuation but `-` and `_` dropped, spaces
    to hyphens (links shown as their text, code spans as their content)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").replace("*", "").strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LMN" or
                   unicodedata.category(c) == "Pc")
    return kept.replace(" ", "-")


def headings(page):
    """The text of the page's ATX headings, outside fenced code blocks."""
    texts, fenced = [], False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"^#{1,6} +(.*?)[ #]*$", line)):
            texts.append(m.group(1))
    return texts


def anchors(page):
    """Every anchor of the page's headings, a repeated one with GitHub's -1, -2, ... suffix."""
    seen, result = Counter(), set()
    for heading in headings(page):
        base = anchor(heading)
        result.add(f"{base}-{seen[base]}" if seen[base] else base)
        seen[base] += 1
    return result


def relative_links(page):
    """(target file, anchor or None) of every relative link in the page's prose."""
    for target in re.findall(r"\]\(([^)\s]+)\)", prose(page)):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, fragment = target.partition("#")
        yield (page.parent / path).resolve() if path else page, fragment or None


@pytest.mark.parametrize("command", all_examples())
def test_example_runs(command, tmp_path, monkeypatch):
    args = shlex.split(command)[1:]
    for option in ("-o", "--output-dir"):
        if option in args:
            args[args.index(option) + 1] = str(tmp_path / os.path.basename(args[args.index(option) + 1]))
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    assert "warning" not in result.stderr


def test_the_docs_have_examples_for_every_feature_and_command():
    text = " ".join(p.values[0] for p in all_examples())
    for needle in ("--floating-base", "rover.urdf", "gripper2.urdf", "arm7_payload_traj.csv", "--friction",
                   "--actuators", "--fixed", "--box", "--effort-is current", "--split", "--format markdown",
                   "--smooth", "--preset ur-rtde", "arm7_bag", ".parquet", ".xacro", "--xacro-arg",
                   "arm7_payload_traj.csv --format junit", "--output-dir", "--jobs"):
        assert needle in text, needle
    for command in main.commands:
        assert f"rnea {command} robots/" in text, f"rnea {command} has no example in README.md or docs/"


def test_the_readme_opens_with_the_two_set_up_commands():
    head = README.read_text().splitlines()[:5]
    assert any(line.startswith("    make demo") for line in head)
    assert any(line.startswith("    make test") for line in head)


def test_every_docs_page_is_linked_from_the_readme():
    linked = {path for path, _ in relative_links(README)}
    for page in PAGES[1:]:
        assert page.resolve() in linked, f"README.md does not link {page.relative_to(ROOT)}"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_leads_to_a_file_and_a_heading(page):
    for path, fragment in relative_links(page):
        assert path.exists(), f"{page.relative_to(ROOT)}: no file {path}"
        if fragment:
            assert path.suffix == ".md", f"{page.relative_to(ROOT)}: #{fragment} into {path.name}"
            assert fragment in anchors(path), f"{page.relative_to(ROOT)}: no heading #{fragment} in {path.name}"


def test_the_anchor_rule_is_githubs():
    assert anchor("Joint reaction wrenches — `rnea wrenches ROBOT TRAJ`") == \
        "joint-reaction-wrenches--rnea-wrenches-robot-traj"
    assert anchor("Drivetrain — `--actuators FILE`") == "drivetrain----actuators-file"
    assert anchor("`rnea info ROBOT [--format text|json]`") == "rnea-info-robot---format-textjson"
    assert anchor("4. The same bits on every machine, in any chunk") == "4-the-same-bits-on-every-machine-in-any-chunk"


def test_the_readmes_python_example_runs_and_its_torques_are_those_of_torques_frame(monkeypatch):
    code = re.search(r"## Python API\n\n```python\n(.*?)```", README.read_text(), re.S).group(1)
    monkeypatch.chdir(ROOT)
    names = {}
    exec(compile(code, "README.md", "exec"), names)
    model, tau, frame = names["model"], names["tau"], names["frame"]
    assert tau.shape == (len(names["df"]), len(model.joint_names))
    assert (frame.select(f"tau_{j}" for j in model.joint_names).to_numpy() == tau).all()
    assert names["summary"].ok


def test_the_python_api_pages_open_run_example_runs_and_gives_what_the_command_writes(monkeypatch):
    """docs/python-api.md's open_run example: its torques are those `rnea torques` writes for the
    same options, and its notices the lines the command prints on stderr before its report."""
    page = (ROOT / "docs" / "python-api.md").read_text()
    code = re.search(r"## One run: `open_run`\n.*?```python\n(.*?)```", page, re.S).group(1)
    monkeypatch.chdir(ROOT)
    scope = {}
    exec(code, scope)
    done = CliRunner().invoke(main, ["torques", "robots/arm7.urdf", "robots/arm7_traj.csv", "--friction",
                                     "--smooth", "0.05"])
    assert done.exit_code == 0, done.stderr
    written = np.loadtxt(io.StringIO(done.stdout), delimiter=",", skiprows=1)
    header = done.stdout.splitlines()[0].split(",")
    columns = [k for k, name in enumerate(header) if name.startswith("tau_") and "friction" not in name]
    assert len(columns) == 7 and np.array_equal(written[:, columns], np.concatenate(scope["torques"]))
    said = [line for line in done.stderr.splitlines() if line.startswith(("note: ", "warning: "))]
    assert scope["run"].notices == said and said[0].startswith("note: q, qd and qdd by local cubic fits")


def test_the_ci_page_shows_the_readmes_ci_step():
    assert CI_STEP.search(README.read_text()).group(1) == CI_STEP.search((ROOT / "docs" / "ci.md").read_text()).group(1)


def test_the_ci_recipe_writes_every_output_and_fails_the_step_when_a_limit_is_exceeded(tmp_path):
    """The README's GitHub Actions step, run as GitHub runs it (bash -e), on plans that break a limit."""
    import shutil
    import subprocess
    import sys

    block = CI_STEP.search(README.read_text()).group(2)
    script = "\n".join(line[4:] for line in block.splitlines() if "pip install" not in line)
    (tmp_path / "robot").mkdir()
    (tmp_path / "plans").mkdir()
    shutil.copy(ROOT / "robots" / "arm7.urdf", tmp_path / "robot" / "robot.urdf")
    (tmp_path / "robot" / "limits.yaml").write_text("arm7_joint2: {effort: 40}\n")
    for name in ("pick", "place"):
        shutil.copy(ROOT / "robots" / "arm7_traj.csv", tmp_path / "plans" / f"{name}.csv")
    env = dict(os.environ, PATH=f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}",
               GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"))
    done = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1, done.stderr
    assert "::error file=plans/pick.csv" in done.stdout
    assert (tmp_path / "summary.md").read_text().count("FAIL: 1 limit exceeded") == 2
    assert (tmp_path / "rnea-junit.xml").read_text().count("<testsuite ") == 2
    assert sorted(os.listdir(tmp_path / "rnea-reports")) == ["pick.html", "place.html"]
