"""Many trajectories in one run (--output-dir, --jobs): worker processes give the bytes of one at a
time, and end with their parent."""

import json
import os
import xml.etree.ElementTree as ET

import polars as pl
import pytest

from conftest import ROBOTS, open_files, run


ARM = ROBOTS / "arm7.urdf"
ARM_CSV = ROBOTS / "arm7_traj.csv"


@pytest.fixture
def inputs(tmp_path):
    """Four trajectories: two good, one that breaks a limit (faster), one bad file."""
    frame = pl.read_csv(ARM_CSV)
    (tmp_path / "in").mkdir()
    frame.write_csv(tmp_path / "in" / "a.csv")
    frame.head(200).write_csv(tmp_path / "in" / "b.csv")
    fast = frame.with_columns(pl.col("time") / 2, *(pl.col(c) * 2 for c in frame.columns if c.startswith("qd_")),
                              *(pl.col(c) * 4 for c in frame.columns if c.startswith("qdd_")))
    fast.write_csv(tmp_path / "in" / "c.csv")
    (tmp_path / "in" / "d.csv").write_text("time,q_nothing\n0,1\n")
    return [tmp_path / "in" / f"{k}.csv" for k in "abcd"]


def test_many_files_give_the_bytes_of_one_at_a_time(tmp_path, inputs):
    result = run("torques", ARM, *inputs, "--output-dir", tmp_path / "out", "--jobs", "2")
    assert result.exit_code == 2  # d.csv is bad; the others are still done
    assert sorted(os.listdir(tmp_path / "out")) == ["a.csv", "b.csv", "c.csv"]
    for path in inputs[:3]:
        alone = run("torques", ARM, path, "-q").stdout
        assert (tmp_path / "out" / path.name).read_text() == alone
    lines = result.stderr.splitlines()
    assert any(line.startswith(str(inputs[0])) and " 401 " in line and line.rstrip().endswith("ok") for line in lines)
    assert any(str(inputs[3]) in line and "bad input" in line for line in lines)
    assert "missing q for joints" in result.stderr
    quiet = run("torques", ARM, *inputs, "--output-dir", tmp_path / "quiet", "--jobs", "1", "-q")
    assert quiet.exit_code == 2 and quiet.stderr == f"rnea: error: {inputs[3]}: missing q for joints " + \
        ", ".join(f"arm7_joint{k}" for k in range(1, 8)) + "\n", quiet.stderr  # -q: the error alone, no table
    parquet = run("torques", ARM, *inputs[:2], "--output-dir", tmp_path / "pq", "--format", "parquet")
    assert parquet.exit_code == 0 and sorted(os.listdir(tmp_path / "pq")) == ["a.parquet", "b.parquet"]


def test_many_files_read_their_robot_once_and_a_later_run_reads_it_again(tmp_path, inputs, monkeypatch):
    import rnea_cli.model.robot

    loads = []
    load_robot = rnea_cli.model.robot.load_robot
    monkeypatch.setattr(rnea_cli.model.robot, "load_robot", lambda *a, **k: loads.append(a) or load_robot(*a, **k))
    robot = tmp_path / "arm.urdf"
    robot.write_text(ARM.read_text())
    result = run("torques", robot, *inputs[:3], "--output-dir", tmp_path / "out", "--jobs", "1")
    assert result.exit_code == 0 and len(loads) == 1
    first = (tmp_path / "out" / "a.csv").read_text()
    before, mass, after = ARM.read_text().rpartition('<mass value="')  # the last link's: a payload
    heavier = before + mass + "2" + after
    robot.write_text(heavier)
    result = run("torques", robot, *inputs[:3], "--output-dir", tmp_path / "out", "--jobs", "1")
    assert result.exit_code == 0 and len(loads) == 2
    assert (tmp_path / "out" / "a.csv").read_text() != first
    from rnea_cli.run.session import Models, RunOptions  # a file changed on disk is read again (the key: its stat)

    models, options = Models(), RunOptions()
    heavy = models.load(str(robot), options, fixed_joints=True)
    assert models.load(str(robot), options, fixed_joints=True) is heavy
    assert models.load(str(robot), options) is not heavy  # (folded: another model)
    robot.write_text(ARM.read_text())
    assert models.load(str(robot), options, fixed_joints=True) is not heavy


