"""Trajectory reading and writing: finite differences, streaming across blocks, exact float output."""

import importlib
import io
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from conftest import CSV_PARSERS, ROBOTS, use_parser
from rnea_cli import load_urdf
from rnea_cli.output import TableWriter
from rnea_cli.trajectory import derivative, open_trajectory

reader = importlib.import_module("rnea_cli.trajectory")


def nonuniform_grid(n, seed=0):
    rng = np.random.default_rng(seed)
    return np.concatenate([[0.0], np.cumsum(rng.uniform(0.5, 1.5, n - 1))]) / n


def test_derivative_is_exact_on_quadratics_even_on_a_nonuniform_grid():
    t = nonuniform_grid(30)
    f = np.column_stack([3 - 2 * t + 5 * t**2, 0.5 * t**2])
    np.testing.assert_allclose(derivative(t, f), np.column_stack([-2 + 10 * t, t]), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(derivative(t, derivative(t, f)), np.tile([10.0, 1.0], (30, 1)), atol=1e-7)


def test_derivative_is_second_order():
    """On sin(3t), halving the steps of a non-uniform grid divides the error by about 4."""
    errors = []
    for n in (50, 100, 200, 400):
        t = nonuniform_grid(n, seed=1)
        t = t / t[-1]
        errors.append(np.abs(derivative(t, np.sin(3 * t)) - 3 * np.cos(3 * t)).max())
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert (orders > 1.7).all(), orders


def polynomial_csv(t, model):
    """A cubic trajectory, and its exact derivatives."""
    coeffs = np.random.default_rng(2).normal(size=(4, model.n))
    T = t[:, None]
    q = coeffs[0] + coeffs[1] * T + coeffs[2] * T**2 + coeffs[3] * T**3
    qd = coeffs[1] + 2 * coeffs[2] * T + 3 * coeffs[3] * T**2
    qdd = 2 * coeffs[2] + 6 * coeffs[3] * T
    lines = ["time," + ",".join(f"q_{j}" for j in model.joint_names)]
    lines += [",".join(repr(float(x)) for x in [t[k], *q[k]]) for k in range(len(t))]
    return "\n".join(lines) + "\n", q, qd, qdd


def read_all(path, model, **kw):
    traj = open_trajectory(path, model, **kw)
    chunks = list(traj.chunks)
    return traj, {x: np.concatenate([getattr(c, x) for c in chunks]) for x in ("time", "q", "qd", "qdd")}, chunks


def test_streamed_differences_equal_whole_file_differences(tmp_path, monkeypatch):
    """Blocks of a few hundred bytes give exactly what one block gives, and converge on a cubic."""
    model = load_urdf(ROBOTS / "planar2.urdf")
    t = nonuniform_grid(400, seed=3)
    text, q, qd, qdd = polynomial_csv(t, model)
    (tmp_path / "p.csv").write_text(text)
    _, whole, chunks = read_all(tmp_path / "p.csv", model)
    assert len(chunks) == 2  # one block; the last two samples wait for the end of the input
    monkeypatch.setattr(reader, "BLOCK_BYTES", 300)
    traj, streamed, chunks = read_all(tmp_path / "p.csv", model)
    assert len(chunks) > 20 and traj.derived == ("qd", "qdd")
    assert [c.start for c in chunks] == list(np.cumsum([0] + [len(c) for c in chunks[:-1]]))
    for x in ("time", "q", "qd", "qdd"):
        np.testing.assert_array_equal(streamed[x], whole[x])
    np.testing.assert_array_equal(whole["q"], q)
    h = np.diff(t).max()
    assert np.abs(whole["qd"] - qd).max() < 50 * h**2 * np.abs(q).max()
    assert np.abs(whole["qdd"][2:-2] - qdd[2:-2]).max() < 50 * h * np.abs(q).max()


def test_qdd_derived_from_given_qd(tmp_path):
    model = load_urdf(ROBOTS / "planar2.urdf")
    t = np.linspace(0, 1, 21)
    lines = ["time,q_shoulder,q_elbow,qd_shoulder,qd_elbow"]
    lines += [f"{x!r},0,0,{2 * x!r},{x * x!r}" for x in map(float, t)]
    (tmp_path / "v.csv").write_text("\n".join(lines) + "\n")
    traj, data, _ = read_all(tmp_path / "v.csv", model)
    assert traj.derived == ("qdd",)
    np.testing.assert_allclose(data["qdd"], np.column_stack([np.full(21, 2.0), 2 * t]), atol=1e-9)


def test_column_order_is_free_and_names_with_prefix_lookalikes(tmp_path):
    xml = (ROBOTS / "planar2.urdf").read_text().replace('"elbow"', '"d_x"')
    model = load_urdf(xml)
    (tmp_path / "o.csv").write_text("qdd_d_x,q_d_x,qd_shoulder,time,qd_d_x,qdd_shoulder,q_shoulder\n1,2,3,4,5,6,7\n")
    _, data, _ = read_all(tmp_path / "o.csv", model)
    np.testing.assert_array_equal(data["q"], [[7, 2]])
    np.testing.assert_array_equal(data["qd"], [[3, 5]])
    np.testing.assert_array_equal(data["qdd"], [[6, 1]])


doubles = arrays(np.float64, st.tuples(st.integers(1, 40), st.integers(1, 4)),
                 elements=st.floats(allow_nan=False, allow_infinity=False, width=64))


@given(doubles)
@settings(max_examples=200, deadline=None)
def test_csv_output_reads_back_bit_for_bit(block):
    stream = io.BytesIO()
    names = [f"c{k}" for k in range(block.shape[1])]
    writer = TableWriter(stream, "csv", names, [(n,) for n in names])
    writer.write(block)
    writer.close()
    lines = stream.getvalue().decode().splitlines()
    assert lines[0] == ",".join(names)
    back = np.array([[float(x) for x in line.split(",")] for line in lines[1:]])
    assert back.tobytes() == block.tobytes()


def significant_digits(text):
    mantissa = text.lower().split("e")[0].lstrip("-").replace(".", "").lstrip("0").rstrip("0")
    return len(mantissa)


@given(doubles)
@settings(max_examples=100, deadline=None)
def test_csv_output_has_the_shortest_round_trip_digits(block):
    """As many significant digits as Python's repr, which is the shortest that reads back exactly."""
    stream = io.BytesIO()
    names = [f"c{k}" for k in range(block.shape[1])]
    TableWriter(stream, "csv", names, [(n,) for n in names]).write(block)
    cells = [c for line in stream.getvalue().decode().splitlines()[1:] for c in line.split(",")]
    assert [significant_digits(c) for c in cells] == [significant_digits(repr(float(x))) for x in block.ravel()]


def test_ignored_columns_may_stand_anywhere_and_hold_anything(tmp_path):
    model = load_urdf(ROBOTS / "planar2.urdf")
    (tmp_path / "m.csv").write_text("time,note,q_shoulder,flag,q_elbow,qd_shoulder,qd_elbow,qdd_shoulder,qdd_elbow\n"
                                    "0,hello,1,,2,3,4,5,6\n1,x y,7,yes,8,9,10,11,12\n")
    _, data, _ = read_all(tmp_path / "m.csv", model)
    np.testing.assert_array_equal(data["q"], [[1, 2], [7, 8]])
    np.testing.assert_array_equal(data["qdd"], [[5, 6], [11, 12]])


def test_large_blocks_go_through_polars_in_order_and_exactly():
    """Blocks of 20k values and more are formatted by polars: same doubles, same order, same digits."""
    from rnea_cli import output

    rng = np.random.default_rng(9)
    block = rng.standard_normal((9000, 5)) * 10.0 ** rng.integers(-30, 30, (9000, 5))
    parts = (block[:4000], block[4000:5000], block[5000:])  # polars, then polars for the small one too
    assert [p.size >= output.SMALL_BLOCK for p in parts] == [True, False, True]
    stream = io.BytesIO()
    names = [f"c{k}" for k in range(5)]
    writer = TableWriter(stream, "csv", names, [(n,) for n in names], background=True)
    for part in parts:
        writer.write(part)
    writer.close()
    lines = stream.getvalue().decode().splitlines()
    assert lines[0] == ",".join(names) and len(lines) == 9001
    cells = [line.split(",") for line in lines[1:]]
    back = np.array([[float(x) for x in row] for row in cells])
    assert back.tobytes() == block.tobytes()
    assert [significant_digits(c) for row in cells[:500] for c in row] == \
        [significant_digits(repr(float(x))) for x in block[:500].ravel()]


class SlowStream(io.BytesIO):
    """A stream whose writes wait for `go`, or fail once `fail` is set."""

    def __init__(self):
        super().__init__()
        self.go, self.fail = threading.Event(), False

    def write(self, data):
        self.go.wait()
        if self.fail:
            raise OSError(28, "No space left on device")
        return super().write(data)


def test_the_writer_queue_is_bounded_and_dropped_on_an_error(monkeypatch):
    """While the stream is stuck, write() returns for only IN_FLIGHT_BYTES of blocks; on an error
    the blocks not yet written are dropped; a failed write raises at the next write()."""
    from rnea_cli import output

    monkeypatch.setattr(output, "IN_FLIGHT_BYTES", 10 * 8 * 2 * 1000)  # ten blocks of 1000 x 2
    block = np.ones((1000, 2))
    stream, returned, stopped = SlowStream(), [], []

    def feed(writer):
        try:
            for _ in range(30):
                writer.write(block)
                returned.append(1)
        except Exception as exc:  # the writer shut down under it
            stopped.append(exc)

    with pytest.raises(RuntimeError, match="stop"):
        with TableWriter(stream, "csv", ["a", "b"], [("a",), ("b",)], background=True) as writer:
            feeder = threading.Thread(target=feed, args=(writer,))
            feeder.start()
            feeder.join(0.5)
            threading.Timer(0.3, stream.go.set).start()  # then the block being written gets through
            assert feeder.is_alive() and len(returned) == 10  # the eleventh waits for room
            raise RuntimeError("stop")  # e.g. a bad row further on
    feeder.join()
    assert stopped and stream.getvalue().count(b"\n") == 1 + 1000  # the header and that one block

    stream = SlowStream()
    stream.go.set()
    stream.fail = True
    writer = TableWriter(stream, "csv", ["a", "b"], [("a",), ("b",)], background=True)
    writer.write(block)
    time.sleep(0.2)
    with pytest.raises(OSError, match="No space left"):
        writer.write(block)


def test_a_file_has_one_float_notation():
    """Small blocks are written with repr, large ones by polars, which differ in notation (1e-05
    and 0.00001). A small block after a large one is written by polars too; a file of small
    blocks only is all repr."""
    import polars as pl

    from rnea_cli import output

    def written(parts):
        stream = io.BytesIO()
        writer = TableWriter(stream, "csv", ["a", "b"], [("a",), ("b",)], background=True)
        for part in parts:
            writer.write(part)
        writer.close()
        return stream.getvalue().decode().splitlines()[1:]

    small = np.array([[1e-5, 1.5e-7], [2.5e-4, -3e-6]])
    large = np.full((output.SMALL_BLOCK, 2), 0.5)
    by_polars = io.BytesIO()
    pl.DataFrame({"a": small[:, 0], "b": small[:, 1]}).write_csv(by_polars, include_header=False)
    assert by_polars.getvalue().decode().splitlines() != [",".join(map(repr, row)) for row in small.tolist()]
    assert written([large, small])[-2:] == by_polars.getvalue().decode().splitlines()
    assert written([small, small]) == [",".join(map(repr, row)) for row in small.tolist()] * 2


@pytest.mark.parametrize("parser", ["c", "polars"])
def test_csv_parsers_give_the_doubles_python_gives(tmp_path, monkeypatch, parser):
    """The same file read through C or polars and through Python (float())."""
    model = load_urdf(ROBOTS / "planar2.urdf")
    t = nonuniform_grid(3000, seed=4)
    text, *_ = polynomial_csv(t, model)
    (tmp_path / "p.csv").write_text(text)
    counting = use_parser(monkeypatch, parser)
    _, fast, _ = read_all(tmp_path / "p.csv", model)
    if counting:  # C read it, and let go of its spare buffers at the end
        assert counting.taken == 1 and counting.left == 0 and counting.dropped == 1
    use_parser(monkeypatch, "python")
    _, slow, _ = read_all(tmp_path / "p.csv", model)
    for x in ("time", "q", "qd", "qdd"):
        assert fast[x].tobytes() == slow[x].tobytes()
    # columns in any order, with a column of text among them and at the end: same numbers
    rows = [line.split(",") for line in text.splitlines()]
    assert rows[0] == ["time", "q_shoulder", "q_elbow"]
    shuffled = [[row[2], "note", row[0], row[1], "x y"] for row in rows]  # q: columns 4 and 1
    shuffled[0][1], shuffled[0][-1] = "note", "comment"
    (tmp_path / "s.csv").write_text("\n".join(",".join(row) for row in shuffled) + "\n")
    for which in (parser, "python"):
        use_parser(monkeypatch, which)
        _, mixed, _ = read_all(tmp_path / "s.csv", model)
        for x in ("time", "q", "qd", "qdd"):
            assert mixed[x].tobytes() == slow[x].tobytes()
    # ", " between cells and a tab before the newline, as some writers do: C takes them; polars
    # refuses them, so under 'polars' this checks the fallback to Python
    (tmp_path / "spaced.csv").write_text(text.replace(",", ", ").replace("\n", "\t\n"))
    for which in (parser, "python"):
        counting = use_parser(monkeypatch, which)
        _, spaced, _ = read_all(tmp_path / "spaced.csv", model)
        if counting:
            assert counting.taken == 1 and counting.left == 0
        for x in ("time", "q", "qd", "qdd"):
            assert spaced[x].tobytes() == slow[x].tobytes()


def test_a_column_claimed_twice_is_an_error():
    from rnea_cli import TrajectoryError

    model = load_urdf(ROBOTS / "rover.urdf")  # a planar joint named base: columns q_base_x, ...
    with pytest.raises(TrajectoryError, match="column q_base_x would belong both to a joint and to base pose"):
        open_trajectory(str(ROBOTS / "rover_traj.csv"), model, floating=True)


@pytest.mark.parametrize("parser", CSV_PARSERS)
def test_blank_lines_at_block_boundaries(tmp_path, monkeypatch, parser):
    """Blank lines at the very end are dropped however the blocks fall, even when they fill whole
    blocks; a blank line before more data is an error naming its line, wherever the block ends,
    whichever parser reads the blocks."""
    from rnea_cli.errors import TrajectoryError

    use_parser(monkeypatch, parser)

    model = load_urdf(ROBOTS / "planar2.urdf")
    rows = [f"{k / 10!r},{k / 100!r},{-k / 100!r}" for k in range(12)]
    head = "time,q_shoulder,q_elbow\n"
    (tmp_path / "end.csv").write_text(head + "\n".join(rows) + "\n" + "\n \n\t\r\n" * 4)
    (tmp_path / "plain.csv").write_text(head + "\n".join(rows) + "\n")
    (tmp_path / "no_newline.csv").write_text(head + "\n".join(rows))
    _, expected, _ = read_all(tmp_path / "plain.csv", model)
    for k in (1, 5, 11):  # blank lines after data row k
        (tmp_path / f"mid{k}.csv").write_text(head + "\n".join(rows[:k]) + "\n\n \n" + "\n".join(rows[k:]) + "\n")
    for block_bytes in range(1, 80):  # every way a block can end, around and inside the blank lines
        monkeypatch.setattr(reader, "BLOCK_BYTES", block_bytes)
        for name in ("end.csv", "no_newline.csv"):
            _, data, _ = read_all(tmp_path / name, model)
            for x in ("time", "q"):
                np.testing.assert_array_equal(data[x], expected[x])
        for k in (1, 5, 11):
            with pytest.raises(TrajectoryError, match=rf"line {k + 2}\b"):
                read_all(tmp_path / f"mid{k}.csv", model)


@pytest.mark.parametrize("parser", CSV_PARSERS)
def test_only_newline_ends_a_line(tmp_path, monkeypatch, parser):
    """A carriage return, form feed, vertical tab, NEL or line separator inside a text cell is text,
    for both parsers (Python's splitlines or csv would end the line there): same rows, and exact
    line numbers."""
    from rnea_cli.errors import TrajectoryError

    counting = use_parser(monkeypatch, parser)
    if counting:  # a line or two a block: C takes them all but the one with \r
        monkeypatch.setattr(reader, "BLOCK_BYTES", 20)
    model = load_urdf(ROBOTS / "planar2.urdf")
    rows = [f"{k / 10!r},{k / 100!r},0,note {k}" for k in range(3000)]
    for k, odd in ((4, "\r"), (5, "\f"), (6, "\v"), (7, "\x85"), (8, "\u2028")):
        rows[k] = rows[k].replace("note", f"no{odd}te")
    head = "time,q_shoulder,q_elbow,note\n"
    (tmp_path / "odd.csv").write_text(head + "\n".join(rows) + "\n", encoding="utf-8")
    _, data, _ = read_all(tmp_path / "odd.csv", model)
    assert len(data["time"]) == 3000 and data["time"][2999] == 299.9
    if counting:
        assert counting.taken > 1400 and counting.left == 1
    rows[9] = rows[9].replace(",0,", ",zero,")
    (tmp_path / "bad.csv").write_text(head + "\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(TrajectoryError, match=r"line 11, column 3 \(q_elbow\): not a number: 'zero'"):
        read_all(tmp_path / "bad.csv", model)


@pytest.mark.parametrize("parser", CSV_PARSERS)
def test_a_quote_left_open_is_an_error_not_lost_rows(tmp_path, monkeypatch, parser):
    """An unclosed quote would make the rest of the file one cell: fewer samples and no error.
    Both parsers refuse a cell that runs past its line, naming the line it starts on."""
    from rnea_cli.errors import TrajectoryError

    counting = use_parser(monkeypatch, parser)
    if counting:  # blocks of ~60 lines: C takes those before the quote, leaves the quote's
        monkeypatch.setattr(reader, "BLOCK_BYTES", 2000)
    model = load_urdf(ROBOTS / "planar2.urdf")
    rows = [f"{k / 10!r},{k / 100!r},0,0,0,0,0,note {k}" for k in range(3000)]
    head = "time,q_shoulder,q_elbow,qd_shoulder,qd_elbow,qdd_shoulder,qdd_elbow,note\n"
    # left open (polars refuses it too), or closed on the next line (only the line count sees it)
    for quoted in ('"note 1234', '"note\n1234"'):
        cut = list(rows)
        cut[1234] = cut[1234].replace("note 1234", quoted)
        (tmp_path / "q.csv").write_text(head + "\n".join(cut) + "\n")
        with pytest.raises(TrajectoryError, match=r"line 1236: a quoted cell runs on past the end of the line"):
            read_all(tmp_path / "q.csv", model)
        if counting:
            assert counting.taken > 15 and counting.left == 1
            counting.taken = counting.left = 0
    # the quote on the last line of a block (here each block is a line or two): still an error
    monkeypatch.setattr(reader, "BLOCK_BYTES", 20)
    cut = list(rows)
    cut[1234] = cut[1234].replace("note 1234", '"note 1234')
    (tmp_path / "q.csv").write_text(head + "\n".join(cut) + "\n")
    with pytest.raises(TrajectoryError, match=r"line 1236: a quoted cell runs on past the end of the line"):
        read_all(tmp_path / "q.csv", model)


def test_a_quote_left_open_with_more_than_csv_field_limit_after_it(tmp_path, monkeypatch):
    """Over 128 KB of lines after an open quote (csv's field limit): still the quote's own line,
    and the quote named, not 'field larger than field limit' one line early."""
    from rnea_cli.errors import TrajectoryError

    use_parser(monkeypatch, "python")
    model = load_urdf(ROBOTS / "planar2.urdf")
    rows = [f"{k / 10!r},{k / 100!r},0,0,0,0,0,note {k}" for k in range(6000)]
    rows[5] = rows[5].replace("note 5", '"note 5')
    (tmp_path / "q.csv").write_text("time,q_shoulder,q_elbow,qd_shoulder,qd_elbow,qdd_shoulder,qdd_elbow,note\n"
                                    + "\n".join(rows) + "\n")
    with pytest.raises(TrajectoryError, match=r"line 7: a quoted cell runs on past the end of the line"):
        read_all(tmp_path / "q.csv", model)


@pytest.mark.parametrize("parser", CSV_PARSERS)
def test_an_empty_last_column_is_empty_cells_and_a_short_row_still_an_error(tmp_path, monkeypatch, parser):
    """An ignored last column left empty reads like the file without it (polars reports its cells
    as nulls, as it would a row with a field missing); a row that really lacks a field is an error."""
    from rnea_cli.errors import TrajectoryError

    use_parser(monkeypatch, parser)
    model = load_urdf(ROBOTS / "planar2.urdf")
    rows = [f"{k / 10!r},{k / 100!r},{-k / 100!r}" for k in range(500)]
    (tmp_path / "plain.csv").write_text("time,q_shoulder,q_elbow\n" + "\n".join(rows) + "\n")
    (tmp_path / "note.csv").write_text("time,q_shoulder,q_elbow,note\n" + "\n".join(r + "," for r in rows) + "\n")
    _, plain, _ = read_all(tmp_path / "plain.csv", model)
    _, note, _ = read_all(tmp_path / "note.csv", model)
    for x in ("time", "q", "qd", "qdd"):
        assert note[x].tobytes() == plain[x].tobytes()
    rows = [r + "," for r in rows]
    rows[321] = rows[321][:-1]  # no note field at all
    (tmp_path / "short.csv").write_text("time,q_shoulder,q_elbow,note\n" + "\n".join(rows) + "\n")
    with pytest.raises(TrajectoryError, match=r"line 323: 3 fields, expected 4"):
        read_all(tmp_path / "short.csv", model)
