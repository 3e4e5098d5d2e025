"""What rnea promises on hostile input (docs/promises.md): exit 0 with finite numbers,
or exit 2 with one line naming the input and no output file; never a traceback, an internal
error (70), a hang or a memory blow-up. One test per class of problem, then a bounded fuzz of
every reader."""

import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import ARM, ARM_CSV, CONTROL, ROBOTS, child, cli, one_line_error, run

PLANAR = ROBOTS / "planar2.urdf"
PLANAR_CSV = ROBOTS / "planar2_traj.csv"


# -- wrong numbers with exit 0 ------------------------------------------------------------------

def test_overflow_is_an_error_naming_its_cause_never_infinity(tmp_path):
    drives = tmp_path / "drives.yaml"
    drives.write_text("shoulder: {gear_ratio: 1e70, rotor_inertia: 1.0}\n")  # armature 1e140: allowed
    traj = tmp_path / "t.csv"
    traj.write_text("time,q_shoulder,q_elbow,qd_shoulder,qd_elbow,qdd_shoulder,qdd_elbow\n0,0,0,0,0,1e200,0\n")
    for fmt in ("text", "json"):
        result = run("check", PLANAR, traj, "--actuators", drives, "--format", fmt)
        one_line_error(result, "line 2: armature of joint shoulder overflows (not finite): --actuators gear_ratio²")
        assert "Infinity" not in result.stdout and "inf" not in result.stdout.lower()
    heavy = tmp_path / "h.urdf"
    heavy.write_text(PLANAR.read_text().replace('<mass value="', '<mass value="1e90" was="', 1))
    traj.write_text("q_shoulder,q_elbow,qd_shoulder,qd_elbow,qdd_shoulder,qdd_elbow\n0,0,0,0,1e250,1e250\n")
    one_line_error(run("torques", heavy, traj, "-o", tmp_path / "o.csv"), "the robot's masses and inertias (up to")
    assert not (tmp_path / "o.csv").exists()
    drives.write_text("shoulder: {torque_constant: 1e-320}\n")  # a current of motor / 1e-320
    one_line_error(run("torques", PLANAR, PLANAR_CSV, "--actuators", drives, "-o", tmp_path / "o.csv"),
                   f"{drives}: shoulder: 1 / torque_constant is inf")
    drives.write_text("shoulder: {torque_constant: 1e-150}\n")
    for qd, what in (("1e110", "power of joint shoulder overflows (not finite): its effort"),  # tau 1e220 x qd
                     ("1e80", "current of joint shoulder overflows (not finite): --actuators torque_constant")):
        traj.write_text("time,q_shoulder,q_elbow,qd_shoulder,qd_elbow,qdd_shoulder,qdd_elbow\n"
                        f"0,0,1,{qd},{qd},0,0\n0.1,0,1,{qd},{qd},0,0\n")  # tau 1e160 / kt 1e-150
        one_line_error(run("torques", PLANAR, traj, "--actuators", drives, "-o", tmp_path / "o.csv"), "line 2: " + what)
    assert not (tmp_path / "o.csv").exists()


def test_numbers_too_large_in_the_urdf_are_refused_where_they_stand(tmp_path):
    for attribute, value in (("mass", "1e300"), ("damping", "1e308"), ("xyz", "1e200 0 0")):
        text = PLANAR.read_text()
        if attribute == "mass":
            text = text.replace('<mass value="', f'<mass value="{value}" was="', 1)
        elif attribute == "damping":
            text = text.replace("<limit", f'<dynamics damping="{value}"/><limit', 1)
        else:
            text = re.sub(r'<origin xyz="[^"]*"', f'<origin xyz="{value}"', text, count=1)
        path = tmp_path / "big.urdf"
        path.write_text(text)
        one_line_error(run("info", path), "is too large (at most 1e+100 in size")


# -- resource blow-ups --------------------------------------------------------------------------

def test_a_yaml_alias_bomb_is_refused_small_and_fast(tmp_path):
    bomb = "a: &a [1,1,1,1,1,1,1,1,1,1]\n" + "".join(
        f"{chr(98 + k)}: &{chr(98 + k)} [{','.join('*' + chr(97 + k) for _ in range(10))}]\n" for k in range(8))
    assert len(bomb) < 500
    for target, args in (("traj", ("torques", ARM, "{path}")), ("limits", ("check", ARM, ARM_CSV, "--limits",
                                                                            "{path}"))):
        path = tmp_path / f"{target}.yaml"
        path.write_text(bomb)
        code, err, rss = child(cli(*(str(a).format(path=path) for a in args)))
        assert code == 2 and err.count("\n") == 1 and "aliases" in err, err
        assert rss < 400


