"""Real data in: Parquet and Arrow IPC, controller logs by column templates and presets, xacro
robots, and noisy measured positions (local cubic fits). Each source's torques equal those of the
same data as our CSV."""

import os

import numpy as np
import polars as pl
import pytest

from conftest import ROBOTS, columns as read_csv, run
from rnea_cli import load_urdf

ARM = ROBOTS / "arm7.urdf"
ARM_CSV = ROBOTS / "arm7_traj.csv"
MODEL = load_urdf(ARM)
JOINTS = MODEL.joint_names


def torques(*args):
    result = run("torques", *args, "-q")
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_parquet_and_arrow_in_and_out_give_the_csv_numbers(tmp_path):
    frame = pl.read_csv(ARM_CSV)
    frame.write_parquet(tmp_path / "t.parquet", row_group_size=37)
    frame.write_ipc(tmp_path / "t.arrow")
    frame.write_ipc_stream(tmp_path / "t.ipc")
    expected = torques(ARM, ARM_CSV)
    for name in ("t.parquet", "t.arrow", "t.ipc"):
        assert torques(ARM, tmp_path / name) == expected, name
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.feather as feather

    table = frame.to_arrow()
    encoded = pa.table({name: pc.dictionary_encode(table[name]) if name.startswith("q_") else table[name]
                        for name in table.column_names})  # dictionary-encoded doubles, as an Arrow file may hold
    feather.write_feather(encoded, tmp_path / "d.arrow", compression="uncompressed")
    assert pa.types.is_dictionary(pa.ipc.open_file(tmp_path / "d.arrow").schema.field("q_arm7_joint1").type)
    assert torques(ARM, tmp_path / "d.arrow") == expected
    for out in ("tau.parquet", "tau.arrow"):
        torques(ARM, ARM_CSV, "-o", tmp_path / out)
        back = pl.read_parquet(tmp_path / out) if out.endswith("parquet") else pl.read_ipc(tmp_path / out)
        assert back.equals(pl.read_csv(expected.encode())), out


@pytest.mark.parametrize("change, message", [
    (lambda f: f.with_columns(pl.col("q_arm7_joint1").cast(pl.Utf8)), "column 'q_arm7_joint1': holds large_string"),
    (lambda f: f.drop("q_arm7_joint3"), "missing q for joint arm7_joint3"),
    (lambda f: f.with_columns(pl.when(pl.col("time") > 1).then(None).otherwise(pl.col("qd_arm7_joint2"))
                              .alias("qd_arm7_joint2")), "row 101, column 'qd_arm7_joint2': missing (null)"),
    (lambda f: f.with_columns(pl.lit(float("nan")).alias("qdd_arm7_joint7")), "row 0, column 'qdd_arm7_joint7': "
                                                                             "not finite: nan"),
])
def test_bad_parquet_is_one_line_and_no_output(tmp_path, change, message):
    change(pl.read_csv(ARM_CSV)).write_parquet(tmp_path / "bad.parquet")
    result = run("torques", ARM, tmp_path / "bad.parquet", "-o", tmp_path / "out.parquet")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert message in result.stderr
    assert not (tmp_path / "out.parquet").exists()


