"""`rnea identify` end to end: efforts simulated through Pinocchio for a perturbed UR5 with friction,
written as CSV runs; the identified URDF reproduces a held-out run through `rnea compare`."""

import json

import numpy as np
import polars as pl
import pytest

from conftest import ARM, ROBOTS, run
from test_identify import Robot


def write_run(path, robot, motion, effort):
    q, qd, qdd = motion
    names = robot.model.joint_names
    columns = {"time": np.arange(len(q)) / 100.0}
    for prefix, x in (("q", q), ("qd", qd), ("qdd", qdd), ("effort", effort)):
        columns.update({f"{prefix}_{j}": x[:, k] for k, j in enumerate(names)})
    pl.DataFrame(columns).write_csv(path)
    return path


@pytest.fixture(scope="module")
def ur5_runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("identify")
    robot = Robot(5)
    runs = [write_run(folder / f"run{k}.csv", robot, *robot.run(6.0, 1.0)) for k in range(2)]
    held_out = write_run(folder / "held_out.csv", robot, *robot.run(5.0, 1.0))
    return robot, runs, held_out, folder


def test_the_identified_urdf_reproduces_a_held_out_run(ur5_runs):
    robot, runs, held_out, folder = ur5_runs
    urdf = robot.model.source
    out = folder / "identified.urdf"
    result = run("identify", urdf, *runs, "-o", out, "--validate", held_out, "--format", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["samples"] == 1200 and report["rank"] == robot.base.rank and report["consistent"]
    before = np.array(report["validation"][0]["rms_before"])
    after = np.array(report["validation"][0]["rms_after"])
    scale = np.sqrt(np.mean(pl.read_csv(held_out).select(pl.col("^effort_.*$")).to_numpy() ** 2, axis=0))
    assert (before > 0.02 * scale).any()  # the CAD model is off
    assert (after <= 1e-6 * scale.max()).all()  # noiseless: the identified model is the robot
    friction = np.array([[j["friction"]["viscous"], j["friction"]["coulomb"]] for j in report["joints"]])
    np.testing.assert_allclose(friction, np.column_stack([robot.viscous, robot.coulomb]), rtol=1e-5)
    # the URDF written reproduces the fit: rnea compare with its friction
    compare = run("compare", out, held_out, "--friction", "--format", "json")
    assert compare.exit_code == 0, compare.stderr
    rms = np.array([j["rms"] for j in json.loads(compare.stdout)["joints"]])
    # (the report's RMS comes from the normal equations, theta G theta - 2 theta b + c: near a perfect
    # fit it is good to sqrt(eps) of the efforts' size, not to round-off)
    np.testing.assert_allclose(rms, after, rtol=1e-6, atol=1e-6 * scale.max())
    assert (rms <= 1e-6 * scale.max()).all()


def test_the_text_report_and_ols(ur5_runs):
    robot, runs, held_out, folder = ur5_runs
    text = run("identify", robot.model.source, runs[0])
    assert text.exit_code == 0, text.stderr
    assert "base parameters (value ± standard error):" in text.stdout and "->" in text.stdout
    ols = run("identify", robot.model.source, runs[0], "--ols", "--format", "json")
    assert ols.exit_code == 0 and json.loads(ols.stdout)["method"] == "ols"


def test_bad_input_is_one_line_and_exit_2(ur5_runs, tmp_path):
    robot, runs, held_out, folder = ur5_runs
    cases = [
        (["identify", ARM, ROBOTS / "arm7_traj.csv"], "no measured effort"),
        (["identify", robot.model.source, runs[0], "--ols", "-o", tmp_path / "x.urdf"], "--ols"),
        (["identify", ROBOTS / "planar2.urdf.xacro", ROBOTS / "planar2_traj.csv", "-o", tmp_path / "x.urdf"],
         "xacro"),
        (["identify", robot.model.source, runs[0], "--prior-weight", "-1"], "--prior-weight"),
        (["identify", robot.model.source, runs[0], "--min-speed", "nan"], "--min-speed"),
        (["identify", robot.model.source, runs[0], "--min-speed", "1e9"], "never moves at 1e+09 or faster"),
    ]
    short = pl.read_csv(runs[0]).head(3)
    short.write_csv(tmp_path / "short.csv")
    cases.append((["identify", robot.model.source, tmp_path / "short.csv"], "too few for 48 base parameters: give "
                                                                           "at least 6 more"))
    for args, needle in cases:
        result = run(*args)
        assert result.exit_code == 2, (args, result.stderr)
        assert needle in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert not (tmp_path / "x.urdf").exists()


def test_extreme_efforts_and_prior_weights_are_one_line(ur5_runs, tmp_path):
    robot, runs, held_out, folder = ur5_runs
    big = pl.read_csv(runs[0]).with_columns(pl.col("^effort_.*$") * 1e200)
    big.write_csv(tmp_path / "big.csv")
    fast = pl.read_csv(runs[0]).with_columns(pl.col("^qd_.*$") * 1e200)  # its regressor's squares: no double
    fast.write_csv(tmp_path / "fast.csv")
    late = pl.read_csv(runs[0]).with_row_index().with_columns(  # one value too large, on the sixth row
        pl.when(pl.col("index") == 5).then(1e40).otherwise(pl.col("^qdd_.*$")).name.keep()).drop("index")
    late.write_csv(tmp_path / "late.csv")
    for args, needle in (([tmp_path / "big.csv"], "line 2: effort not finite or beyond 1e150"),
                         ([tmp_path / "fast.csv"], "line 2: q, qd or qdd not finite or beyond 1e30"),
                         ([tmp_path / "late.csv"], "line 7: q, qd or qdd not finite or beyond 1e30"),
                         ([runs[0], "--prior-weight", "1e308"], "1e12")):
        result = run("identify", robot.model.source, *args)
        assert result.exit_code == 2 and needle in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_a_planar_joints_friction_is_refused_as_one_line_with_links_too(tmp_path):
    """The rover's planar base has one friction per coordinate and one <dynamics>: writing it back is
    refused (one line, exit 2, no file), with --links as without; --no-friction writes the link.
    (The effort here is only something to fit: any values give the same refusal.)"""
    import numpy as np

    traj = pl.read_csv(ROBOTS / "rover_traj.csv")
    joints = [c[2:] for c in traj.columns if c.startswith("q_")]
    rng = np.random.default_rng(2)
    measured = traj.with_columns(*(pl.Series(f"effort_{j}", rng.standard_normal(len(traj))) for j in joints))
    measured.write_csv(tmp_path / "measured.csv")
    for extra in ([], ["--links", "boom"]):
        out = tmp_path / "rover.urdf"
        result = run("identify", ROBOTS / "rover.urdf", tmp_path / "measured.csv", *extra, "-o", out)
        assert result.exit_code == 2 and result.stderr.count("\n") == 1, (extra, result.stderr)
        assert "planar" in result.stderr and not out.exists(), (extra, result.stderr)
    done = run("identify", ROBOTS / "rover.urdf", tmp_path / "measured.csv", "--links", "boom", "--no-friction",
               "-o", tmp_path / "boom.urdf")
    assert done.exit_code == 0, done.stderr
    assert (tmp_path / "boom.urdf").read_bytes() != (ROBOTS / "rover.urdf").read_bytes()


def test_the_library_identifies_as_the_command_does(ur5_runs):
    """identify.identify_runs, the run the command is a shell around: the same base parameters and
    validation, bit for bit (JSON keeps every digit), and the command's --min-speed default is the
    library's."""
    from rnea_cli.cli.identify import identify as command
    from rnea_cli.run.answers import identify

    robot, runs, held_out, folder = ur5_runs
    result = run("identify", robot.model.source, *runs, "--validate", held_out, "--format", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    found = identify.identify_runs(robot.model.source, runs, validate=[held_out])
    assert [b["value"] for b in report["base_parameters"]] == found.fit.beta.tolist()
    assert report["validation"][0]["rms_after"] == found.validation[0]["rms_after"]
    assert found.normal.count == report["samples"] and found.base.rank == report["rank"]
    default = next(p.default for p in command.params if p.name == "min_speed")
    assert default is None and found.normal.slowest.tolist() == [identify.MIN_SPEED] * 6  # UR5: 3.15 rad/s limits


def test_a_mimic_robot_is_identified_with_its_followers_in_their_leaders_effort(tmp_path):
    """The Panda with mimic on (its default): the CSV has the leaders' columns alone, each effort a
    leader's torque plus its follower's (Pinocchio's, reflected); the URDF written reproduces a
    held-out run through `rnea compare --friction` (which reflects followers as the fit did), and
    the report names the finger's follower. A follower's own effort in the run is refused as one
    line (which reading is meant, its leader's alone or the pair's, is not guessed), no file."""
    from bagfiles import bag_path, write_joint_states
    from test_identify import MimicRobot

    from conftest import corpus_robot

    robot = MimicRobot(corpus_robot("panda").read_text(), 1)
    names = robot.coords.joint_names

    def write(path, motion, effort):
        columns = {"time": np.arange(len(effort)) / 100.0}
        for prefix, x in zip(("q", "qd", "qdd"), motion):
            columns.update({f"{prefix}_{j}": x[:, robot.coords.columns[k]] for k, j in enumerate(names)})
        columns.update({f"effort_{j}": effort[:, k] for k, j in enumerate(names)})
        pl.DataFrame(columns).write_csv(path)
        return path

    fitted, held_out = write(tmp_path / "run.csv", *robot.run(10.0, 1.0)), write(tmp_path / "held.csv",
                                                                                 *robot.run(5.0, 1.0))
    out = tmp_path / "identified.urdf"
    result = run("identify", corpus_robot("panda"), fitted, "-o", out, "--validate", held_out, "--format", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert [j["joint"] for j in report["joints"]] == names and report["consistent"]
    assert report["joints"][-1]["followers"] == ["panda_finger_joint2"]
    scale = np.sqrt(np.mean(pl.read_csv(held_out).select(pl.col("^effort_.*$")).to_numpy() ** 2, axis=0))
    assert (np.array(report["validation"][0]["rms_before"]) > 0.02 * scale).any()  # the CAD is off
    compare = run("compare", out, held_out, "--friction", "--format", "json")
    assert compare.exit_code == 0, compare.stderr
    rms = np.array([j["rms"] for j in json.loads(compare.stdout)["joints"]])
    assert (rms <= 1e-6 * scale.max()).all(), rms / scale.max()
    apart = pl.read_csv(fitted).with_columns(pl.col("q_panda_finger_joint1").alias("q_panda_finger_joint2"),
                                              pl.lit(0.0).alias(" effort_panda_finger_joint2"))
    apart.write_csv(tmp_path / "apart.csv")  # (a header's spaces around a name are read past)
    apart.write_parquet(tmp_path / "apart.parquet")
    document = {"time": apart["time"].to_list()} | {
        group: {j: apart[f"{group}_{j}"].to_list() for j in names} for group in ("q", "qd", "qdd", "effort")}
    document["effort"]["panda_finger_joint2"] = [0.0] * len(apart)
    (tmp_path / "apart.json").write_text(json.dumps(document))
    frame = apart.rename({" effort_panda_finger_joint2": "effort_panda_finger_joint2"})
    joints = names + ["panda_finger_joint2"]
    write_joint_states(bag_path(tmp_path, "mcap", "apart"), "mcap", joints, frame["time"].to_numpy(),
                       frame.select([f"q_{j}" for j in joints]).to_numpy(),
                       effort=frame.select([f"effort_{j}" for j in joints]).to_numpy())
    for name in ("apart.csv", "apart.parquet", "apart.json", bag_path(tmp_path, "mcap", "apart").name):
        result = run("identify", corpus_robot("panda"), tmp_path / name, "-o", tmp_path / "x.urdf")
        assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
        assert "panda_finger_joint2: the effort of a mimic follower, measured apart" in result.stderr
        assert not (tmp_path / "x.urdf").exists()


def test_a_floating_base_is_refused_as_one_line():
    """--floating-base is refused before the trajectory is asked for base columns: one line, exit 2."""
    result = run("identify", ARM, ROBOTS / "arm7_traj.csv", "--floating-base")
    assert result.exit_code == 2 and "a floating base is not identified" in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1


def test_a_joint_at_rest_is_refused_for_friction_only_and_a_run_given_up_stops_the_summing_thread(ur5_runs, tmp_path):
    """A joint that never moves: its viscous, Coulomb or armature term cannot be fitted, but with
    --no-friction --offset it is only an offset, which shows at rest. A run that ends in an error
    (an effort not finite in the second run) leaves no summing thread behind."""
    import threading

    from rnea_cli.errors import RneaError
    from rnea_cli.run.answers import identify

    robot, runs, held_out, folder = ur5_runs
    still = pl.read_csv(runs[0]).with_columns(pl.col("^q[d]*_elbow_joint$") * 0.0)
    still.write_csv(tmp_path / "still.csv")
    refused = run("identify", robot.model.source, tmp_path / "still.csv")
    assert refused.exit_code == 2 and "elbow_joint never moves" in refused.stderr, refused.stderr
    fitted = run("identify", robot.model.source, tmp_path / "still.csv", "--no-friction", "--offset")
    assert fitted.exit_code == 0, fitted.stderr
    bad = pl.read_csv(runs[1])
    effort = bad["effort_elbow_joint"].to_numpy().copy()
    effort[500] = np.nan
    bad.with_columns(pl.Series("effort_elbow_joint", effort)).write_csv(tmp_path / "bad.csv")
    with pytest.raises(RneaError, match="effort"):
        identify.identify_runs(robot.model.source, [runs[0], tmp_path / "bad.csv"], threads=2)
    assert not [t for t in threading.enumerate() if t.name.startswith("rnea-sums")]


MEASURED = ROBOTS / "arm7_real_excite.csv"


def measured_run():
    """The shipped measured arm7 run (q with encoder noise, effort): its frame, time, q, effort and
    the joints' names."""
    from arm7 import JOINTS

    frame = pl.read_csv(MEASURED)
    q, effort = (frame.select(f"{p}_{j}" for j in JOINTS).to_numpy() for p in ("q", "effort"))
    return frame, frame["time"].to_numpy(), q, effort, JOINTS


def test_every_source_identifies_as_the_csv_does(tmp_path):
    """The measured arm7 run as Parquet and as ROS 1 and MCAP bags of JointState (names shuffled):
    the same report and URDF, byte for byte, as from the CSV."""
    from bagfiles import bag_path, write_joint_states

    frame, t, q, effort, names = measured_run()
    frame.write_parquet(tmp_path / "run.parquet")
    sources = [tmp_path / "run.parquet"]
    for fmt in ("ros1", "mcap"):
        sources.append(write_joint_states(bag_path(tmp_path, fmt), fmt, names, t, q, effort=effort,
                                          order=[3, 1, 0, 2, 6, 5, 4]))
    outputs = []
    for k, source in enumerate([MEASURED] + sources):
        out = tmp_path / f"identified{k}.urdf"
        result = run("identify", ARM, source, "--smooth", "0.2", "--format", "json", "-q", "-o", out)
        assert result.exit_code == 0, (source, result.stderr)
        outputs.append((result.stdout, out.read_bytes()))
    assert json.loads(outputs[0][0])["consistent"]
    for source, got in zip(sources, outputs[1:]):
        assert got == outputs[0], source


def test_currents_of_a_ur_rtde_log_through_the_drives(tmp_path):
    """A UR RTDE log (`--preset ur-rtde`) whose actual_current_i is the joint torque over the drive's
    torque_constant x gear_ratio x efficiency: `--effort-is current --actuators` identifies what the
    torques themselves do (the drives' file converts the current; their rotor inertia and friction
    are not subtracted: `--armature` and the friction estimate take them, docs/identify.md)."""
    import yaml

    from arm7 import DRIVES as drives_path

    drives = yaml.safe_load(drives_path.read_text())
    _, t, q, effort, names = measured_run()
    qd = np.gradient(q, t, axis=0)
    # the formula for a current's torque (test_cmd_compare checks it against Pinocchio)
    factor = np.array([drives[j]["torque_constant"] * drives[j]["gear_ratio"] * drives[j]["efficiency"]
                       for j in names])
    current = effort / factor
    torque = {"time": t, **{f"{p}_{j}": x[:, i] for p, x in (("q", q), ("qd", qd)) for i, j in enumerate(names)},
              **{f"effort_{j}": current[:, i] * factor[i] for i, j in enumerate(names)}}
    pl.DataFrame(torque).write_csv(tmp_path / "torque.csv")
    log = {"timestamp": t, **{f"{p}_{i}": x[:, i] for p, x in (("actual_q", q), ("actual_qd", qd),
                                                              ("actual_current", current)) for i in range(len(names))}}
    pl.DataFrame(log).write_csv(tmp_path / "robot_data.txt", separator=" ")
    reports = []
    for args in (["torque.csv"], ["robot_data.txt", "--input-format", "csv", "--preset", "ur-rtde", "--effort-is",
                                  "current", "--actuators", drives_path]):
        result = run("identify", ARM, tmp_path / args[0], *args[1:], "--format", "json", "-q")
        assert result.exit_code == 0, (args, result.stderr)
        reports.append(json.loads(result.stdout))
    a, b = ([j["friction"][k] for j in r["joints"] for k in ("viscous", "coulomb")] +
            [p["value"] for p in r["base_parameters"]] for r in reports)
    np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
    assert reports[1]["consistent"] and reports[1]["samples"] == len(t)
    result = run("identify", ARM, tmp_path / "robot_data.txt", "--input-format", "csv", "--preset", "ur-rtde",
                 "--effort-is", "current")
    assert result.exit_code == 2 and "--effort-is current: needs --actuators" in result.stderr, result.stderr


def test_a_solver_that_does_not_converge_is_one_line_and_no_file(ur5_runs, tmp_path, monkeypatch):
    """Never a silent bad model: the consistent estimate given too few Newton steps to converge
    says so in one line, exit 2, and writes no URDF."""
    import importlib

    robot, runs, held_out, folder = ur5_runs
    # the module (the package's `estimate` is its function)
    monkeypatch.setattr(importlib.import_module("rnea_cli.run.answers.identify.estimate"), "NEWTON", 2)
    out = tmp_path / "x.urdf"
    result = run("identify", robot.model.source, runs[0], "-o", out)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "did not converge in 2 Newton steps" in result.stderr and not out.exists(), result.stderr