def test_a_huge_attribute_is_not_copied_into_the_message(tmp_path):
    path = tmp_path / "a.urdf"
    path.write_text(PLANAR.read_text().replace('name="elbow"', 'name="elbow" ' + 'x' * 10 + '="1"', 1).replace(
        '<axis xyz="0 0 1"/>', '<axis xyz="' + "7" * 5_000_000 + '"/>', 1))
    one_line_error(run("info", path), "is not 3 numbers")


# -- internal errors instead of a message -------------------------------------------------------


@pytest.mark.parametrize("name, data", [
    ("zero.yaml", "time: [-0, 1, 2]\nq: {shoulder: [-0, 0, -00], elbow: [0, 1, 2]}\n"),
    ("zero.json", '{"time": [-0, 1, 2], "q": {"shoulder": [-0, 0, -0], "elbow": [0, 1, 2]}}'),
])
def test_a_negative_zero_written_as_an_integer_keeps_its_sign(tmp_path, name, data):
    from rnea_cli.model.safeload import load

    doc = load(data.encode(), name, name.rsplit(".", 1)[1])
    assert [math.copysign(1, x) for x in doc["q"]["shoulder"]] == [-1, 1, -1]
    path = tmp_path / name
    path.write_text(data)
    out = run("torques", PLANAR, path, "-q")
    assert out.exit_code == 0 and out.stdout.splitlines()[1].startswith("-0.0,"), out.stdout


def test_closed_standard_streams():
    code, err, _ = child("import sys\nsys.stdin.close()\nsys.stdin = None\n" + cli("torques", PLANAR, "-"))
    assert code == 2 and err == "rnea: error: <stdin>: standard input is closed\n", err
    code, err, _ = child("import sys\nsys.stdout.close()\nsys.stdout = None\n" + cli("torques", PLANAR, PLANAR_CSV,
                                                                                     "-q"))
    assert code == 2 and "<stdout>: standard output is closed" in err, err


# -- classes ------------------------------------------------------------------------------------

ODD = ["1_0", "0x10", "1:30", "inf", "nan", ".5", "+2", "1e3", "007", "true", "", "1,5", "١٢", "0.1e-2"]


@pytest.mark.parametrize("cell", ODD)
def test_every_format_reads_a_number_alike(tmp_path, cell):
    """CSV, YAML, JSON and a limits file agree on what is a number (and which)."""
    outcomes = {}
    csv_text = f"q_shoulder,q_elbow\n0,{cell}\n" if "," not in cell else f'q_shoulder,q_elbow\n0,"{cell}"\n'
    (tmp_path / "t.csv").write_text(csv_text)
    (tmp_path / "t.yaml").write_text(f"q: {{shoulder: [0], elbow: [{cell}]}}\n" if cell else
                                     "q: {shoulder: [0], elbow: [null]}\n")
    (tmp_path / "t.json").write_text(json.dumps({"q": {"shoulder": [0], "elbow": [cell]}}))
    for name in ("t.csv", "t.yaml", "t.json"):
        result = run("torques", PLANAR, tmp_path / name, "--static", "-q")
        outcomes[name] = result.exit_code
        if result.exit_code == 2:
            one_line_error(result)
    limits = tmp_path / "limits.yaml"
    limits.write_text(f"elbow: {{effort: {cell or 'null'}}}\n")
    verdict = run("check", PLANAR, PLANAR_CSV, "--limits", limits)
    accepted = outcomes["t.csv"] == 0
    assert outcomes["t.yaml"] == outcomes["t.csv"], outcomes
    if cell not in ("", "inf", "nan"):  # JSON holds the text as a string, as a quoted CSV cell
        assert outcomes["t.json"] == outcomes["t.csv"], outcomes
    if cell:
        assert (verdict.exit_code != 2) == (accepted and float(cell) > 0), (cell, verdict.stderr)