def test_truncated_or_foreign_parquet(tmp_path):
    pl.read_csv(ARM_CSV).write_parquet(tmp_path / "t.parquet")
    data = (tmp_path / "t.parquet").read_bytes()
    (tmp_path / "cut.parquet").write_bytes(data[: len(data) // 2])
    (tmp_path / "text.parquet").write_text("time,q\n0,1\n")
    for name in ("cut.parquet", "text.parquet"):
        result = run("torques", ARM, tmp_path / name)
        assert result.exit_code == 2 and f"{name}: not a readable Parquet file" in result.stderr, result.stderr


def rtde_log(path, frame, qdd_from="target"):
    """frame's motion as UR RTDE record.py writes a log: space-separated, timestamp, actual_q_i,
    actual_qd_i, target_qdd_i, actual_current_i."""
    cols = {"timestamp": frame["time"]}
    for prefix, role in (("actual_q", "q"), ("actual_qd", "qd"), ("target_qdd", "qdd"), ("actual_current", "qd")):
        for i, j in enumerate(JOINTS):
            cols[f"{prefix}_{i}"] = frame[f"{role}_{j}"] * (0.5 if prefix == "actual_current" else 1.0)
    lines = [" ".join(cols)] + [" ".join(repr(float(cols[c][k])) for c in cols) for k in range(len(frame))]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_ur_rtde_log_by_preset_and_by_template(tmp_path):
    """Measured q and qd (actual_*), qdd derived from qd: the torques of the same columns as our CSV."""
    frame = pl.read_csv(ARM_CSV)
    log = rtde_log(tmp_path / "robot_data.txt", frame)
    ours = frame.select(["time"] + [f"{p}_{j}" for p in ("q", "qd") for j in JOINTS])
    ours.write_csv(tmp_path / "same.csv")
    expected = torques(ARM, tmp_path / "same.csv")
    assert torques(ARM, log, "--input-format", "csv", "--preset", "ur-rtde") == expected
    assert torques(ARM, log, "--input-format", "csv", "--columns",
                   "time=timestamp,q=actual_q_{i},qd=actual_qd_{i}") == expected
    with_qdd = torques(ARM, log, "--input-format", "csv", "--columns",
                       "time=timestamp,q=actual_q_{i},qd=actual_qd_{i},qdd=target_qdd_{i}")
    assert with_qdd == torques(ARM, ARM_CSV)
    result = run("torques", ARM, log, "--input-format", "csv", "--columns", "time=timestamp,q=joint_pos_{i}")
    assert result.exit_code == 2 and "--columns: q='joint_pos_{i}' matches no column; the file has timestamp, " \
                                      "actual_q_0" in result.stderr
    result = run("torques", ARM, log)
    assert result.exit_code == 2 and "unknown trajectory format" in result.stderr
    result = run("torques", ARM, log, "--input-format", "csv", "--columns", "time=timestamp,q=actual_q_{i},qd=actual_q_{i}")
    assert result.exit_code == 2 and "q and qd have the same template 'actual_q_{i}'" in result.stderr


def test_franka_log_time_in_milliseconds_and_measured_torque(tmp_path):
    frame = pl.read_csv(ARM_CSV)
    cols = {"time": frame["time"] * 1000.0}
    for i, j in enumerate(JOINTS):
        cols[f"state.q[{i}]"] = frame[f"q_{j}"]
        cols[f"state.dq[{i}]"] = frame[f"qd_{j}"]
        cols[f"state.tau_J[{i}]"] = frame[f"qdd_{j}"]
    pl.DataFrame(cols).write_csv(tmp_path / "franka.csv")
    same = frame.select(["time"] + [f"{p}_{j}" for p in ("q", "qd") for j in JOINTS])
    same.write_csv(tmp_path / "same.csv")
    ours = read_csv(torques(ARM, tmp_path / "franka.csv", "--preset", "franka"))
    theirs = read_csv(torques(ARM, tmp_path / "same.csv"))
    np.testing.assert_allclose(ours["time"], theirs["time"], rtol=1e-15)
    for j in JOINTS:  # time scaled by 1e-3 first: finite differences agree to round-off
        np.testing.assert_allclose(ours[f"tau_{j}"], theirs[f"tau_{j}"], rtol=1e-9, atol=1e-9)


def write_xacro_package(root):
    """A ROS package with a xacro robot that includes a macro file through $(find) and takes args."""
    pkg = root / "src" / "arm_description"
    (pkg / "urdf").mkdir(parents=True)
    (pkg / "package.xml").write_text("<package format='2'><name>arm_description</name></package>")
    (pkg / "urdf" / "link.xacro").write_text("""<robot xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:macro name="segment" params="name parent mass">
    <link name="${name}_link"><inertial><origin xyz="0.1 0 0"/><mass value="${mass}"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
    <joint name="${name}" type="revolute"><parent link="${parent}"/><child link="${name}_link"/>
      <origin xyz="0.2 0 0"/><axis xyz="0 0 1"/><limit effort="50" velocity="2" lower="-3" upper="3"/></joint>
  </xacro:macro>
</robot>""")
    (pkg / "urdf" / "arm.urdf.xacro").write_text("""<?xml version="1.0"?>
<robot name="xarm" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:arg name="payload" default="1.5"/>
  <xacro:include filename="$(find arm_description)/urdf/link.xacro"/>
  <link name="base"/>
  <xacro:segment name="shoulder" parent="base" mass="${2 * 1.5}"/>
  <xacro:segment name="elbow" parent="shoulder_link" mass="$(arg payload)"/>
</robot>""")
    return pkg / "urdf" / "arm.urdf.xacro"


def test_xacro_robots_expand_with_packages_and_args(tmp_path, monkeypatch):
    robot = write_xacro_package(tmp_path)
    expanded = tmp_path / "arm.urdf"
    expanded.write_text(robot.read_text().replace("$(arg payload)", "2.5"))
    traj = tmp_path / "t.csv"
    traj.write_text("time,q_shoulder,q_elbow\n" + "".join(f"{k * 0.01!r},{0.1 * k!r},{-0.05 * k!r}\n"
                                                           for k in range(20)))
    with_xacro = torques(robot, traj, "--package-path", tmp_path, "--xacro-arg", "payload:=2.5")
    plain = write_plain(tmp_path, robot)
    assert with_xacro == torques(plain, traj)
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path))
    info = run("info", robot, "--format", "json")
    assert info.exit_code == 0 and [j["name"] for j in __import__("json").loads(info.stdout)["joints"]] == \
        ["shoulder", "elbow"]


