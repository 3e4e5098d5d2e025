"""Source: Parquet and Arrow IPC; each gives the torques of the same data as CSV."""

import subprocess
import sys

import numpy as np
import polars as pl
import pytest

from conftest import ROBOTS, cli, run, torques
from rnea_cli import load_urdf


PLANAR = ROBOTS / "planar2.urdf"
PLANAR_CSV = ROBOTS / "planar2_traj.csv"


def test_big_integers_in_parquet_read_as_the_nearest_double(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    for kind, big in ((pa.int64(), 2 ** 62), (pa.uint64(), 2 ** 64 - 1)):
        pq.write_table(pa.table({"time": [0, 0.1, 0.2, 0.3], "q_shoulder": [0.0] * 4,
                                 "q_elbow": pa.array([0, 0, 0, big], kind)}), tmp_path / "big.parquet")
        result = run("check", PLANAR, tmp_path / "big.parquet", "--format", "json")
        # read, and refused as an angle: beyond 2^27 rad its cos and sin are not the engine's to give
        assert result.exit_code == 2 and f"row 3: q of elbow is {float(big)!r} rad" in result.stderr, result.stderr
        from rnea_cli import load_urdf
        from rnea_cli.trajectory.sources import open_source

        chunks = list(open_source(tmp_path / "big.parquet", load_urdf(PLANAR)).chunks)
        assert chunks[-1].q[-1, 1] == float(big)  # the nearest double, as CSV reads the same digits


def test_parquet_on_standard_input_needs_a_file_not_a_pipe(tmp_path):
    import polars as pl

    pl.read_csv(PLANAR_CSV).write_parquet(tmp_path / "t.parquet")
    with open(tmp_path / "t.parquet", "rb") as redirected:
        ok = subprocess.run([sys.executable, "-c", cli("torques", PLANAR, "-", "--input-format", "parquet", "-q")],
                            stdin=redirected, capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.startswith("time,tau_shoulder"), ok.stderr
    piped = subprocess.run([sys.executable, "-c", cli("torques", PLANAR, "-", "--input-format", "parquet")],
                           input=(tmp_path / "t.parquet").read_bytes(), capture_output=True)
    assert piped.returncode == 2 and b"which a pipe cannot do" in piped.stderr and piped.stderr.count(b"\n") == 1


ARM = ROBOTS / "arm7.urdf"
ARM_CSV = ROBOTS / "arm7_traj.csv"
MODEL = load_urdf(ARM)


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