def test_check_over_many_files(tmp_path, inputs):
    """Exit 1 when one file breaks a limit (2 would be a bad input); one JUnit testsuite per file,
    JSON as a list, GitHub annotations naming each file."""
    limits = tmp_path / "limits.yaml"
    limits.write_text("arm7_joint2: {effort: 60}\n")
    good = inputs[:3]
    junit = run("check", ARM, *good, "--limits", limits, "--format", "junit")
    assert junit.exit_code == 1
    root = ET.fromstring(junit.stdout)
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [f"rnea check {p}" for p in good]
    assert int(root.get("failures")) == sum(int(s.get("failures")) for s in suites) > 0
    assert suites[2].get("failures") != "0" and suites[0].get("failures") == "0"
    docs = json.loads(run("check", ARM, *good, "--limits", limits, "--format", "json").stdout)
    assert [d["trajectory"] for d in docs] == [str(p) for p in good] and [d["ok"] for d in docs] == [True, True, False]
    github = run("check", ARM, *good, "--limits", limits, "--format", "github").stdout
    assert f"::error file={inputs[2]}," in github and str(inputs[0]) not in github
    bad = run("check", ARM, *inputs, "--format", "json")
    assert bad.exit_code == 2 and json.loads(bad.stdout)[3]["error"].startswith("rnea: error:")
    text = run("check", ARM, *inputs).stdout  # the text report too names the file it could not check
    assert f"== {inputs[3]}\nBAD INPUT: {inputs[3]}: missing q for joints" in text, text


def test_reports_and_plots_of_many_files_in_workers_are_those_of_one_at_a_time(tmp_path, inputs, monkeypatch):
    """(A worker draws in itself: a worker process may start none of its own, though a report
    alone is drawn in two, as it is here whatever the cores CI has.)"""
    monkeypatch.setattr("rnea_cli.workers.usable_cores", lambda: 2)
    for command, name in (("report", "a.html"), ("plot", "a.png")):
        result = run(command, ARM, *inputs[:2], "--output-dir", tmp_path / command, "--jobs", "2")
        assert result.exit_code == 0 and sorted(os.listdir(tmp_path / command)) == [name, "b" + name[1:]], result.stderr
        alone = tmp_path / ("alone-" + name)
        assert run(command, ARM, inputs[0], "-o", alone, "-q").exit_code == 0
        assert (tmp_path / command / name).read_bytes() == alone.read_bytes()
    assert "Missing option '-o'" in run("report", ARM, inputs[0]).stderr


def test_a_bug_in_one_file_of_many_is_exit_70_and_failed(tmp_path, inputs, monkeypatch):
    import rnea_cli.run.pipeline

    def broken(self, chunk, traj):
        raise AssertionError("a bug")

    monkeypatch.setattr(rnea_cli.run.pipeline.Pipeline, "compute", broken)
    result = run("torques", ARM, *inputs, "--output-dir", tmp_path / "out", "--jobs", "1")
    assert result.exit_code == 70, result.stderr  # before the bad input's 2: a bug of ours is never green
    assert [line.split()[-1] for line in result.stderr.splitlines()[-4:]] == ["failed", "failed", "failed", "input"]
    assert f"rnea: internal error: {inputs[0]}: AssertionError: a bug" in result.stderr
    assert os.listdir(tmp_path / "out") == []
    junit = run("check", ARM, *inputs, "--format", "junit", "--jobs", "1")  # a CI dashboard never shows them green
    assert junit.exit_code == 70 and junit.stdout.count("<testsuite ") == 4
    assert junit.stdout.count('type="internal error"') == 3 and junit.stdout.count('type="bad input"') == 1
    github = run("check", ARM, *inputs, "--format", "github", "--jobs", "1").stdout
    assert all(f"::error file={p}," in github for p in inputs) and github.count("internal error::") == 3


def test_a_bad_rnea_threads_is_refused_with_many_files_too(tmp_path, inputs, monkeypatch):
    monkeypatch.setenv("RNEA_THREADS", "abc")
    result = run("torques", ARM, *inputs[:2], "--output-dir", tmp_path / "out")
    assert result.exit_code == 2 and "RNEA_THREADS: 'abc' is not a number of threads" in result.stderr
    assert not (tmp_path / "out").exists()