def test_control_characters_from_input_never_reach_the_terminal(tmp_path):
    nasty = "\x1b]0;pwned\x07\x1b[2J\x0c"
    (tmp_path / "t.csv").write_text(f"q_shoulder,q_elbow\n0,{nasty}\n")
    one_line_error(run("torques", PLANAR, tmp_path / "t.csv", "--static"), "not a number")
    (tmp_path / "n.yaml").write_text(f"q: {{'{nasty}': [0]}}\n")
    result = run("torques", PLANAR, tmp_path / "n.yaml", "--static")
    one_line_error(result)
    urdf = tmp_path / "n.urdf"
    urdf.write_text(PLANAR.read_text().replace('name="elbow"', 'name="elb&#27;[2Jow"'))
    one_line_error(run("info", urdf), "malformed XML")  # XML has no place for ESC
    urdf.write_text(PLANAR.read_text().replace('name="elbow"', 'name="elb\u202e\u0085ow"'))  # XML has for these
    (tmp_path / "e.csv").write_text("q_shoulder,q_elb\u202e\u0085ow\n0,0\n1,1\n2,2\n", encoding="utf-8")
    result = run("torques", urdf, tmp_path / "e.csv", "--dt", "0.1")
    assert result.exit_code == 0 and "elb\\u202e\\x85ow" in result.stderr
    assert "\u202e" not in result.stderr and "\x85" not in result.stderr
    junit = run("check", urdf, tmp_path / "e.csv", "--dt", "0.1", "--format", "junit").stdout
    __import__("xml.etree.ElementTree").etree.ElementTree.fromstring(junit)  # still well-formed XML
    assert not CONTROL.search(junit.replace("\n", "")) and "\u202e" not in junit


def test_outputs_that_cannot_be_written_name_the_right_file(tmp_path):
    one_line_error(run("torques", PLANAR, PLANAR_CSV, "-o", ""), "-o: the output file name is empty")
    if __import__("os").path.exists("/dev/full"):
        one_line_error(run("torques", PLANAR, PLANAR_CSV, "-o", "/dev/full"), "/dev/full: cannot write: No space")
    one_line_error(run("torques", PLANAR, PLANAR_CSV, "-o", tmp_path / "no" / "such" / "x.csv"),
                   "x.csv: cannot write")
    one_line_error(run("torques", PLANAR, PLANAR_CSV, "-o", tmp_path), "cannot write: is a directory")


def test_report_values_stay_readable(tmp_path):
    limits = tmp_path / "l.yaml"
    limits.write_text("elbow: {effort: 1e-300}\n")
    result = run("check", PLANAR, PLANAR_CSV, "--limits", limits)
    assert result.exit_code == 1
    assert max(len(cell) for line in result.stdout.splitlines() for cell in line.split()) < 40


def test_usage_errors_are_one_line_too():
    for args in (["torques", PLANAR, PLANAR_CSV, "--smooth", "0"], ["torques", PLANAR, PLANAR_CSV, "--time-unit", "x"],
                 ["check", PLANAR, PLANAR_CSV, "--margin", "nan"], ["torques", PLANAR, PLANAR_CSV, "--gravity", "1,2"],
                 ["torques", PLANAR, PLANAR_CSV, "--no-such-option"], ["no-such-command"]):
        one_line_error(run(*args), "(see rnea")


@pytest.mark.parametrize("command", ["check", "scale", "payload"])
@pytest.mark.parametrize("entry, what", [("limits", "arm7_joint2: {effort: 1e-320}"),
                                         ("limits", "arm7_joint2: {rms_effort: 1e-320}"),
                                         ("actuators", "arm7_joint2: {gear_ratio: 100, max_speed: 1e-320}"),
                                         ("actuators", "arm7_joint2: {gear_ratio: 100, peak_torque: 1e-320}"),
                                         ("actuators", "arm7_joint2: {gear_ratio: 100, envelope: [[0, 1e-320], "
                                                       "[1, 1e-320]]}")])
