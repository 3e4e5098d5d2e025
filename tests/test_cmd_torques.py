"""`rnea torques`: options, output formats, streams and bad files, through Click's runner and real pipes."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import yaml

from conftest import (ARM, ARM_CSV, ROBOTS, corpus_params, joint_columns, need_corpus, read_csv, read_traj_csv, run,
                      write_csv)
from oracle import assert_matches, pin_model, pin_rnea
from rnea_cli import load_urdf, rnea


PLANAR = str(ROBOTS / "planar2.urdf")
PLANAR_CSV = str(ROBOTS / "planar2_traj.csv")


def test_csv_out_is_exactly_the_library_result():
    result = run("torques", ARM, ARM_CSV, "-q")
    assert result.exit_code == 0 and result.stderr == ""
    model = load_urdf(ARM)
    t, q, qd, qdd = read_traj_csv(ARM_CSV, model)
    header, data = read_csv(result.stdout)
    assert header == ["time"] + [f"tau_{j}" for j in model.joint_names]
    np.testing.assert_array_equal(data[:, 0], t)
    np.testing.assert_array_equal(data[:, 1:], rnea(model, q, qd, qdd))  # bit for bit


@pytest.mark.parametrize("path", corpus_params(["iiwa14"]))
def test_end_to_end_matches_pinocchio(path, tmp_path):
    path = need_corpus(path)
    model = load_urdf(path)
    rng = np.random.default_rng(5)
    q, qd, qdd = rng.uniform(-2, 2, (3, 50, model.n))
    traj = write_csv(tmp_path / "t.csv", joint_columns(model.joint_names, q, qd, qdd))
    result = run("torques", str(path), str(traj), "-q", "--gravity", "0.5,-1,-9.7")
    header, tau = read_csv(result.stdout)
    assert header == [f"tau_{j}" for j in model.joint_names]
    assert_matches(tau, pin_rnea(pin_model(path), model.joint_names, q, qd, qdd, (0.5, -1, -9.7)))


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_json_and_yaml_output_read_back_exactly(fmt, tmp_path):
    out = tmp_path / f"tau.{fmt}"
    assert run("torques", ARM, ARM_CSV, "-o", str(out), "-q").exit_code == 0
    doc = json.loads(out.read_text()) if fmt == "json" else yaml.safe_load(out.read_text())
    _, csv_tau = read_csv(run("torques", ARM, ARM_CSV, "-q").stdout)
    model = load_urdf(ARM)
    np.testing.assert_array_equal(np.array(doc["time"]), csv_tau[:, 0])
    np.testing.assert_array_equal(np.column_stack([doc["tau"][j] for j in model.joint_names]), csv_tau[:, 1:])
    # --format wins over the extension
    assert run("torques", ARM, ARM_CSV, "-o", str(tmp_path / "x.csv"), "--format", fmt, "-q").exit_code == 0
    assert (tmp_path / "x.csv").read_text() == out.read_text()


def test_output_file_is_written_whole(tmp_path):
    out = tmp_path / "tau.csv"
    result = run("torques", ARM, ARM_CSV, "-o", str(out))
    assert result.exit_code == 0 and result.stdout == ""
    assert out.read_text() == run("torques", ARM, ARM_CSV, "-q").stdout
    assert sorted(os.listdir(tmp_path)) == ["tau.csv"]


def test_report_on_stderr():
    result = run("torques", ARM, ARM_CSV)
    lines = result.stderr.splitlines()
    assert lines[0].split() == ["joint", "peak", "|τ|", "at", "t", "(s)", "RMS", "τ", "limit", "peak/limit"]
    row = next(l for l in lines if l.startswith("arm7_joint2 "))
    # peak and RMS computed independently from the CSV output
    _, data = read_csv(result.stdout)
    tau2 = data[:, 2]
    assert f"{np.abs(tau2).max():.4g} N·m" in row and f"{np.sqrt(np.mean(tau2**2)):.4g} N·m" in row
    assert f"{data[np.abs(tau2).argmax(), 0]:.6g}" in row and "320 N·m" in row
    assert f"{100 * np.abs(tau2).max() / 320:.0f} %" in row
    assert lines[-1].startswith("arm7: 7 joints, 401 samples over 4 s")
    assert "\x1b[" not in result.stderr  # plain text when stderr is not a terminal


def test_quiet_prints_nothing_on_stderr():
    assert run("torques", ARM, ARM_CSV, "--quiet").stderr == ""


def test_gravity_option():
    model = load_urdf(PLANAR)
    t, q, qd, qdd = read_traj_csv(PLANAR_CSV, model)
    _, data = read_csv(run("torques", PLANAR, PLANAR_CSV, "-q", "--gravity", "0,-9.81,0").stdout)
    np.testing.assert_array_equal(data[:, 1:], rnea(model, q, qd, qdd, gravity=(0, -9.81, 0)))


@pytest.mark.parametrize("value", ["abc", "0", "-1", "1e3", "99999", "9" * 5000])
def test_a_bad_rnea_threads_is_one_line(monkeypatch, value):
    monkeypatch.setenv("RNEA_THREADS", value)
    result = run("torques", PLANAR, PLANAR_CSV, "-q")
    assert result.exit_code == 2 and result.stderr.startswith("rnea: error: RNEA_THREADS: '") and \
        " is not a number of threads (1 to 4096)\n" in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_bad_files_and_usage(tmp_path):
    result = run("torques", PLANAR, str(tmp_path / "missing.csv"))
    assert result.exit_code == 2 and "missing.csv: cannot read: No such file or directory" in result.stderr
    result = run("torques", str(tmp_path / "missing.urdf"), PLANAR_CSV)
    assert result.exit_code == 2 and "missing.urdf: cannot read" in result.stderr
    (tmp_path / "bad.urdf").write_text("<robot><link name='a'></robot>")
    result = run("torques", str(tmp_path / "bad.urdf"), PLANAR_CSV)
    assert result.exit_code == 2 and "bad.urdf:1: malformed XML" in result.stderr
    result = run("torques", PLANAR, PLANAR)
    assert result.exit_code == 2 and "unknown trajectory format" in result.stderr
    result = run("torques", PLANAR, PLANAR_CSV, "--gravity", "1,2")
    assert result.exit_code == 2 and "is not three finite numbers" in result.stderr
    result = run("torques", PLANAR, PLANAR_CSV, "--format", "xml")
    assert result.exit_code == 2
    result = run("torques", PLANAR, PLANAR_CSV, "-o", str(tmp_path / "no" / "dir.csv"))
    assert result.exit_code == 2 and "cannot write" in result.stderr


def rnea_command():
    return [sys.executable, "-c", "from rnea_cli.cli import run; run()"]


def test_real_pipes(tmp_path):
    """cat traj.csv | rnea torques robot.urdf - | head -3, and a closed pipe on a long output."""
    cmd = " ".join(rnea_command()[:2]) + ' "from rnea_cli.cli import run; run()"'
    shell = f"cat {PLANAR_CSV} | {cmd} torques {PLANAR} - | head -3"
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True)
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert len(lines) == 3 and lines == run("torques", PLANAR, PLANAR_CSV, "-q").stdout.splitlines()[:3]
    # a long trajectory into `head -1`: rnea is stopped by the closed pipe, with no traceback
    text = pathlib.Path(PLANAR_CSV).read_text().splitlines()
    t = np.arange(200_000) * 0.01
    body = "\n".join(f"{float(x)!r}," + ",".join(["0.1"] * 6) for x in t)
    (tmp_path / "long.csv").write_text(text[0] + "\n" + body + "\n")
    proc = subprocess.Popen(rnea_command() + ["torques", PLANAR, str(tmp_path / "long.csv")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait()
    assert first.startswith(b"time,tau_shoulder")
    assert "Traceback" not in err and "Error" not in err
    assert proc.returncode in (0, -13)


def test_output_to_a_device_or_fifo_is_written_in_place(tmp_path):
    """-o /dev/null must not replace the device with a file; a FIFO is written through."""
    import stat
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = run("torques", PLANAR, PLANAR_CSV, "-o", str(fifo), "-q")
    reader.join(10)
    assert result.exit_code == 0
    assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced by a file"
    assert received[0].decode() == run("torques", PLANAR, PLANAR_CSV, "-q").stdout
    null = tmp_path / "null"  # a device like /dev/null, made here so that a regression cannot harm the real one
    try:
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs root; the FIFO above took the same path through the code")
    assert run("torques", PLANAR, PLANAR_CSV, "-o", str(null), "-q").exit_code == 0
    assert stat.S_ISCHR(os.stat(null).st_mode)


def test_output_file_mode_follows_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        assert run("torques", PLANAR, PLANAR_CSV, "-o", str(tmp_path / "t.csv"), "-q").exit_code == 0
    finally:
        os.umask(old)
    assert oct(os.stat(tmp_path / "t.csv").st_mode & 0o777) == oct(0o644)


@pytest.mark.parametrize("args, message", [
    (["--dt", "nan"], "Invalid value for '--dt': nan is not a finite number above 0"),
    (["--dt", "inf"], "Invalid value for '--dt': inf is not a finite number above 0"),
    (["--dt", "0"], "Invalid value for '--dt': 0.0 is not a finite number above 0"),
])
def test_options_must_be_finite(args, message, tmp_path):
    (tmp_path / "q.csv").write_text("q_shoulder,q_elbow\n0,0\n0.1,0.2\n0.3,0.1\n")
    result = run("torques", PLANAR, str(tmp_path / "q.csv"), *args)
    assert result.exit_code == 2 and message in result.stderr


def test_overflowing_torques_are_an_input_error(tmp_path):
    (tmp_path / "big.csv").write_text("q_shoulder,q_elbow,qd_shoulder,qd_elbow,qdd_shoulder,qdd_elbow\n"
                                      "0,0,0,0,0,0\n0,0,1e200,1e200,0,0\n")
    result = run("torques", PLANAR, str(tmp_path / "big.csv"), "-o", str(tmp_path / "out.csv"))
    assert result.exit_code == 2
    assert result.stderr.strip() == f"rnea: error: {tmp_path / 'big.csv'}: line 3: torques overflow (not finite): " \
                                    "the values of this sample (up to 1e+200) are too large"
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_a_full_disk_is_one_line_and_exit_2():
    result = run("torques", PLANAR, PLANAR_CSV, "-o", "/dev/full")
    assert result.exit_code == 2 and result.stderr.startswith("rnea: error: ")
    assert "No space left on device" in result.stderr and "Traceback" not in result.stderr


def test_joint_names_are_printed_as_they_are(tmp_path):
    urdf = pathlib.Path(PLANAR).read_text().replace('"elbow"', '"el[/x]bow"').replace('"shoulder"', '"sh[bold]"')
    (tmp_path / "r.urdf").write_text(urdf)
    text = pathlib.Path(PLANAR_CSV).read_text().replace("elbow", "el[/x]bow").replace("shoulder", "sh[bold]")
    (tmp_path / "t.csv").write_text(text)
    result = run("torques", str(tmp_path / "r.urdf"), str(tmp_path / "t.csv"))
    assert result.exit_code == 0
    assert "\nel[/x]bow " in result.stderr and "\nsh[bold] " in result.stderr


def test_trailing_blank_lines_yaml_exponents_and_colons_in_csv_headers(tmp_path):
    expected = run("torques", PLANAR, PLANAR_CSV, "-q").stdout
    assert run("torques", PLANAR, "-", "-q", input=pathlib.Path(PLANAR_CSV).read_text() + "\n\n \n").stdout == expected
    doc = "time: [0, 1e-1, 2e-1]\nq: {shoulder: [0, 1e-3, 0], elbow: [0, 0, 0]}\n"
    result = run("torques", PLANAR, "-", "-q", input=doc)
    assert result.exit_code == 0, result.stderr
    urdf = pathlib.Path(PLANAR).read_text().replace('"elbow"', '"arm:elbow"')
    (tmp_path / "r.urdf").write_text(urdf)
    csv_text = "q_shoulder,q_arm:elbow\n0,0\n0.1,0\n0.2,0\n"
    result = run("torques", str(tmp_path / "r.urdf"), "-", "--dt", "0.1", "-q", input=csv_text)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0] == "time,tau_shoulder,tau_arm:elbow"