def test_ctrl_c_with_one_job_stops_the_whole_run(tmp_path, inputs, monkeypatch):
    import rnea_cli.run.pipeline

    compute, seen = rnea_cli.run.pipeline.Pipeline.compute, []

    def interrupted(self, chunk, traj):
        seen.append(traj.label)
        if len(set(seen)) == 2:
            raise KeyboardInterrupt
        return compute(self, chunk, traj)

    monkeypatch.setattr(rnea_cli.run.pipeline.Pipeline, "compute", interrupted)
    result = run("torques", ARM, *inputs[:3], "--output-dir", tmp_path / "out", "--jobs", "1")
    assert result.exit_code == 130 and "rnea: interrupted" in result.stderr
    assert sorted(set(seen)) == [str(p) for p in inputs[:2]]  # the third file never started
    assert os.listdir(tmp_path / "out") == ["a.csv"]  # what was done stays; the interrupted file leaves nothing


def test_many_file_usage_errors(tmp_path, inputs):
    result = run("torques", ARM, *inputs[:2])
    assert result.exit_code == 2 and "give --output-dir" in result.stderr
    for output in (tmp_path / "x.csv", "-"):
        result = run("torques", ARM, *inputs[:2], "-o", output, "--output-dir", tmp_path / "out")
        assert result.exit_code == 2 and "-o with several trajectories" in result.stderr
    result = run("compare", ARM, ROBOTS / "arm7_measured.csv", inputs[0], "--max-rms", "-1")  # refused by each run
    assert result.exit_code == 2 and result.stderr.count("rnea: error: Invalid value for --max-rms: -1.0 is not a "
                                                         "finite number of at least 0 (see rnea compare --help)") == 2
    twin = tmp_path / "twin"
    twin.mkdir()
    (twin / "a.csv").write_text(inputs[0].read_text())
    result = run("torques", ARM, inputs[0], twin / "a.csv", "--output-dir", tmp_path / "out")
    assert result.exit_code == 2 and "has the same name as" in result.stderr
    assert run("check", ARM, inputs[0], twin / "a.csv").exit_code == 0  # check writes no files: no collision
    compared = run("compare", ARM, ROBOTS / "arm7_measured.csv", twin / "a.csv")  # residuals only with a dir
    assert compared.exit_code == 2 and f"== {ROBOTS / 'arm7_measured.csv'}" in compared.stdout
    assert "no measured effort" in compared.stderr
    table = run("compare", ARM, ROBOTS / "arm7_measured.csv", twin / "a.csv", ROBOTS / "arm7_measured.csv",
                "--format", "csv")
    alone = pl.read_csv(run("compare", ARM, ROBOTS / "arm7_measured.csv", "--format", "csv").stdout.encode())
    both = pl.read_csv(table.stdout.encode())  # one CSV table: the files' rows, the bad one's error on stderr
    assert table.exit_code == 2 and both.columns == ["trajectory"] + alone.columns
    assert both.drop("trajectory").equals(pl.concat([alone, alone]))
    assert both["trajectory"].to_list() == [str(ROBOTS / "arm7_measured.csv")] * (2 * alone.height)