def write_plain(tmp_path, robot):
    """The same robot written out by hand (the macro expanded, payload 2.5)."""
    seg = """<link name="{n}_link"><inertial><origin xyz="0.1 0 0"/><mass value="{m}"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
    <joint name="{n}" type="revolute"><parent link="{p}"/><child link="{n}_link"/>
      <origin xyz="0.2 0 0"/><axis xyz="0 0 1"/><limit effort="50" velocity="2" lower="-3" upper="3"/></joint>"""
    path = tmp_path / "plain.urdf"
    path.write_text('<robot name="xarm"><link name="base"/>' + seg.format(n="shoulder", m=3.0, p="base")
                    + seg.format(n="elbow", m=2.5, p="shoulder_link") + "</robot>")
    return path


@pytest.mark.parametrize("body, message", [
    ('<link name="a"/><joint name="j" type="fixed"><parent link="a"/>', r"arm\.xacro:\d+: malformed XML"),
    ('<link name="${undefined_thing}"/>', r"arm\.xacro:2: xacro: undefined name undefined_thing"),
    ('<xacro:include filename="$(find nowhere_pkg)/x.xacro"/>', r"arm\.xacro:2: xacro: package nowhere_pkg not found"),
    ('<xacro:macro name="m"><xacro:m/></xacro:macro><xacro:m/>', r"arm\.xacro:\d+: macros nested too deep"),
    ('<link name="${1/0}"/>', r"arm\.xacro:2: xacro: ZeroDivisionError: division by zero"),
    ('<xacro:include filename="arm.xacro"/>', r"arm\.xacro:2: an include loop: arm\.xacro -> arm\.xacro$"),
    ('<xacro:include filename="b.xacro"/>', r"arm\.xacro:2: an include loop: arm\.xacro -> b\.xacro -> arm\.xacro$"),
    ('<xacro:include filename="../sub/arm.xacro"/>', r"\w/sub/arm\.xacro:2: an include loop: arm\.xacro -> arm\.xacro$"),
])
def test_xacro_errors_are_one_line_with_file_and_line(tmp_path, body, message):
    (tmp_path / "sub").mkdir()
    robot = tmp_path / "sub" / "arm.xacro"  # a relative include loop (sub/../sub/arm.xacro) is one too
    robot.write_text(f'<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">\n{body}\n</robot>\n')
    (tmp_path / "sub" / "b.xacro").write_text('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro"><link name="b"/>'
                                      '<xacro:include filename="arm.xacro"/></robot>')
    result = run("info", os.path.relpath(robot))
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert __import__("re").search(message, result.stderr.rstrip("\n")), result.stderr


def test_a_runaway_xacro_is_stopped(tmp_path, monkeypatch):
    """A macro that calls itself twice, 30 levels deep, would run for hours: it is stopped at the
    time limit (made short here), with one line."""
    from rnea_cli.model import xacro_child

    monkeypatch.setattr(xacro_child, "TIMEOUT", 2.0)
    levels = "".join(f'<xacro:macro name="m{k}"><xacro:m{k + 1}/><xacro:m{k + 1}/></xacro:macro>' for k in range(30))
    robot = tmp_path / "tree.urdf.xacro"
    robot.write_text(f'<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">{levels}'
                     '<xacro:macro name="m30"><link name="l"/></xacro:macro><xacro:m0/></robot>')
    result = run("info", robot)
    # stopped by its CPU limit, or on a busy machine by the wall-time limit a second later: either way
    assert result.exit_code == 2 and ("xacro took more than 2 s of CPU" in result.stderr
                                      or "xacro took longer than 3 s" in result.stderr), result.stderr


