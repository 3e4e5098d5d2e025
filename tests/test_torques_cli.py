"""`rnea torques`: options, formats, streams and bad input, through Click's runner and real pipes."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import yaml

from conftest import ARM, ARM_CSV, ARM_YAML, ROBOTS, columns, corpus_params, joint_columns, need_corpus, run, write_csv
from oracle import assert_matches, pin_model, pin_rnea
from rnea_cli import load_urdf, rnea

PLANAR = str(ROBOTS / "planar2.urdf")
PLANAR_CSV = str(ROBOTS / "planar2_traj.csv")



def read_csv(text):
    """(header, (N, columns) array) of a CSV text."""
    cols = columns(text)
    return list(cols), np.column_stack(list(cols.values()))


def read_traj_csv(path, model):
    header, data = read_csv(pathlib.Path(path).read_text())
    col = {name: k for k, name in enumerate(header)}
    pick = lambda qty: data[:, [col[f"{qty}_{j}"] for j in model.joint_names]]
    return data[:, col["time"]], pick("q"), pick("qd"), pick("qdd")


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


def test_csv_and_yaml_inputs_give_identical_torques():
    a, b = run("torques", ARM, ARM_CSV, "-q"), run("torques", ARM, ARM_YAML, "-q")
    assert a.exit_code == b.exit_code == 0
    assert a.stdout == b.stdout


def test_list_of_samples_and_json_inputs(tmp_path):
    model = load_urdf(ARM)
    t, q, qd, qdd = read_traj_csv(ARM_CSV, model)
    samples = [{"time": float(t[k]), **{x: dict(zip(model.joint_names, map(float, arr[k])))
                                        for x, arr in (("q", q), ("qd", qd), ("qdd", qdd))}}
               for k in range(len(t))]
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(samples))
    (tmp_path / "s.json").write_text(json.dumps(samples))
    expected = run("torques", ARM, ARM_CSV, "-q").stdout
    assert run("torques", ARM, str(tmp_path / "s.yaml"), "-q").stdout == expected
    assert run("torques", ARM, str(tmp_path / "s.json"), "-q").stdout == expected


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


def write_q_only(path, t, q, names, degrees=False, with_time=True):
    q = np.degrees(q) if degrees else q
    header = (["time"] if with_time else []) + [f"q_{n}" for n in names]
    rows = [([repr(float(t[k]))] if with_time else []) + [repr(float(x)) for x in q[k]] for k in range(len(q))]
    path.write_text("\n".join(",".join(r) for r in [header] + rows) + "\n")


def test_derived_velocities_degrees_and_dt(tmp_path):
    """q(t) quadratic: finite differences are exact, so torques equal those of the exact derivatives."""
    model = load_urdf(PLANAR)
    t = np.linspace(0, 1, 41)
    a, b, c = np.array([0.3, -0.2]), np.array([1.0, 0.5]), np.array([-2.0, 3.0])
    q = a + b * t[:, None] + c * t[:, None] ** 2
    qd, qdd = b + 2 * c * t[:, None], np.broadcast_to(2 * c, q.shape)
    expected = rnea(model, q, qd, qdd)
    write_q_only(tmp_path / "q.csv", t, q, model.joint_names)
    result = run("torques", PLANAR, str(tmp_path / "q.csv"))
    assert "note: qd and qdd derived from q and time by second-order finite differences" in result.stderr
    np.testing.assert_allclose(read_csv(result.stdout)[1][:, 1:], expected, rtol=1e-9, atol=1e-9)
    write_q_only(tmp_path / "deg.csv", t, q, model.joint_names, degrees=True)
    result = run("torques", PLANAR, str(tmp_path / "deg.csv"), "--degrees", "-q")
    np.testing.assert_allclose(read_csv(result.stdout)[1][:, 1:], expected, rtol=1e-9, atol=1e-9)
    write_q_only(tmp_path / "notime.csv", t, q, model.joint_names, with_time=False)
    result = run("torques", PLANAR, str(tmp_path / "notime.csv"), "--dt", "0.025", "-q")
    header, data = read_csv(result.stdout)
    assert header[0] == "time"
    np.testing.assert_allclose(data[:, 0], t, rtol=0, atol=1e-15)
    np.testing.assert_allclose(data[:, 1:], expected, rtol=1e-9, atol=1e-9)


def test_extra_columns_are_ignored_with_one_notice(tmp_path):
    text = pathlib.Path(PLANAR_CSV).read_text().splitlines()
    rows = [text[0] + ",comment,force_x"] + [line + ",ok,1.5" for line in text[1:]]
    (tmp_path / "x.csv").write_text("\n".join(rows) + "\n")
    result = run("torques", PLANAR, str(tmp_path / "x.csv"))
    assert result.stderr.count("note: ignored 2 columns not read (not of this robot, or not for this command): comment, force_x") == 1
    assert result.stdout == run("torques", PLANAR, PLANAR_CSV, "-q").stdout
    (tmp_path / "comma.csv").write_text("\n".join(line + "," for line in text) + "\n")  # a header ending in a comma
    result = run("torques", PLANAR, str(tmp_path / "comma.csv"))
    assert "note: ignored 1 column not read (not of this robot, or not for this command): (one without a name)\n" \
        in result.stderr, result.stderr


@pytest.mark.parametrize("value", ["abc", "0", "-1", "1e3", "99999", "9" * 5000])
def test_a_bad_rnea_threads_is_one_line(monkeypatch, value):
    monkeypatch.setenv("RNEA_THREADS", value)
    result = run("torques", PLANAR, PLANAR_CSV, "-q")
    assert result.exit_code == 2 and result.stderr.startswith("rnea: error: RNEA_THREADS: '") and \
        " is not a number of threads (1 to 4096)\n" in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_stdin_with_sniffing_and_input_format():
    csv_text = pathlib.Path(PLANAR_CSV).read_text()
    expected = run("torques", PLANAR, PLANAR_CSV, "-q").stdout
    assert run("torques", PLANAR, "-", "-q", input=csv_text).stdout == expected
    yaml_text = pathlib.Path(str(ROBOTS / "planar2_traj.yaml")).read_text()
    assert run("torques", PLANAR, "-", "-q", input=yaml_text).stdout == expected
    assert run("torques", PLANAR, "-", "-q", "--input-format", "yaml", input=yaml_text).stdout == expected


BAD_CSV = {
    "empty": ("", "<stdin>: empty file"),
    "header-only": ("time,q_shoulder,q_elbow\n", "<stdin>: no data rows after the header"),
    "non-numeric": ("time,q_shoulder,q_elbow\n0,0,0\n0.1,abc,0\n0.2,0,0\n",
                    "<stdin>: line 3, column 2 (q_shoulder): not a number: 'abc'"),
    "empty-cell": ("time,q_shoulder,q_elbow\n0,0,0\n0.1,,0\n0.2,0,0\n",
                   "<stdin>: line 3, column 2 (q_shoulder): empty cell"),
    "nan": ("time,q_shoulder,q_elbow\n0,0,0\n0.1,0,nan\n0.2,0,0\n",
            "<stdin>: line 3, column 3 (q_elbow): not finite: 'nan'"),
    "infinity": ("time,q_shoulder,q_elbow\n0,0,0\n0.1,0,0\n0.2,-inf,0\n",
                 "<stdin>: line 4, column 2 (q_shoulder): not finite: '-inf'"),
    "too-few": ("time,q_shoulder,q_elbow\n0,0,0\n0.1,0\n", "<stdin>: line 3: 2 fields, expected 3 (as in the header)"),
    "too-many": ("time,q_shoulder,q_elbow\n0,0,0,7\n", "<stdin>: line 2: 4 fields, expected 3 (as in the header)"),
    "blank-line": ("time,q_shoulder,q_elbow\n0,0,0\n\n0.2,0,0\n",
                   "<stdin>: line 3: blank line (blank lines may only end the file)"),
    "unclosed-quote": ("time,q_shoulder,q_elbow,note\n0,0,0,a\n0.1,0,0,\"open\n0.2,0,0,b\n0.3,0,0,c\n0.4,0,0,d\n",
                       "<stdin>: line 3: a quoted cell runs on past the end of the line (a missing closing quote?)"),
    "quoted-newline": ("time,q_shoulder,q_elbow,note\n0,0,0,a\n0.1,0,0,\"two\nlines\"\n0.2,0,0,b\n0.3,0,0,c\n",
                       "<stdin>: line 3: a quoted cell runs on past the end of the line"),
    "missing-joint": ("time,q_shoulder\n0,0\n", "<stdin>: missing q for joint elbow"),
    "missing-qd": ("time,q_shoulder,q_elbow,qd_shoulder\n0,0,0,0\n", "<stdin>: missing qd for joint elbow"),
    "time-not-increasing": ("time,q_shoulder,q_elbow\n0,0,0\n0.1,0,0\n0.1,0,0\n0.3,0,0\n",
                            "<stdin>: line 4: time 0.1 is not after the previous time 0.1"),
    "too-short": ("time,q_shoulder,q_elbow\n0,0,0\n0.1,0,0\n",
                  "<stdin>: 2 samples: at least 3 are needed to derive qd and qdd"),
    "no-time": ("q_shoulder,q_elbow\n0,0\n0.1,0\n0.1,0\n", "<stdin>: no time column and no velocities"),
    "no-time-for-qdd": ("q_shoulder,q_elbow,qd_shoulder,qd_elbow\n0,0,0,0\n0.1,0,0,0\n0.1,0,0,0\n",
                        "<stdin>: no time column: cannot derive qdd (give --dt or the columns)"),
    "duplicate-column": ("time,q_shoulder,q_elbow,q_elbow\n0,0,0,0\n",
                         "<stdin>: line 1, column 4: duplicate column 'q_elbow'"),
}


@pytest.mark.parametrize("case", BAD_CSV, ids=list(BAD_CSV))
def test_bad_csv_one_line_exit_2(case, tmp_path):
    text, message = BAD_CSV[case]
    out = tmp_path / "out.csv"
    result = run("torques", PLANAR, "-", "--input-format", "csv", "-o", str(out), input=text)
    assert result.exit_code == 2
    errors = [l for l in result.stderr.splitlines() if l.startswith("rnea: error:")]
    assert len(errors) == 1 and errors[0].startswith(f"rnea: error: {message}"), result.stderr
    assert "Traceback" not in result.stderr
    assert os.listdir(tmp_path) == []  # no output file, no temp file
    # on stdout: nothing at all, not even the header
    assert run("torques", PLANAR, "-", "--input-format", "csv", input=text).stdout == ""


BAD_DOCS = {
    "yaml-syntax": ("q: {shoulder: [1, 2}\n", "yaml", "<stdin>: line 1, column 20: invalid YAML"),
    "json-syntax": ('{"q": {"shoulder": [1, 2}\n', "json", "<stdin>: line 1, column 25: invalid JSON"),
    "not-a-number": ("time: [0, 1, 2]\nq: {shoulder: [0, x, 0], elbow: [0, 0, 0]}\n", "yaml",
                     "<stdin>: q.shoulder[1]: not a number: 'x'"),
    "nan": ('{"time": [0, 1, 2], "q": {"shoulder": [0, NaN, 0], "elbow": [0, 0, 0]}}', "json",
            "<stdin>: q.shoulder[1]: not finite: nan"),
    "lengths": ("time: [0, 1, 2]\nq: {shoulder: [0, 0], elbow: [0, 0, 0]}\n", "yaml",
                "<stdin>: lists of different lengths (2, 3)"),
    "missing-joint": ("time: [0, 1, 2]\nq: {shoulder: [0, 0, 0]}\n", "yaml", "<stdin>: missing q for joint elbow"),
    "wrong-shape": ("- 1\n- 2\n", "yaml", "<stdin>: sample 0: expected a mapping"),
}


@pytest.mark.parametrize("case", BAD_DOCS, ids=list(BAD_DOCS))
def test_bad_yaml_json_one_line_exit_2(case):
    text, fmt, message = BAD_DOCS[case]
    result = run("torques", PLANAR, "-", "--input-format", fmt, input=text)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(f"rnea: error: {message}"), result.stderr


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


def test_dt_with_a_time_column_is_an_error():
    result = run("torques", PLANAR, PLANAR_CSV, "--dt", "0.5")
    assert result.exit_code == 2 and "--dt is for a trajectory without a time column" in result.stderr


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


def test_yaml_keys_that_are_not_strings_are_named_as_yaml_writes_them(tmp_path):
    """A null, boolean or number key under q is no joint: the notice spells it as YAML does."""
    import yaml

    doc = yaml.safe_load(pathlib.Path(str(ROBOTS / "planar2_traj.yaml")).read_text())
    count = len(doc["time"])
    doc["q"].update({None: [0.0] * count, True: [0.0] * count, 7: [0.0] * count})
    (tmp_path / "x.yaml").write_text(yaml.safe_dump(doc))
    result = run("torques", PLANAR, str(tmp_path / "x.yaml"))
    assert result.exit_code == 0, result.stderr
    assert "ignored 3 entries not read (not of this robot, or not for this command): q.null, q.true, q.7" in \
        result.stderr
    assert result.stdout == run("torques", PLANAR, str(ROBOTS / "planar2_traj.yaml"), "-q").stdout


def test_times_of_a_log_stamped_in_seconds_since_1970_tell_samples_apart(tmp_path):
    """Six significant digits would show 1.7e+09 for every peak (and 12345.5 for 12345.52). A
    clock time is counted from its first value (doubles of 1.7e9 s are 238 ns apart), which a note
    gives: the reports are those of the same log counted from 0."""
    from rnea_cli.outputs.report import time_text

    assert [time_text(t) for t in (0.0125, 999.125, 12345.52, -12345.52, float("nan"))] == \
        ["0.0125", "999.125", "12345.520", "-12345.520", "—"]
    text = pathlib.Path(ARM_CSV).read_text().splitlines()
    header = text[0].split(",")
    assert header[0] == "time"
    rows = [f"{1_700_000_000 + float(line.split(',', 1)[0]):.3f},{line.split(',', 1)[1]}" for line in text[1:]]
    (tmp_path / "epoch.csv").write_text("\n".join([text[0]] + rows) + "\n")
    report = run("torques", ARM, tmp_path / "epoch.csv", "-o", tmp_path / "tau.csv").stderr
    assert "note: time 0 at 1700000000 s, the first time" in report and "e+09" not in report, report
    plain = run("torques", ARM, ARM_CSV, "-o", tmp_path / "plain.csv").stderr
    assert report.split("\n", 1)[1] == plain, report
    assert (tmp_path / "tau.csv").read_bytes() == (tmp_path / "plain.csv").read_bytes()
    limits = tmp_path / "limits.yaml"
    limits.write_text("arm7_joint2: {effort: 40}\n")
    github = run("check", ARM, tmp_path / "epoch.csv", "--limits", limits, "--format", "github").stdout
    assert github == run("check", ARM, ARM_CSV, "--limits", limits, "--format", "github").stdout.replace(
        str(ARM_CSV), str(tmp_path / "epoch.csv"))
    assert "first at t=0 s" in github, github