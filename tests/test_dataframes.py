"""The DataFrame API (torques_frame, summaries that merge) and a real Dask cluster."""

import json
import re

import numpy as np
import polars as pl
import pytest

from conftest import ROBOTS, run
from rnea_cli import check_frame, load_urdf, torques_frame
from rnea_cli.run.actuators import Drive


ARM = ROBOTS / "arm7.urdf"
ARM_CSV = ROBOTS / "arm7_traj.csv"
DRIVES = ROBOTS / "arm7_drives.yaml"
MODEL = load_urdf(ARM)


@pytest.mark.parametrize("kind", ["pandas", "polars", "table", "batch"])
def test_torques_frame_gives_the_cli_columns_in_the_same_kind(kind):
    import pyarrow as pa

    frame = pl.read_csv(ARM_CSV)
    given = {"pandas": frame.to_pandas(), "polars": frame, "table": frame.to_arrow(),
             "batch": frame.to_arrow().to_batches()[0]}[kind]
    out = torques_frame(MODEL, given, split=True, actuators=str(DRIVES), friction=True)
    expected = pl.read_csv(run("torques", ARM, ARM_CSV, "--split", "--actuators", DRIVES, "--friction",
                               "-q").stdout.encode())
    back = {"pandas": lambda o: pl.from_pandas(o), "polars": lambda o: o, "table": pl.from_arrow,
            "batch": lambda o: pl.from_arrow(pa.Table.from_batches([o]))}[kind](out)
    assert type(out).__module__.split(".")[0] == {"pandas": "pandas", "polars": "polars", "table": "pyarrow",
                                                  "batch": "pyarrow"}[kind]
    assert back.columns == expected.columns and back.equals(expected)


def test_torques_frame_floating_base_and_wrenches(tmp_path):
    """A DataFrame with a floating base and a wrench: Pinocchio's torques, and the CLI's table."""
    from oracle import assert_matches, pin_full, pin_link_wrenches, pin_model, random_base, random_motion

    model = load_urdf(ROBOTS / "arm7.urdf")
    rng = np.random.default_rng(5)
    q, qd, qdd = random_motion(rng, 20, model.n)
    pose, twist, dtwist = random_base(rng, 20)
    cols = {"time": np.arange(20) * 0.01}
    cols |= {f"q_base_{c}": pose[:, k] for k, c in enumerate(("x", "y", "z", "qx", "qy", "qz", "qw"))}
    for prefix, x in (("qd", twist), ("qdd", dtwist)):
        cols |= {f"{prefix}_base_{c}": x[:, k] for k, c in enumerate(("wx", "wy", "wz", "vx", "vy", "vz"))}
    for prefix, x in (("q", q), ("qd", qd), ("qdd", qdd)):
        cols |= {f"{prefix}_{j}": x[:, i] for i, j in enumerate(model.joint_names)}
    cols |= {f"fext_arm7_tool_{c}": rng.normal(size=20) for c in ("fx", "fy", "fz", "tx", "ty", "tz")}
    frame = pl.DataFrame(cols)
    out = torques_frame(model, frame, floating=True)
    path = tmp_path / "frame.csv"
    frame.write_csv(path)
    expected = pl.read_csv(run("torques", ARM, path, "--floating-base", "-q").stdout.encode())
    assert out.equals(expected)
    pm = pin_model(ROBOTS / "arm7.urdf", free=True)
    wrench = np.column_stack([frame[f"fext_arm7_tool_{c}"] for c in ("tx", "ty", "tz", "fx", "fy", "fz")])
    f_ext = pin_link_wrenches(pm, model.joint_names, q, {"arm7_tool": (wrench, None)}, "world", base_pose=pose)
    tau = pin_full(pm, model.joint_names, q, qd, qdd, base=(pose, twist, dtwist), f_ext=f_ext)[0]
    assert_matches(np.column_stack([out[f"tau_{j}"] for j in model.joint_names]), tau)


def test_a_partition_too_short_to_differentiate_is_refused():
    from rnea_cli import TrajectoryError

    frame = pl.read_csv(ARM_CSV).select(["time"] + [f"q_{j}" for j in MODEL.joint_names]).head(2)
    with pytest.raises(TrajectoryError, match="2 samples: at least 3 are needed to derive qd and qdd"):
        torques_frame(MODEL, frame)