def test_a_limit_too_small_to_measure_against_is_one_line(tmp_path, command, entry, what):
    """value / limit would overflow (or its percentage would): an error naming the file, joint and
    limit, never Infinity in JSON or 'inf %' in a report."""
    path = tmp_path / "f.yaml"
    extra = ["--link", "arm7_link7"] if command == "payload" else []
    for tiny in ("1e-320", "1e-306"):
        path.write_text(what.replace("1e-320", tiny) + "\n")
        for fmt in ("json", "text") if command == "scale" else ("json", "text", "markdown"):
            if command == "payload" and fmt == "markdown":
                continue
            result = run(command, ARM, ARM_CSV, f"--{entry}", path, "--format", fmt, *extra)
            # check measures every value: past 1e306 of its limit an error (a motor torque near 0.5 N·m
            # against 1e-306 is 5e305: a finite, if absurd, share)
            beyond = tiny == "1e-320" or not ("peak_torque" in what or "envelope" in what)
            if command == "check":
                assert (result.exit_code == 2) == beyond, (result.exit_code, result.stderr)
            if result.exit_code == 2:
                one_line_error(result, f"{path}: arm7_joint2 ")
            else:  # scale and payload may answer exactly (a factor of 0 speed, no payload): finite numbers
                assert result.exit_code in (0, 1), result.stderr
                text = (result.stdout + result.stderr).lower()
                assert "infinity" not in text and "nan" not in text and "inf " not in text, text


def test_statistics_of_huge_finite_values_stay_finite(tmp_path):
    """RMS of torques near 1e300 (their squares overflow): the RMS itself, not inf, in every report."""
    traj = tmp_path / "hot.csv"
    traj.write_text("time,q_shoulder,q_elbow,qd_shoulder,qd_elbow,qdd_shoulder,qdd_elbow\n"
                    + "".join(f"{t},0,0,0,0,{1e300 * (1 + t)!r},1e300\n" for t in (0, 0.1, 0.2, 0.3, 0.4)))
    limits = tmp_path / "l.yaml"
    limits.write_text("shoulder: {rms_effort: 10}\n")
    doc = json.loads(run("check", PLANAR, traj, "--limits", limits, "--format", "json").stdout)
    rms = next(c for c in doc["checks"] if c["quantity"] == "rms_effort")
    tau = np.array([float(v) for v in run("torques", PLANAR, traj, "-q").stdout.splitlines()[1].split(",")[1:]])
    assert 1e299 < rms["value"] < 1e301 and np.isfinite(tau).all()
    for command in (["torques", "-o", tmp_path / "o.csv"], ["check"], ["wrenches", "-o", tmp_path / "w.csv"]):
        result = run(command[0], PLANAR, traj, *command[1:])
        assert "inf" not in (result.stdout + result.stderr).lower(), result.stderr
    measured = tmp_path / "m.csv"
    measured.write_text(traj.read_text().replace("qdd_elbow\n", "qdd_elbow,effort_shoulder,effort_elbow\n", 1)
                        .replace("00\n", "00,0,1\n"))
    result = run("compare", PLANAR, measured, "--format", "json")  # squares of 1e300: no correlation or fit
    one_line_error(result, "joint shoulder: the efforts are too large, or too alike, for their correlation and fit "
                           "(values up to 1.52e+300)")


@pytest.mark.parametrize("args", [["check", "--margin", "1e308", "--format", "json"],
                                  ["report", "--margin", "1e308", "-o", "r.html"],
                                  ["scale", "--margin", "1e308", "--format", "json"],
                                  ["payload", "--link", "arm7_tool", "--margin", "1e308"]])
def test_a_margin_that_overflows_a_limit_is_one_line(tmp_path, args):
    args = [str(tmp_path / a) if a.endswith(".html") else a for a in args]
    one_line_error(run(args[0], ARM, ARM_CSV, *args[1:]), "--margin: 1e+308 x the effort limit 320 of arm7_joint1")
    assert list(tmp_path.iterdir()) == []


def test_limits_near_the_largest_double_give_finite_answers(tmp_path):
    limits = tmp_path / "l.yaml"
    limits.write_text("".join(f"arm7_joint{i}: {{effort: 1e308, velocity: 1e308, rms_effort: 1e308}}\n"
                              for i in range(1, 8)))
    for command in (["scale"], ["payload", "--link", "arm7_tool"], ["check"]):
        result = run(command[0], ARM, ARM_CSV, "--limits", limits, "--format", "json", *command[1:])
        assert result.exit_code in (0, 1), result.stderr
        assert "Infinity" not in result.stdout and "NaN" not in result.stdout


def test_gravity_named_as_the_cause_of_an_overflow():
    one_line_error(run("torques", ARM, ARM_CSV, "--gravity", "1e308,0,0"), "--gravity (up to 1e+308) is too large")