def noisy_motion(rate=500.0, duration=4.0, jitter=0.1, noise=1e-4, seed=0):
    """arm7's smooth example motion sampled at `rate` with stamp jitter and noise on q:
    (t, q measured, q, qd, qdd true)."""
    rng = np.random.default_rng(seed)
    n = int(duration * rate)
    t = np.arange(n) / rate + rng.uniform(-jitter, jitter, n) / rate
    a = np.array([0.7, 0.5, 0.5, 0.5, 0.6, 0.6, 0.5])
    w = np.pi * np.array([0.4, 0.5, 0.6, 0.5, 0.75, 0.75, 0.8])
    phase, offset = np.array([0, 0.5 * np.pi, 0.3, -0.5, 0, 1, 0]), np.array([0, 0.4, 0, -1.2, 0, 0.5, 0])
    arg = np.outer(t, w) + phase
    q, qd, qdd = a * np.sin(arg) + offset, a * w * np.cos(arg), -a * w ** 2 * np.sin(arg)
    return t, q + rng.normal(0, noise, q.shape), q, qd, qdd


def write_q(path, t, q):
    cols = {"time": t, **{f"q_{j}": q[:, i] for i, j in enumerate(JOINTS)}}
    pl.DataFrame(cols).write_csv(path)
    return path


def test_smoothing_recovers_the_torques_of_a_noisy_measurement(tmp_path):
    """The README's numbers: 500 Hz, ±10 % stamp jitter, 1e-4 rad of noise on q. Plain
    differences are off by more than 100 % RMS; --smooth 0.05 is within 3 %."""
    from rnea_cli import rnea

    t, measured, q, qd, qdd = noisy_motion()
    true = rnea(MODEL, q, qd, qdd)
    path = write_q(tmp_path / "noisy.csv", t, measured)

    def error(*options):
        out = read_csv(torques(ARM, path, *options))
        tau = np.column_stack([out[f"tau_{j}"] for j in JOINTS])
        return np.sqrt(np.mean((tau - true) ** 2)) / np.sqrt(np.mean(true ** 2))

    assert error() > 1.0
    assert error("--smooth", "0.05") < 0.03


@pytest.mark.parametrize("block_bytes", [None, 700])
def test_resampling_interpolates_every_column_linearly(tmp_path, monkeypatch, block_bytes):
    """On jittered stamps, --resample 150 gives Pinocchio's torques of numpy's np.interp of the
    given q, qd, qdd on t0 + k/150, in one block or many."""
    from oracle import pin_model, pin_rnea

    reader = __import__("importlib").import_module("rnea_cli.trajectory.sources.csvfile")
    rng = np.random.default_rng(5)
    t = np.arange(120) / 100 + rng.uniform(-0.003, 0.003, 120)
    q, qd, qdd = (rng.uniform(-1, 1, (120, MODEL.n)) for _ in range(3))
    cols = {"time": t, **{f"{p}_{j}": x[:, i] for p, x in (("q", q), ("qd", qd), ("qdd", qdd))
                          for i, j in enumerate(JOINTS)}}
    path = tmp_path / "jittered.csv"
    pl.DataFrame(cols).write_csv(path)
    if block_bytes:
        monkeypatch.setattr(reader, "BLOCK_BYTES", block_bytes)
    out = read_csv(torques(ARM, path, "--resample", "150"))
    grid = t[0] + np.arange(int(np.floor((t[-1] - t[0]) * 150 + 1e-9)) + 1) / 150
    np.testing.assert_allclose(out["time"], grid, rtol=1e-15, atol=0)
    expected = {p: np.column_stack([np.interp(grid, t, x[:, i]) for i in range(MODEL.n)])
                for p, x in (("q", q), ("qd", qd), ("qdd", qdd))}
    tau = np.column_stack([out[f"tau_{j}"] for j in JOINTS])
    reference = pin_rnea(pin_model(ARM), JOINTS, expected["q"], expected["qd"], expected["qdd"])
    np.testing.assert_allclose(tau, reference, rtol=0, atol=1e-9 * np.abs(reference).max())


