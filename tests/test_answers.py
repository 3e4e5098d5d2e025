"""Answers that span commands (compare, payload, scale): what the data do not determine is not fitted,
and an answer has the same bits however its input is cut. (Each command's own answers are in
test_cmd_*.py, the split in test_split.py, the drivetrain in test_drivetrain.py.)"""

import json

import numpy as np
import pytest

from arm7 import ARM
from conftest import ROBOTS, joint_columns, ok, run, small_blocks, write_csv


def test_what_the_data_do_not_determine_is_not_fitted(tmp_path):
    """planar2 moving 1e-150 rad, its measured effort a constant 0.3 (whose mean is 1 ulp off):
    compare fitted a scale of 7e118 to the round-off of the deviations, scale called a motion of
    1e-270 rad feasible 6e135 times as fast, payload its capacity 1.6e272 kg. Now: no fit (null),
    and no factor or capacity beyond 1e6 (unbounded)."""
    t = np.arange(200) * 0.01
    names = ("shoulder", "elbow")
    assert np.full(200, 0.3).mean() != 0.3  # (the round-off the fit took for a slope)
    for amplitude in (1e-150, 1e-270):
        q = amplitude * np.sin(t)[:, None] * [1.0, 1.0]
        path = write_csv(tmp_path / f"{amplitude:g}.csv", {"time": t, **joint_columns(names, q, -q[::-1], -q),
                                                           **{f"effort_{j}": np.full(200, 0.3) for j in names}})
        compared = json.loads(ok("compare", ROBOTS / "planar2.urdf", path, "--format", "json").stdout)
        assert all(j[key] is None for j in compared["joints"] for key in ("scale", "offset", "correlation"))
        assert [j["rms"] for j in compared["joints"]] == [0.3, 0.3]
        scaled = json.loads(ok("scale", ROBOTS / "planar2.urdf", path, "--format", "json").stdout)
        assert (scaled["factor"], scaled["unbounded"], scaled["limiting"]) == (None, True, None)
        carried = json.loads(ok("payload", ROBOTS / "planar2.urdf", path, "--link", "forearm", "--format",
                                "json").stdout)  # (it was 1.6e152 kg, and 1.6e272)
        assert (carried["max_payload"], carried["unbounded"], carried["limiting"]) == (None, True, None)
    text = ok("scale", ROBOTS / "planar2.urdf", path).stdout
    assert text == "speed factor: unbounded (no checked limit binds below 1e+06 times the planned speed)\n"
    moving = write_csv(tmp_path / "moving.csv", {"time": t, **joint_columns(names, np.sin(t)[:, None] * [1.0, 1.0],
                                                                            np.cos(t)[:, None] * [1.0, 1.0],
                                                                            -np.sin(t)[:, None] * [1.0, 1.0]),
                                                 **{f"effort_{j}": np.full(200, 0.3) for j in names}})
    compared = json.loads(ok("compare", ROBOTS / "planar2.urdf", moving, "--format", "json").stdout)
    assert [(j["scale"], j["offset"], j["correlation"]) for j in compared["joints"]] == [(0.0, 0.3, None)] * 2


@pytest.mark.parametrize("command", ["compare", "payload", "scale"])
def test_the_answers_are_the_same_bits_however_the_input_is_cut(command, tmp_path, monkeypatch):
    """compare's moments and the RMS sums of payload and scale are exact sums: reading the file in
    blocks of other sizes changes no digit of their JSON (float sums per block did)."""
    limits = tmp_path / "limits.yaml"  # an RMS limit that binds: the answer is its sums' (34 N·m RMS now)
    limits.write_text(f"arm7_joint2: {{rms_effort: {35 if command == 'scale' else 40}}}\n")
    args = {"compare": ["--format", "json"],
            "payload": ["--link", "arm7_link7", "--format", "json", "--limits", limits],
            "scale": ["--format", "json", "--limits", limits]}[command]
    trajectory = ROBOTS / ("arm7_measured.csv" if command == "compare" else "arm7_traj.csv")
    outputs = []
    for block_bytes in (None, 5000, 23456):
        small_blocks(monkeypatch, block_bytes)
        result = run(command, ARM, trajectory, *args)
        assert result.exit_code in (0, 1), result.stderr
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1] == outputs[2]
    answer = json.loads(outputs[0])
    assert command == "compare" or answer["limiting"]["quantity"] == "rms_effort"