@pytest.mark.parametrize("size", [50, 7, 173])
def test_check_summaries_merge_into_the_whole_runs_verdict(tmp_path, size):
    """Partitions checked apart and merged (in any grouping) give the whole run's checks, to the
    bit: the RMS over the run too (an exact sum of squares; it was rebuilt from each partition's
    rounded RMS)."""
    import yaml

    limits = tmp_path / "limits.yaml"
    limits.write_text("arm7_joint2: {effort: 45, rms_effort: 30}\narm7_joint3: {rms_effort: 3}\n")
    drives = yaml.safe_load(DRIVES.read_text())
    for entry in drives.values():
        entry.pop("thermal_window", None)  # the motor RMS over the whole run
    (tmp_path / "drives.yaml").write_text(yaml.safe_dump(drives))
    frame = pl.read_csv(ARM_CSV)
    parts = [frame[k:k + size] for k in range(0, len(frame), size)]
    if len(parts[-1]) < 3:  # (too short to differentiate alone)
        parts[-2:] = [pl.concat(parts[-2:])]
    summaries = [check_frame(MODEL, p, str(limits), actuators=str(tmp_path / "drives.yaml")) for p in parts]
    left = summaries[0]
    for s in summaries[1:]:
        left = left.merge(s)
    right = summaries[-1]
    for s in reversed(summaries[:-1]):
        right = s.merge(right)
    middle = summaries[0]
    for a, b in zip(summaries[1::2], summaries[2::2] + [None]):  # pairs first
        middle = middle.merge(a if b is None else a.merge(b))
    whole = json.loads(run("check", ARM, ARM_CSV, "--limits", limits, "--actuators", tmp_path / "drives.yaml",
                           "--format", "json").stdout)
    assert {c["quantity"] for c in whole["checks"]} >= {"rms_effort", "motor_rms", "effort"}
    for merged in (left, right, middle):
        assert merged.ok is whole["ok"] is False and merged.samples == whole["samples"]
        for ours, theirs in zip(merged.limits, whole["checks"], strict=True):
            assert (ours.joint, ours.quantity, ours.count) == (theirs["joint"], theirs["quantity"], theirs["count"])
            assert (ours.worst, ours.utilisation) == (theirs["value"], theirs["utilisation"]), (ours, theirs)
            assert ours.first_time == theirs["time"]


def test_summaries_over_a_thermal_window_do_not_merge(tmp_path):
    """A motor's RMS over a thermal window of 2 s, on partitions of 0.5 s: each partition is
    shorter than the window (so its RMS is over itself) and the windows cross their borders, so
    the merged summaries cannot be the whole run's: merging them is refused (it passed a run
    that fails)."""
    from rnea_cli import RneaError

    import yaml

    drives = yaml.safe_load(DRIVES.read_text())
    drives["arm7_joint2"]["continuous_torque"] = 0.25  # broken over some 2 s window of the run
    (tmp_path / "drives.yaml").write_text(yaml.safe_dump(drives))
    whole = json.loads(run("check", ARM, ARM_CSV, "--actuators", tmp_path / "drives.yaml", "--format",
                           "json").stdout)
    assert any(c["joint"] == "arm7_joint2" and c["quantity"] == "motor_rms" for c in whole["violations"])
    frame = pl.read_csv(ARM_CSV)
    parts = [check_frame(MODEL, frame[k:k + 50], actuators=str(tmp_path / "drives.yaml"))
             for k in range(0, len(frame), 50)]
    assert check_frame(MODEL, frame, actuators=str(tmp_path / "drives.yaml")).to_json()["ok"] is False  # whole: fails
    with pytest.raises(RneaError, match="arm7_joint1 motor_rms is over a thermal window of 2 s, whose windows cross"):
        parts[0].merge(parts[1])