def test_smoothing_streams_exactly_and_fits_cubics_exactly(tmp_path, monkeypatch):
    """Blocks of a few hundred bytes give the bits one block gives; a cubic motion on jittered
    stamps gives its own q, qd, qdd (the fit's polynomial is the motion's)."""
    reader = __import__("importlib").import_module("rnea_cli.trajectory.sources.csvfile")
    from rnea_cli.trajectory.open import open_trajectory

    rng = np.random.default_rng(3)
    t = np.arange(400) / 100 + rng.uniform(-0.002, 0.002, 400)
    coeff = rng.normal(size=(4, MODEL.n))
    q = coeff[0] + coeff[1] * t[:, None] + coeff[2] * t[:, None] ** 2 + coeff[3] * t[:, None] ** 3
    qd = coeff[1] + 2 * coeff[2] * t[:, None] + 3 * coeff[3] * t[:, None] ** 2
    qdd = 2 * coeff[2] + 6 * coeff[3] * t[:, None]
    path = write_q(tmp_path / "cubic.csv", t, q)

    def read(**options):
        traj = open_trajectory(path, MODEL, smooth=0.1, **options)
        chunks = list(traj.chunks)
        return chunks, {x: np.concatenate([getattr(c, x) for c in chunks]) for x in ("time", "q", "qd", "qdd")}

    whole_chunks, whole = read()
    monkeypatch.setattr(reader, "BLOCK_BYTES", 300)
    chunks, streamed = read()
    assert len(chunks) > 20 and [c.start for c in chunks] == list(np.cumsum([0] + [len(c) for c in chunks[:-1]]))
    for x in ("time", "q", "qd", "qdd"):
        assert streamed[x].tobytes() == whole[x].tobytes(), x
    np.testing.assert_allclose(whole["q"], q, atol=1e-9 * np.abs(q).max())
    np.testing.assert_allclose(whole["qd"], qd, atol=1e-8 * np.abs(qd).max())
    np.testing.assert_allclose(whole["qdd"], qdd, atol=1e-7 * np.abs(qdd).max())


def test_resampling_and_smoothing_options(tmp_path):
    t, measured, *_ = noisy_motion(duration=1.0)
    path = write_q(tmp_path / "noisy.csv", t, measured)
    out = read_csv(torques(ARM, path, "--resample", "200", "--smooth", "0.05"))
    np.testing.assert_allclose(np.diff(out["time"]), 0.005, rtol=1e-9)
    assert out["time"][0] == t[0] and out["time"][-1] <= t[-1]
    result = run("torques", ARM, path, "--smooth", "0.001")
    assert result.exit_code == 2 and "fewer than 4 samples within --smooth 0.001 s" in result.stderr
    long = run("torques", ARM, path, "--smooth", "2", "-o", tmp_path / "long.csv")
    assert long.exit_code == 0 and f"warning: --smooth 2 s is longer than the run ({t[-1] - t[0]:.6g} s): one cubic " \
        "is fitted to all of it" in long.stderr
    assert "longer than the run" not in run("torques", ARM, path, "--smooth", "0.05", "-o", tmp_path / "long.csv").stderr
    os.remove(tmp_path / "long.csv")
    no_time = tmp_path / "nt.csv"
    no_time.write_text(",".join(f"q_{j}" for j in JOINTS) + "\n" + ",".join(["0"] * len(JOINTS)) + "\n")
    result = run("torques", ARM, no_time, "--smooth", "0.05")
    assert result.exit_code == 2 and "--smooth and --resample need a time column" in result.stderr
    assert os.listdir(tmp_path) == ["noisy.csv", "nt.csv"]


# Time: a clock time (epoch seconds or nanoseconds) counted from its first value, exactly (clock.py)

EPOCH_NS = 1_700_000_000_123_456_789  # not a round second: every digit counts


def kilohertz_positions(n=600):
    """(sample times k ms, (n, 7) positions) of a 1 kHz log of positions only."""
    k = np.arange(n)
    return [int(x) for x in k], np.column_stack([0.3 * np.sin((i + 1) * 2.0 * k / 1000.0 + i) for i in range(len(JOINTS))])