def test_a_bad_file_among_many_is_in_every_ci_format(tmp_path, inputs):
    """JUnit gets a suite with an <error> for it, GitHub an ::error naming it, Markdown a heading."""
    junit = run("check", ARM, *inputs, "--format", "junit")
    assert junit.exit_code == 2
    root = ET.fromstring(junit.stdout)
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [f"rnea check {p}" for p in inputs]
    assert suites[3].get("errors") == "1" and root.get("errors") == "1"
    assert "missing q for joints" in suites[3].find("testcase/error").get("message")
    github = run("check", ARM, *inputs, "--format", "github").stdout
    assert f"::error file={inputs[3]},title=rnea check%3A bad input::{inputs[3]}: missing q" in github
    markdown = run("check", ARM, *inputs, "--format", "markdown").stdout
    assert "### ⚠️ rnea check: " in markdown and "BAD INPUT: " in markdown


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc to see the workers")
@pytest.mark.parametrize("how", ["SIGTERM to the parent", "Ctrl-C", "a worker killed"])
def test_workers_end_with_their_parent_and_write_nothing(tmp_path, how):
    """SIGTERM to the parent of a --jobs run alone (not its process group), Ctrl-C (SIGINT to the
    whole group, as a terminal sends it), or a worker killed (as by the kernel out of memory): the
    workers, blocked on inputs that never end (FIFOs held open here), end too; no output appears;
    after Ctrl-C one line, exit 130; after a worker's death one line naming it, exit 2."""
    import signal
    import subprocess
    import sys
    import time

    fifos = [tmp_path / f"{k}.csv" for k in "ab"]
    ends = []
    for fifo in fifos:
        os.mkfifo(fifo)
        ends.append(os.open(fifo, os.O_RDWR))  # never EOF for the reader
        os.write(ends[-1], ARM_CSV.read_bytes()[:2000].rsplit(b"\n", 1)[0] + b"\n")
    proc = subprocess.Popen([sys.executable, "-c", "from rnea_cli.cli import run; run()", "torques", str(ARM),
                             *map(str, fifos), "--output-dir", str(tmp_path / "out"), "--jobs", "2"],
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        def children():
            path = f"/proc/{proc.pid}/task/{proc.pid}/children"
            return open(path).read().split() if os.path.exists(path) else []

        def reading(pids):  # the FIFOs the workers have open
            return set().union(*(open_files(pid).values() for pid in pids)) & set(map(str, fifos))

        for _ in range(6000):  # until both workers read their inputs (at most a minute)
            workers = children()
            if reading(workers) == set(map(str, fifos)) or proc.poll() is not None:
                break
            time.sleep(0.01)
        # (the parent's stderr is read only once it has ended: it stays open while the parent runs)
        assert reading(workers) == set(map(str, fifos)), (workers, proc.poll() is not None and proc.stderr.read())
        if how == "Ctrl-C":
            os.killpg(proc.pid, signal.SIGINT)
            assert proc.wait(60) == 130
            assert proc.stderr.read().decode() == "rnea: interrupted\n"
        elif how == "a worker killed":
            os.kill(int(workers[0]), signal.SIGKILL)
            assert proc.wait(60) == 2
            assert proc.stderr.read().decode() == (f"rnea: error: worker process {workers[0]}: ended by SIGKILL before "
                                                   "its job was done (out of memory?)\n")
        else:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(60) == -15

        def alive(pid):
            try:
                return open(f"/proc/{pid}/stat").read().split()[2] != "Z"
            except OSError:
                return False

        for _ in range(6000):  # until the workers are gone (at most a minute)
            if not any(alive(pid) for pid in workers):
                break
            time.sleep(0.01)
        assert not any(alive(pid) for pid in workers), "a worker outlived its parent"
        assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []
    finally:
        for end in ends:
            os.close(end)
        if proc.poll() is None:
            proc.kill()
        for pid in locals().get("workers", []):  # a failed run leaves no stray worker behind
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_standard_input_among_several_trajectories_is_read_by_this_process(tmp_path, jobs):
    """'-' among several inputs is read here, whatever --jobs (a worker's standard input is
    /dev/null: it read as empty under --jobs 2); its report is the one of the file alone."""
    copy = tmp_path / "copy.csv"
    copy.write_bytes(ARM_CSV.read_bytes())
    alone = json.loads(run("check", ARM, ARM_CSV, "--format", "json").stdout)
    result = run("check", ARM, copy, "-", "--format", "json", "--jobs", jobs, input=ARM_CSV.read_bytes())
    assert result.exit_code == 0, result.stderr
    docs = json.loads(result.stdout)
    assert [d["trajectory"] for d in docs] == [str(copy), "-"]
    assert [d["checks"] for d in docs] == [alone["checks"], alone["checks"]]


def test_inputs_several_runs_cannot_each_read_are_refused(tmp_path):
    for twice in (["-", "-"], ["-", "/dev/stdin"], ["/dev/fd/0", "-"]):  # one stream by any of its names
        result = run("check", ARM, *twice, input=ARM_CSV.read_bytes())
        assert result.exit_code == 2 and result.stderr == \
            f"rnea: error: {twice[0]}: standard input is given twice among the trajectories: it can be read once\n"
    fifo = tmp_path / "limits.fifo"
    os.mkfifo(fifo)
    result = run("check", ARM, ARM_CSV, ARM_CSV, "--limits", fifo)
    assert result.exit_code == 2 and result.stderr == (
        f"rnea: error: {fifo}: --limits is not a regular file (a pipe?): with several trajectories each run reads "
        "it, and a pipe is read once; give a file\n")