def test_an_input_is_never_overwritten(tmp_path):
    traj = tmp_path / "t.csv"
    traj.write_bytes(PLANAR_CSV.read_bytes())
    urdf = tmp_path / "r.urdf"
    urdf.write_bytes(PLANAR.read_bytes())
    for args in (["torques", urdf, traj, "-o", traj], ["torques", urdf, traj, "--output-dir", tmp_path],
                 ["wrenches", urdf, traj, "-o", urdf], ["compare", urdf, traj, "-o", traj]):
        result = run(*args)
        assert result.exit_code == 2 and "is an input of this run" in result.stderr, result.stderr
    assert traj.read_bytes() == PLANAR_CSV.read_bytes() and urdf.read_bytes() == PLANAR.read_bytes()


def test_text_reports_to_a_full_disk_name_stdout():
    if not __import__("os").path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    for args in (["check", PLANAR, PLANAR_CSV], ["info", PLANAR], ["scale", PLANAR, PLANAR_CSV]):
        code = cli(*args)
        with open("/dev/full", "w") as full:
            result = subprocess.run([sys.executable, "-c", code], stdout=full, stderr=subprocess.PIPE, text=True)
        assert result.returncode == 2 and result.stderr == "rnea: error: <stdout>: cannot write: No space left on " \
                                                           "device\n", result.stderr


# -- a bounded fuzz of every reader -------------------------------------------------------------

SEEDS = {
    "csv": PLANAR_CSV.read_bytes()[:2000].rsplit(b"\n", 1)[0] + b"\n",
    "yaml": b"time: [0, 0.1, 0.2, 0.3]\nq: {shoulder: [0, 0.1, 0.2, 0.3], elbow: [1, 1, 1, 1]}\n",
    "json": b'{"time": [0, 0.1, 0.2], "q": {"shoulder": [0, 1, 2], "elbow": [0, 1, 2]}}',
    "urdf": PLANAR.read_bytes(),
    "limits": b"shoulder: {effort: 10, velocity: 2}\nelbow: {lower: -1, upper: 1}\n",
    "drives": b"shoulder: {gear_ratio: 100, rotor_inertia: 1e-5, efficiency: 0.9, peak_torque: 1}\n",
}
PIECES = [b"\n", b",", b'"', b"\r", b"\x00", b"\xff", b"nan", b"1e308", b"-", b"1_0", b" ", b"{", b"[", b"&a",
          b"*a", b"<", b"/>", b"\x1b[2J", b"0x10", b"9" * 400, b":", b"---", b"\t"]


def mutated(seed):
    @st.composite
    def build(draw):
        data = bytearray(seed)
        for _ in range(draw(st.integers(1, 6))):
            at = draw(st.integers(0, len(data)))
            how = draw(st.integers(0, 2))
            if how == 0:
                data[at:at] = draw(st.sampled_from(PIECES))
            elif how == 1:
                del data[at:at + draw(st.integers(1, 40))]
            else:
                data[at:at + 1] = bytes([draw(st.integers(0, 255))])
        return bytes(data)
    return build()


def assert_promise(result, out):
    """Exit 0 with finite output, or exit 2 (1 for check: a limit) with one line and no output file."""
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.stderr)
    if result.exit_code == 2:
        one_line_error(result)
        assert not out.exists()
    elif out.exists():
        text = out.read_text()
        assert "nan" not in text.lower() and "inf" not in text.lower()


@pytest.mark.parametrize("reader", list(SEEDS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                     HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz(tmp_path, reader, data):
    blob = data.draw(mutated(SEEDS[reader]))
    out = tmp_path / "out.csv"
    out.unlink(missing_ok=True)
    suffix = {"csv": "csv", "yaml": "yaml", "json": "json", "urdf": "urdf", "limits": "yaml", "drives": "yaml"}
    path = tmp_path / f"input.{suffix[reader]}"
    path.write_bytes(blob)
    if reader in ("csv", "yaml", "json"):
        result = run("torques", PLANAR, path, "-o", out, "-q", "--dt", "0.01") if b"time" not in blob else \
            run("torques", PLANAR, path, "-o", out, "-q")
    elif reader == "urdf":
        result = run("torques", path, PLANAR_CSV, "-o", out, "-q")
    elif reader == "limits":
        result = run("check", PLANAR, PLANAR_CSV, "--limits", path, "--format", "json")
        if result.exit_code in (0, 1):
            json.loads(result.stdout)
    else:
        result = run("torques", PLANAR, PLANAR_CSV, "--actuators", path, "-o", out, "-q")
    assert_promise(result, out)
    assert not np.any([p.name.startswith(".out.csv") for p in tmp_path.iterdir()])