def positions_csv(path, time_cells, q, time_name="time"):
    lines = [",".join([time_name] + [f"q_{j}" for j in JOINTS])]
    lines += [",".join([cell] + [repr(float(x)) for x in row]) for cell, row in zip(time_cells, q)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_epoch_nanosecond_time_gives_the_torques_of_seconds_from_zero(tmp_path, monkeypatch):
    """int64 ns near 1.7e18 (a double of its seconds is 238 ns coarse: the derived qdd of a 1 kHz
    log would be noise): counted from the first exactly, in CSV, Parquet, Arrow (int64 and
    timestamp[ns]) and YAML, in ns, us or ms, and as decimal seconds in CSV text; the same bytes
    as the log's seconds from 0, whatever the blocks."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import yaml

    from rnea_cli.trajectory.sources import csvfile, tables

    k, q = kilohertz_positions()
    expected = torques(ARM, positions_csv(tmp_path / "zero.csv", [repr(t / 1000) for t in k], q))
    peak = np.abs(np.array([[float(x) for x in line.split(",")[1:]] for line in expected.splitlines()[1:]])).max()
    ns = [EPOCH_NS + t * 10**6 for t in k]
    cases = {"ns.csv": ("ns", positions_csv(tmp_path / "ns.csv", [str(t) for t in ns], q)),
             "s.csv": (None, positions_csv(tmp_path / "s.csv", [f"{t // 10**9}.{t % 10**9:09d}" for t in ns], q)),
             "us.csv": ("us", positions_csv(tmp_path / "us.csv", [str((t - 789) // 1000) for t in ns], q)),
             "ms.csv": ("ms", positions_csv(tmp_path / "ms.csv", [str((t - 456_789) // 10**6) for t in ns], q))}
    columns = {f"q_{j}": q[:, i] for i, j in enumerate(JOINTS)}
    pq.write_table(pa.table({"time": pa.array(ns, pa.int64()), **columns}), tmp_path / "ns.parquet",
                   row_group_size=100)
    cases["ns.parquet"] = ("ns", tmp_path / "ns.parquet")
    with pa.OSFile(str(tmp_path / "ts.arrow"), "wb") as sink:
        table = pa.table({"time": pa.array(ns, pa.timestamp("ns", tz="UTC")), **columns})
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=100)
    cases["ts.arrow"] = (None, tmp_path / "ts.arrow")
    (tmp_path / "ns.yaml").write_text(yaml.safe_dump({"time": [int(t) for t in ns], "q": {
        j: [float(x) for x in q[:, i]] for i, j in enumerate(JOINTS)}}))
    cases["ns.yaml"] = ("ns", tmp_path / "ns.yaml")
    for name, (unit, path) in cases.items():
        for small in (False, True):  # in one block, and in blocks of a few rows each
            monkeypatch.setattr(csvfile, "BLOCK_BYTES", 3000 if small else 1 << 23)
            monkeypatch.setattr(tables, "BATCH_ROWS", 70 if small else 1 << 16)
            result = run("torques", ARM, path, *(("--time-unit", unit) if unit else ()))
            assert result.exit_code == 0, (name, result.stderr)
            assert result.stdout == expected, name
            origin = {"ns": "1700000000123456789 ns", "us": "1700000000123456 us", "ms": "1700000000123 ms"}.get(
                unit, "1700000000.123456789 s" if name == "s.csv" else "1700000000123456789 ns")
            assert f"note: time 0 at {origin}, the first time" in result.stderr, (name, result.stderr)
    assert peak > 1  # (torques to tell apart: a 20 % error would show)


def test_a_time_kept_as_written_and_a_unit_that_no_time_uses(tmp_path):
    """Time below 2^20 s is kept as written (no note); ms become seconds in one rounding, so 1500 ms
    and 1.5 s are one double; doubles of epoch seconds are counted from the first (exactly: the
    differences of the doubles). --time-unit for a file without a time column is refused in one
    line, and applies to YAML."""
    k, q = kilohertz_positions(50)
    seconds = torques(ARM, positions_csv(tmp_path / "s.csv", [repr(5 + t / 1000) for t in k], q))
    result = run("torques", ARM, positions_csv(tmp_path / "ms.csv", [str(5000 + t) for t in k], q), "--time-unit", "ms")
    assert result.exit_code == 0 and result.stdout == seconds and "time 0" not in result.stderr, result.stderr
    assert read_csv(seconds)["time"][0] == 5.0
    frame = pl.read_csv(ARM_CSV).drop("time")
    frame.write_csv(tmp_path / "untimed.csv")
    frame.write_parquet(tmp_path / "untimed.parquet")
    for path in (tmp_path / "untimed.csv", tmp_path / "untimed.parquet"):
        result = run("torques", ARM, path, "--time-unit", "ms", "--dt", "0.01")
        assert result.exit_code == 2 and result.stderr == (
            f"rnea: error: {path}: --time-unit ms: the file has no time column (time)\n"), result.stderr
    doubles = 1.7e9 + np.array(k) / 1000  # epoch seconds as doubles (238 ns coarse already): counted from the first
    pl.DataFrame({"time": doubles, **{f"q_{j}": q[:, i] for i, j in enumerate(JOINTS)}}).write_parquet(
        tmp_path / "epoch.parquet")
    result = run("torques", ARM, tmp_path / "epoch.parquet")
    assert result.exit_code == 0 and "note: time 0 at 1700000000.0 s, the first time" in result.stderr
    assert read_csv(result.stdout)["time"].tobytes() == (doubles - doubles[0]).tobytes()
    result = run("torques", ARM, ROBOTS / "arm7_traj.yaml", "--time-unit", "ms")
    assert result.exit_code == 0
    assert read_csv(result.stdout)["time"][-1] == read_csv(torques(ARM, ROBOTS / "arm7_traj.yaml"))["time"][-1] / 1000


def test_a_frame_counted_from_its_clock_time_gives_its_own_time_back():
    """The DataFrame API: a timestamp[ns] column of 1.7e18 ns (or int64 with time_unit='ns') is
    differentiated from 0, exactly, and the frame's time (and a check's times) are the frame's own again."""
    import pyarrow as pa

    from rnea_cli.errors import RneaError
    from rnea_cli.run.dataframes import check_frame, torques_frame

    k, q = kilohertz_positions()
    k = np.array(k)
    columns = {f"q_{j}": q[:, i] for i, j in enumerate(JOINTS)}
    zero = torques_frame(MODEL, pa.table({"time": k / 1000, **columns}))
    epoch = torques_frame(MODEL, pa.table({"time": pa.array(EPOCH_NS + k * 10**6, pa.timestamp("ns")), **columns}))
    for name in zero.column_names[1:]:
        assert epoch[name].to_numpy().tobytes() == zero[name].to_numpy().tobytes(), name
    np.testing.assert_array_equal(epoch["time"].to_numpy(), EPOCH_NS / 1e9 + k / 1000)
    summary = check_frame(MODEL, pa.table({"time": pa.array(EPOCH_NS + k * 10**6, pa.timestamp("ns")), **columns}))
    assert all(c.worst_time is None or c.worst_time > 1.7e9 for c in summary.limits)
    integers = torques_frame(MODEL, pa.table({"time": EPOCH_NS + k * 10**6, **columns}), time_unit="ns")
    assert integers.equals(epoch)
    with pytest.raises(RneaError, match="time_unit 'h': expected one of s, ms, us, ns"):
        torques_frame(MODEL, pa.table({"time": k, **columns}), time_unit="h")