def test_the_rms_has_the_same_bits_whatever_the_chunks(monkeypatch, tmp_path):
    """check's RMS over the run, and a motor's over every thermal window (arm7_drives: 2 s), read
    in one block or in blocks of 3000 and 777 bytes: the same bits."""
    limits = tmp_path / "limits.yaml"
    limits.write_text("arm7_joint2: {rms_effort: 30}\narm7_joint5: {rms_effort: 0.1}\n")
    outputs = []
    for block_bytes in (None, 3000, 777):
        if block_bytes:
            monkeypatch.setattr(__import__("importlib").import_module("rnea_cli.trajectory.sources.csvfile"), "BLOCK_BYTES",
                                block_bytes)
        result = run("check", ARM, ARM_CSV, "--limits", limits, "--actuators", DRIVES, "--format", "json")
        outputs.append([(c["value"], c["utilisation"], c["worst_time"]) for c in json.loads(result.stdout)["checks"]
                        if c["quantity"] in ("rms_effort", "motor_rms")])
    assert len(outputs[0]) == 9 and outputs[0] == outputs[1] == outputs[2]


def test_a_dask_cluster_maps_torques_frame_over_a_partitioned_dataset(tmp_path):
    """LocalCluster with worker processes: a Parquet dataset of 8 files -> torques_frame on each
    partition -> Parquet; the result equals the single-process CLI's."""
    dask = pytest.importorskip("dask.dataframe", reason="the cluster recipe's test needs dask[dataframe]")
    from distributed import Client, LocalCluster

    frame = pl.read_csv(ARM_CSV)
    dataset = tmp_path / "dataset"
    dataset.mkdir()
    bounds = np.linspace(0, len(frame), 9).astype(int)
    for k in range(8):
        frame[bounds[k]:bounds[k + 1]].write_parquet(dataset / f"part.{k}.parquet")
    expected = pl.read_csv(run("torques", ARM, ARM_CSV, "-q").stdout.encode())
    meta = torques_frame(MODEL, frame.head(3).to_pandas()).iloc[:0]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster):
        data = dask.read_parquet(str(dataset))
        assert data.npartitions >= 8
        data.map_partitions(torques_frame, MODEL, meta=meta).to_parquet(str(tmp_path / "torques"), write_index=False)
    result = pl.read_parquet(tmp_path / "torques" / "*.parquet").sort("time")
    assert result.equals(expected)


@pytest.mark.parametrize("call, message", [
    (lambda f: check_frame(MODEL, f, margin=-1.0), "margin: -1.0 is not a finite number above 0"),
    (lambda f: check_frame(MODEL, f, margin=float("nan")), "margin: nan is not a finite number above 0"),
    (lambda f: check_frame(MODEL, f, margin=True), "margin: expected a number, got bool True"),
    (lambda f: check_frame(MODEL, f, 3), "limits: expected a file's path, got int 3"),  # (it read descriptor 3)
    (lambda f: check_frame(MODEL, f, 0), "limits: expected a file's path, got int 0"),  # (it checked no file)
    (lambda f: torques_frame(MODEL, f.lazy()), "expected a pandas or polars DataFrame, or a pyarrow Table or "
                                               "RecordBatch, got polars.LazyFrame (collect() it first)"),
    (lambda f: torques_frame(MODEL, f, gravity=(0, 0, float("inf"))), "gravity: (0, 0, inf) is not three finite"),
    (lambda f: torques_frame(MODEL, f, gravity="0,0,-9.81"), "gravity: '0,0,-9.81' is not three finite"),
    (lambda f: torques_frame(MODEL, f, dt=0), "dt: 0 is not a finite number above 0"),
    (lambda f: torques_frame(MODEL, f, friction="no"), "friction: expected True or False, got str 'no'"),
    (lambda f: torques_frame(MODEL, f, wrench_frame="body"), "wrench_frame: 'body' is not one of world, link"),
    (lambda f: torques_frame(MODEL, f, actuators=4), "actuators: expected a file's path, got int 4"),
    (lambda f: torques_frame(MODEL, f, actuators={"arm7_joint1": Drive(gear_ratio=-2.0)}),
     "actuators: arm7_joint1.gear_ratio: must be above 0, got -2.0"),
    (lambda f: torques_frame(MODEL, f, actuators={"elbow": Drive()}), "no joint 'elbow' among the trajectory's"),
    (lambda f: torques_frame(str(ARM), f), "model: expected a rnea_cli.Model (load_robot(path)), got str"),
])
def test_the_library_refuses_what_the_cli_refuses(call, message):
    """The Python API checks its options as the CLI does (the same functions), raising RneaError."""
    from rnea_cli import RneaError

    with pytest.raises(RneaError, match=re.escape(message)):
        call(pl.read_csv(ARM_CSV).head(20))


