"""Source: controller logs by column templates and presets (UR RTDE, Franka), and times kept on a
clock (epoch seconds or nanoseconds, milliseconds)."""

import pathlib

import numpy as np
import polars as pl
import pytest

from conftest import ROBOTS, columns as read_csv, run, torques
from rnea_cli import load_urdf


ARM = ROBOTS / "arm7.urdf"
ARM_CSV = ROBOTS / "arm7_traj.csv"
MODEL = load_urdf(ARM)
JOINTS = MODEL.joint_names


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
    with pytest.raises(RneaError, match="time_unit 'h': expected one of s, ms, us, ns$"):
        torques_frame(MODEL, pa.table({"time": k, **columns}), time_unit="h")


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