def arrow_file(path, table, max_chunksize=None):
    import pyarrow as pa

    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=max_chunksize)
    return path


def test_columns_of_other_arrow_types_are_read_or_refused_in_one_line(tmp_path):
    """Checked once converted: a null among a dictionary's values (its indices all valid) is a
    missing value, not NaN torques. float16 and decimals are numbers; lists, booleans, text and a
    timestamp where a position belongs are refused, naming the column."""
    import decimal

    import pyarrow as pa

    frame = pl.read_csv(ARM_CSV)
    table = frame.to_arrow()
    name = "q_arm7_joint3"
    values = table[name].to_numpy()
    indices = pa.array(np.arange(len(values)) % 3, pa.int32())  # valid indices; the dictionary's second is null
    nulls = table.set_column(table.schema.get_field_index(name), name, pa.DictionaryArray.from_arrays(
        indices, pa.array([values[0], None, values[2]])))
    assert nulls[name].null_count == 0
    result = run("torques", ARM, arrow_file(tmp_path / "nulls.arrow", nulls))
    assert result.exit_code == 2 and result.stderr == (
        f"rnea: error: {tmp_path / 'nulls.arrow'}: row 1, column '{name}': missing (null)\n"), result.stderr
    half = values.astype(np.float16)
    plain = frame.with_columns(pl.Series(name, half.astype(np.float64)))
    plain.write_csv(tmp_path / "half.csv")
    expected = torques(ARM, tmp_path / "half.csv")
    for kind, column in (("float16", pa.array(half)),
                         ("decimal", pa.array([decimal.Decimal(float(x)) for x in half], pa.decimal128(38, 30)))):
        path = arrow_file(tmp_path / f"{kind}.arrow", table.set_column(table.schema.get_field_index(name), name, column))
        assert torques(ARM, path) == expected, kind
    n = len(values)
    for column, shown in ((pa.array([[x] for x in values], pa.large_list(pa.float64())), "large_list<item: double>"),
                          (pa.array(values > 0), "bool"),
                          (pa.array(np.arange(n), pa.timestamp("ns")), "timestamp[ns]"),
                          (pa.array(["1.0"] * n).dictionary_encode(), "dictionary<values=string, indices=int32, "
                                                                       "ordered=0>")):
        path = arrow_file(tmp_path / "other.arrow", table.set_column(table.schema.get_field_index(name), name, column))
        result = run("torques", ARM, path)
        assert result.exit_code == 2 and result.stderr == (
            f"rnea: error: {path}: column '{name}': holds {shown}, not numbers\n"), result.stderr
    path = arrow_file(tmp_path / "t.arrow", table.set_column(0, "time", pa.array(["0"] * n)))
    result = run("torques", ARM, path)
    assert result.exit_code == 2 and "column 'time': holds string, not numbers (nor a timestamp or duration)" in \
        result.stderr


