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