def test_the_cli_refuses_as_the_library_does():
    for args, message in ((["--margin", "-1"], "Invalid value for '--margin': -1.0 is not a finite number above 0"),
                          (["--gravity", "0,0,inf"], "Invalid value for '--gravity': '0,0,inf' is not three finite")):
        result = run("check", ARM, ARM_CSV, *args)
        assert result.exit_code == 2 and message in result.stderr, result.stderr


def test_running_sums_have_the_same_bits_whatever_the_chunks():
    """Peaks' RMS and the energy drawn and given back, over chunks of 1, 7 and 1000 samples (and
    Peaks merged from parts): the same bits, and the exact sums' correct rounding (math.fsum)."""
    import math
    from types import SimpleNamespace

    from rnea_cli.run.stats import Energy, Peaks

    rng = np.random.default_rng(5)
    t = np.cumsum(rng.uniform(0.001, 0.002, 1000))
    power = rng.normal(size=(1000, 3)) * [1.0, 1e200, 1e-200]
    results = []
    for size in (1, 7, 1000):
        energy, peaks = Energy(3), Peaks(3)
        for k in range(0, 1000, size):
            chunk = SimpleNamespace(start=k, time=t[k:k + size])
            energy.update(SimpleNamespace(chunk=chunk, power=power[k:k + size]))
            part = Peaks(3)
            part.update(k, chunk.time, power[k:k + size])
            peaks.merge(part)
        results.append((energy.drawn.tolist(), energy.regenerated.tolist(), energy.peaks.rms.tolist(),
                        peaks.rms.tolist()))
    assert results[0] == results[1] == results[2]
    dt = np.diff(t)[:, None]
    drawn = 0.5 * (np.maximum(power[1:], 0) + np.maximum(power[:-1], 0)) * dt
    assert results[0][0] == [math.fsum(drawn[:, j]) for j in range(3)]
    assert results[0][2][0] == math.sqrt(math.fsum(power[:, 0] ** 2) / 1000)


def test_thermal_windows_have_the_same_bits_whatever_the_chunks():
    """The RMS over every 0.5 s window of 20000 jittered samples, fed in one chunk, in chunks of
    1, 7, 333 and 5000 samples, or of 3: the same bits (it differed at 19267 of 19499 windows), and
    the mean of the window's squares to round-off."""
    from rnea_cli.run.stats import ThermalWindow

    rng = np.random.default_rng(3)
    t = np.cumsum(rng.uniform(0.0005, 0.0015, 20_000))
    x = rng.normal(size=20_000) * 3

    def windows(sizes):
        window, out, k = ThermalWindow(0.5), [], 0
        for n in sizes * 20_000:
            if k >= len(t):
                break
            rms = window.update(t[k:k + n], x[k:k + n])
            out += [] if rms is None else [rms]
            k += n
        return np.concatenate(out)

    whole = windows([20_000])
    assert all(np.array_equal(whole, windows(sizes)) for sizes in ([1, 7, 333, 5000], [3]))
    full = np.flatnonzero(t - t[0] >= 0.5)
    assert len(whole) == len(full)
    for j, rms in zip(full[::997], whole[::997]):
        inside = (t > t[j] - 0.5) & (t <= t[j])
        assert rms == pytest.approx(np.sqrt(np.mean(x[inside] ** 2)), rel=1e-13)


def test_a_summary_merges_only_with_a_summary():
    import polars as pl

    from rnea_cli import RneaError, check_frame, load_urdf

    summary = check_frame(load_urdf(str(ARM)), pl.read_csv(ARM_CSV))
    for other in (None, 5, "x"):
        with pytest.raises(RneaError, match="merge takes a CheckSummary"):
            summary.merge(other)