def test_tiny_record_batches_are_read_in_blocks_of_the_usual_size(tmp_path, monkeypatch):
    """An Arrow IPC file (and a stream, and a frame) of one-row record batches: delivered in blocks
    of BATCH_ROWS rows, so the time taken goes by rows, not batches; the torques those of the CSV."""
    import pyarrow as pa

    from rnea_cli.trajectory.sources import tables

    monkeypatch.setattr(tables, "BATCH_ROWS", 150)
    table = pl.read_csv(ARM_CSV).to_arrow()
    path = arrow_file(tmp_path / "tiny.arrow", table, max_chunksize=1)
    assert pa.ipc.open_file(path).num_record_batches == 401
    with pa.OSFile(str(tmp_path / "tiny.ipc"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=1)
    for source in (path, tmp_path / "tiny.ipc"):
        sizes = [len(c) for c in open_source_chunks(source)]
        assert sizes == [150, 150, 101], sizes
        assert torques(ARM, source) == torques(ARM, ARM_CSV)
    from rnea_cli.model.tree import Coordinates
    from rnea_cli.trajectory.sources.layout import ColumnNames, Layout

    coords = Coordinates(MODEL)
    layout = Layout(coords)
    frame = pa.Table.from_batches(table.to_batches(max_chunksize=1))
    assert [len(c) for c in tables.open_table(frame, "<frame>", "table", layout, ColumnNames(coords, layout)).chunks] \
        == [150, 150, 101]


def open_source_chunks(path):
    from rnea_cli.trajectory.sources import open_source

    return open_source(path, MODEL).chunks


def test_an_empty_column_template_is_refused_not_ignored(tmp_path):
    for args in (("--columns", ""), ("--columns", " , ")):
        result = run("torques", ARM, ARM_CSV, *args)
        assert result.exit_code == 2 and result.stderr == "rnea: error: --columns: no ROLE=TEMPLATE given\n", \
            result.stderr
    result = run("torques", ARM, ROBOTS / "arm7_traj.yaml", "--columns", "")
    assert result.exit_code == 2 and "--columns and --preset are for CSV, Parquet and Arrow tables" in result.stderr
    result = run("torques", ARM, ARM_CSV, "--publisher", "/arm")
    assert result.exit_code == 2 and result.stderr == (
        f"rnea: error: {ARM_CSV}: --topic, --message and --publisher are for ROS bags\n"), result.stderr
