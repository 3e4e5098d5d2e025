"""The library's run (rnea_cli.open_run, RunOptions): a bad value raises RneaError naming the field,
as docs/python-api.md says; a run's blocks stream once."""

import pytest

from conftest import ROBOTS
from rnea_cli import RneaError, RunOptions, open_run

ARM, TRAJ = str(ROBOTS / "arm7.urdf"), str(ROBOTS / "arm7_traj.csv")


@pytest.mark.parametrize("field, value", [
    ("preset", "bogus"), ("input_format", "foo"), ("time_unit", "h"), ("message", -1), ("message", True),
    ("threads", True), ("threads", 0), ("package_paths", 3), ("package_paths", "/tmp"), ("xacro_args", "a:=b"),
    ("dt", 0.0), ("smooth", float("nan")), ("gravity", (0, 0)), ("wrench_frame", "body"), ("mimic", "no"),
    ("columns", 3), ("topic", 3), ("actuators", 3),
])
def test_a_bad_option_raises_rnea_error_naming_its_field(field, value):
    with pytest.raises(RneaError) as caught:
        RunOptions(**{field: value})
    assert caught.value.source == field, str(caught.value)


@pytest.mark.parametrize("robot, trajectory, name", [(3, TRAJ, "robot"), (None, TRAJ, "robot"), (ARM, None, "trajectory"),
                                                     (ARM, 3, "trajectory")])
def test_a_robot_or_trajectory_that_is_not_a_path_is_refused_by_name(robot, trajectory, name):
    with pytest.raises(RneaError) as caught:
        open_run(robot, trajectory)
    assert caught.value.source == name


def test_the_lists_of_options_are_kept_as_given():
    options = RunOptions(xacro_args=["a:=1", "b:=2"], package_paths=[ROBOTS])
    assert options.xacro_args == ("a:=1", "b:=2") and options.package_paths == (str(ROBOTS),)


def test_a_runs_blocks_stream_once():
    run = open_run(ARM, TRAJ)
    assert sum(len(block.tau) for block in run.blocks()) == 401
    with pytest.raises(RneaError, match="read already"):
        next(run.blocks())


def test_the_dataframe_api_names_the_frame_for_a_bad_time_unit():
    import polars as pl

    from rnea_cli import load_urdf, torques_frame

    with pytest.raises(RneaError, match=r"^<frame>: time_unit 'h': expected one of s, ms, us, ns$"):
        torques_frame(load_urdf(ARM), pl.read_csv(TRAJ), time_unit="h")
