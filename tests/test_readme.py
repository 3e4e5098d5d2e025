"""Every command the README shows on a bundled robot runs, and exits 0."""

import os
import re
import shlex

import pytest
from click.testing import CliRunner

from conftest import ROOT
from rnea_cli.cli import main


def readme_commands():
    lines = (ROOT / "README.md").read_text().splitlines()
    commands = [line.split("#")[0].strip() for line in lines if re.match(r"^    rnea \w+ robots/", line)]
    return [pytest.param(c, id=c) for c in commands]


@pytest.mark.parametrize("command", readme_commands())
def test_readme_example_runs(command, tmp_path, monkeypatch):
    args = shlex.split(command)[1:]
    if "-o" in args:
        args[args.index("-o") + 1] = str(tmp_path / os.path.basename(args[args.index("-o") + 1]))
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    assert "warning" not in result.stderr


def test_the_readme_has_examples_for_every_feature():
    text = " ".join(p.values[0] for p in readme_commands())
    for needle in ("--floating-base", "rover.urdf", "gripper2.urdf", "arm7_payload_traj.csv", "--friction",
                   "--actuators", "rnea wrenches", "--fixed", "rnea check", "rnea info", "rnea payload", "--box",
                   "rnea scale", "rnea compare", "--effort-is current", "rnea report", "rnea plot", "--split",
                   "--format markdown", "--smooth", "--preset ur-rtde", "arm7_bag", ".parquet", ".xacro",
                   "--xacro-arg", "arm7_payload_traj.csv --format junit"):
        assert needle in text, needle


def test_the_ci_recipe_writes_every_output_and_fails_the_step_when_a_limit_is_exceeded(tmp_path):
    """The README's GitHub Actions step, run as GitHub runs it (bash -e), on plans that break a limit."""
    import shutil
    import subprocess
    import sys

    text = (ROOT / "README.md").read_text()
    block = re.search(r"```yaml\n- name: Check planned trajectories.*?\n  run: \|\n(.*?)\n- uses:", text, re.S).group(1)
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
