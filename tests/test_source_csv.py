"""Source: CSV. polars parses every value; the shape of every row is checked whatever the block size and
whichever columns are read; bad input is one error naming its line and column."""

import importlib
import json
import os
import pathlib

import numpy as np
import pytest

from conftest import ROBOTS, one_line_error, run, run_measured
from rnea_cli import TrajectoryError, load_urdf
from rnea_cli.trajectory.open import open_trajectory


reader = importlib.import_module("rnea_cli.trajectory.sources.csvfile")
PLANAR_MODEL = load_urdf(ROBOTS / "planar2.urdf")
PLANAR = ROBOTS / "planar2.urdf"
PLANAR_CSV = ROBOTS / "planar2_traj.csv"


def read_all(path, model=PLANAR_MODEL, **kw):
    traj = open_trajectory(path, model, **kw)
    chunks = list(traj.chunks)
    return traj, {x: np.concatenate([getattr(c, x) for c in chunks]) for x in ("time", "q", "qd", "qdd")}, chunks


def cubic_rows(n, seed=0):
    """time, q_shoulder, q_elbow rows of a smooth motion, every value in repr form."""
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.uniform(0.5, 1.5, n)) / n
    q = np.column_stack([np.sin(3 * t) * 10.0 ** rng.integers(-5, 5), t ** 3 - 0.3 * t])
    return [f"{float(t[k])!r},{float(q[k, 0])!r},{float(q[k, 1])!r}" for k in range(n)], t, q


def test_column_order_is_free_and_names_with_prefix_lookalikes(tmp_path):
    xml = (ROBOTS / "planar2.urdf").read_text().replace('"elbow"', '"d_x"')
    model = load_urdf(xml)
    (tmp_path / "o.csv").write_text("qdd_d_x,q_d_x,qd_shoulder,time,qd_d_x,qdd_shoulder,q_shoulder\n1,2,3,4,5,6,7\n")
    _, data, _ = read_all(tmp_path / "o.csv", model)
    np.testing.assert_array_equal(data["q"], [[7, 2]])
    np.testing.assert_array_equal(data["qd"], [[3, 5]])
    np.testing.assert_array_equal(data["qdd"], [[6, 1]])


def test_ignored_columns_may_stand_anywhere_and_hold_anything(tmp_path):
    (tmp_path / "m.csv").write_text("time,note,q_shoulder,flag,q_elbow,qd_shoulder,qd_elbow,qdd_shoulder,qdd_elbow\n"
                                    '0,hello,1,,2,3,4,5,6\n1,"x, y",7,yes,8,9,10,11,12\n')
    _, data, _ = read_all(tmp_path / "m.csv")
    np.testing.assert_array_equal(data["q"], [[1, 2], [7, 8]])
    np.testing.assert_array_equal(data["qdd"], [[5, 6], [11, 12]])


def test_polars_gives_the_doubles_python_gives(tmp_path):
    """Every value as float() reads its text, in a plain file, with text columns and shuffled
    columns, and with spaces around the cells."""
    rows, t, q = cubic_rows(6000, seed=4)
    expected = np.column_stack([[float(x) for x in r.split(",")] for r in rows]).T
    (tmp_path / "p.csv").write_text("time,q_shoulder,q_elbow\n" + "\n".join(rows) + "\n")
    shuffled = ["q_elbow,note,time,q_shoulder,comment"] + [f"{c},n {k},{a},{b},x y" for k, (a, b, c) in
                                                            enumerate(r.split(",") for r in rows)]
    (tmp_path / "s.csv").write_text("\n".join(shuffled) + "\n")
    (tmp_path / "spaced.csv").write_text(("time,q_shoulder,q_elbow\n" + "\n".join(rows) + "\n")
                                         .replace(",", ", ").replace("\n", "\t\n"))
    for name in ("p.csv", "s.csv", "spaced.csv"):
        _, data, _ = read_all(tmp_path / name, dt=None)
        assert data["time"].tobytes() == expected[:, 0].tobytes(), name
        assert data["q"].tobytes() == np.ascontiguousarray(expected[:, 1:]).tobytes(), name


@pytest.mark.parametrize("cell, value", [("1e3", 1000.0), (".5", 0.5), ("5.", 5.0), ("+2", 2.0), ("-0", -0.0),
                                         ("1E-05", 1e-05), ('"2.5"', 2.5), ("0.1000000000000000055511151231257827",
                                                                            0.1), ("4.9e-324", 5e-324)])
def test_numbers_as_csv_writers_write_them(tmp_path, cell, value):
    (tmp_path / "c.csv").write_text(f"time,q_shoulder,q_elbow\n0,{cell},0\n1,0,0\n2,0,0\n")
    _, data, _ = read_all(tmp_path / "c.csv")
    assert data["q"][0, 0] == value and np.signbit(data["q"][0, 0]) == np.signbit(value)


@pytest.mark.parametrize("cell, message", [
    ("abc", "not a number: 'abc'"), ("", "empty cell"), ("1_0", "not a number: '1_0'"),
    ("0x10", "not a number: '0x10'"), ("nan", "not finite: 'nan'"), ("-inf", "not finite: '-inf'"),
    ("1e400", "not finite: '1e400'"), ("١٢", "not a number: '١٢'"), ("1,5", "4 fields, expected 3 (as in the header)"),
    ("\x1b]0;pwned\x07", r"not a number: '\x1b]0;pwned\x07'"),
])
def test_bad_cells_name_line_and_column(tmp_path, cell, message):
    (tmp_path / "c.csv").write_text(f"time,q_shoulder,q_elbow\n0,0,0\n1,{cell},0\n2,0,0\n", encoding="utf-8")
    with pytest.raises(TrajectoryError) as err:
        read_all(tmp_path / "c.csv")
    where = "line 3" if "fields" in message else "line 3, column 2 (q_shoulder)"
    assert str(err.value) == f"{tmp_path / 'c.csv'}: {where}: {message}"


@pytest.mark.parametrize("where", ["ignored", "used", "short-ignored", "short-used"])
def test_a_ragged_row_in_a_large_block_is_an_error_whatever_column_it_shifts(tmp_path, where):
    """A row with a field too many or too few, 64 KB and more into a block of a file with ignored
    columns (time, sample, q...), never shifts the columns: one error naming its line."""
    rows, _, _ = cubic_rows(4000)
    rows = [f"{r.split(',')[0]},{k},{','.join(r.split(',')[1:])},tag" for k, r in enumerate(rows)]
    k = 3000  # ~150 KB into the file
    fields = rows[k].split(",")
    if where == "ignored":
        fields.insert(1, "7")  # an extra field among the ignored ones
    elif where == "used":
        fields.insert(3, "7")
    elif where == "short-ignored":
        fields.pop()  # the last, ignored, field missing
    else:
        fields.pop(2)
    rows[k] = ",".join(fields)
    (tmp_path / "r.csv").write_text("time,sample,q_shoulder,q_elbow,tag\n" + "\n".join(rows) + "\n")
    assert (tmp_path / "r.csv").stat().st_size > 1 << 17
    count = 6 if where in ("ignored", "used") else 4
    with pytest.raises(TrajectoryError, match=rf"line {k + 2}: {count} fields, expected 5 \(as in the header\)"):
        read_all(tmp_path / "r.csv")


def test_a_column_claimed_twice_is_an_error():
    model = load_urdf(ROBOTS / "rover.urdf")  # a planar joint named base: columns q_base_x, ...
    with pytest.raises(TrajectoryError, match="column q_base_x would belong both to a joint and to base pose"):
        open_trajectory(str(ROBOTS / "rover_traj.csv"), model, floating=True)


def test_blank_lines_at_block_boundaries(tmp_path, monkeypatch):
    """Blank lines at the very end are dropped however the blocks fall, even when they fill whole
    blocks; a blank line before more data is an error naming its line, wherever the block ends."""
    rows = [f"{k / 10!r},{k / 100!r},{-k / 100!r}" for k in range(12)]
    head = "time,q_shoulder,q_elbow\n"
    (tmp_path / "end.csv").write_text(head + "\n".join(rows) + "\n" + "\n \n\t\r\n" * 4)
    (tmp_path / "plain.csv").write_text(head + "\n".join(rows) + "\n")
    (tmp_path / "no_newline.csv").write_text(head + "\n".join(rows))
    _, expected, _ = read_all(tmp_path / "plain.csv")
    for k in (1, 5, 11):  # blank lines after data row k
        (tmp_path / f"mid{k}.csv").write_text(head + "\n".join(rows[:k]) + "\n\n \n" + "\n".join(rows[k:]) + "\n")
    for block_bytes in range(1, 80, 3):  # every way a block can end, around and inside the blank lines
        monkeypatch.setattr(reader, "BLOCK_BYTES", block_bytes)
        for name in ("end.csv", "no_newline.csv"):
            _, data, _ = read_all(tmp_path / name)
            for x in ("time", "q"):
                np.testing.assert_array_equal(data[x], expected[x])
        for k in (1, 5, 11):
            with pytest.raises(TrajectoryError, match=rf"line {k + 2}: blank line"):
                read_all(tmp_path / f"mid{k}.csv")


def peak_rss_mb_of(code):
    """(peak RSS MB, (exit status, stderr)) of code in a fresh interpreter."""
    code, err, rss = run_measured(code)
    return rss, type("Result", (), {"returncode": code, "stderr": err})


def test_megabytes_of_blank_lines_mid_file_fail_in_bounded_memory(tmp_path):
    """8 MB of blank lines between two rows of a wide file (100 columns) once grew to gigabytes
    before the error; now the error names the first blank line, within a few hundred MB."""
    header = "time,q_shoulder,q_elbow," + ",".join(f"x{k}" for k in range(97))
    row = ",".join(["0.5"] * 100)
    path = tmp_path / "blank.csv"
    with open(path, "w") as f:
        f.write(header + "\n" + row + "\n" + "\n" * (8 << 20) + row + "\n")
    code = (f"from rnea_cli.cli import main\nmain(['torques', {str(ROBOTS / 'planar2.urdf')!r}, {str(path)!r}, "
            "'-q', '-o', '/dev/null'])")
    rss, result = peak_rss_mb_of(code)
    assert result.returncode == 2, result.stderr
    assert result.stderr.endswith("blank.csv: line 3: blank line (blank lines may only end the file)\n")
    assert rss < 400, rss


def test_lines_longer_than_the_limit_are_an_error_not_a_memory_blow_up(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_LINE", 1000)
    (tmp_path / "h.csv").write_text("time," + "x" * 2000 + "\n0,1\n")
    with pytest.raises(TrajectoryError, match="line 1: longer than 1,000 bytes"):
        read_all(tmp_path / "h.csv")
    (tmp_path / "d.csv").write_text("time,q_shoulder,q_elbow\n0,0,0\n1,0," + "1" * 5000 + "\n")
    monkeypatch.setattr(reader, "BLOCK_BYTES", 100)
    with pytest.raises(TrajectoryError, match="line 3: longer than 1,000 bytes"):
        read_all(tmp_path / "d.csv")


def test_an_endless_first_line_on_stdin_is_one_error():
    code = ("import sys, io\nfrom rnea_cli.cli import main\n"
            "sys.stdin = io.TextIOWrapper(io.BufferedReader(open('/dev/zero', 'rb')))\n"
            f"main(['torques', {str(ROBOTS / 'planar2.urdf')!r}, '-', '--input-format', 'csv', '-q'])")
    rss, result = peak_rss_mb_of(code)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "<stdin>: line 1: longer than 1,048,576 bytes" in result.stderr
    assert rss < 400


def test_header_oddities(tmp_path):
    cases = {
        "cr.csv": (b"time,q_shoulder,q_elbow\r0,0,0\r1,0,0\r", "line 1: lines end in a carriage return alone"),
        "utf16.csv": ("time,q_shoulder\n".encode("utf-16"), "line 1: the file is UTF-16 text"),
        "cell.csv": (b'time,"' + b"x" * 200_000 + b'"\n0,1\n', "line 1: header is not CSV: field larger than"),
        "latin.csv": (b"time,q_\xe9\n0,1\n", "line 1: header is not UTF-8 text"),
        "empty.csv": (b"", "empty file"),
    }
    for name, (data, message) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(TrajectoryError, match=message):
            read_all(tmp_path / name)


def test_delimiters_are_sniffed_and_byte_order_marks_skipped(tmp_path):
    rows, t, q = cubic_rows(50)
    plain = "time,q_shoulder,q_elbow\n" + "\n".join(rows) + "\n"
    variants = {"semi.csv": plain.replace(",", ";"), "tab.csv": plain.replace(",", "\t"),
                "spaces.txt": "  " + plain.replace(",", "   ").replace("\n", " \n  "),
                "bom.csv": "\ufeff" + plain, "crlf.csv": plain.replace("\n", "\r\n")}
    _, expected, _ = read_all(str(tmp_path / "p.csv") if (tmp_path / "p.csv").write_text(plain) else None)
    for name, text in variants.items():
        (tmp_path / name).write_text(text)
        _, data, _ = read_all(tmp_path / name, fmt="csv")
        for x in ("time", "q", "qdd"):
            assert data[x].tobytes() == expected[x].tobytes(), name
    result = run("torques", ROBOTS / "planar2.urdf", "-", "-q", input="\ufeff" + plain)
    assert result.exit_code == 0, result.stderr


def test_only_newline_ends_a_line(tmp_path):
    """A carriage return, form feed, vertical tab, NEL or line separator inside a text cell is text:
    same rows, and exact line numbers."""
    rows = [f"{k / 10!r},{k / 100!r},0,note {k}" for k in range(3000)]
    for k, odd in ((4, "\r"), (5, "\f"), (6, "\v"), (7, "\x85"), (8, "\u2028")):
        rows[k] = rows[k].replace("note", f"no{odd}te")
    head = "time,q_shoulder,q_elbow,note\n"
    (tmp_path / "odd.csv").write_text(head + "\n".join(rows) + "\n", encoding="utf-8")
    _, data, _ = read_all(tmp_path / "odd.csv")
    assert len(data["time"]) == 3000 and data["time"][2999] == 299.9
    rows[9] = rows[9].replace(",0,", ",zero,")
    (tmp_path / "bad.csv").write_text(head + "\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(TrajectoryError, match=r"line 11, column 3 \(q_elbow\): not a number: 'zero'"):
        read_all(tmp_path / "bad.csv")


@pytest.mark.parametrize("block_bytes", [reader.BLOCK_BYTES, 2000, 20])
def test_a_quote_left_open_is_an_error_not_lost_rows(tmp_path, monkeypatch, block_bytes):
    """An unclosed quote would make the rest of the file one cell: fewer samples and no error. A
    cell that runs past its line is refused, naming the line it starts on, wherever blocks end."""
    monkeypatch.setattr(reader, "BLOCK_BYTES", block_bytes)
    rows = [f"{k / 10!r},{k / 100!r},0,0,0,0,0,note {k}" for k in range(3000)]
    head = "time,q_shoulder,q_elbow,qd_shoulder,qd_elbow,qdd_shoulder,qdd_elbow,note\n"
    for quoted in ('"note 1234', '"note\n1234"'):  # left open, or closed on the next line
        cut = list(rows)
        cut[1234] = cut[1234].replace("note 1234", quoted)
        (tmp_path / "q.csv").write_text(head + "\n".join(cut) + "\n")
        with pytest.raises(TrajectoryError, match=r"line 1236: a quoted cell runs on past the end of the line"):
            read_all(tmp_path / "q.csv")


def test_an_empty_last_column_is_empty_cells_and_a_short_row_still_an_error(tmp_path):
    rows = [f"{k / 10!r},{k / 100!r},{-k / 100!r}" for k in range(500)]
    (tmp_path / "plain.csv").write_text("time,q_shoulder,q_elbow\n" + "\n".join(rows) + "\n")
    (tmp_path / "note.csv").write_text("time,q_shoulder,q_elbow,note\n" + "\n".join(r + "," for r in rows) + "\n")
    _, plain, _ = read_all(tmp_path / "plain.csv")
    _, note, _ = read_all(tmp_path / "note.csv")
    for x in ("time", "q", "qd", "qdd"):
        assert note[x].tobytes() == plain[x].tobytes()
    rows = [r + "," for r in rows]
    rows[321] = rows[321][:-1]  # no note field at all
    (tmp_path / "short.csv").write_text("time,q_shoulder,q_elbow,note\n" + "\n".join(rows) + "\n")
    with pytest.raises(TrajectoryError, match=r"line 323: 3 fields, expected 4"):
        read_all(tmp_path / "short.csv")


def test_joint_names_with_spaces_around_them(tmp_path):
    """A URDF joint named 'elbow ' (trailing space) is matched as written; 'q_shoulder ' in a header
    still means q_shoulder."""
    model = load_urdf((ROBOTS / "planar2.urdf").read_text().replace('name="elbow"', 'name="elbow "'))
    (tmp_path / "s.csv").write_text("time,q_shoulder ,q_elbow \n0,1,2\n1,1,2\n2,1,2\n")
    _, data, _ = read_all(tmp_path / "s.csv", model)
    np.testing.assert_array_equal(data["q"][0], [1, 2])


def test_a_byte_order_mark_on_stdin_does_not_change_the_format():
    text = PLANAR_CSV.read_text()
    assert run("torques", PLANAR, "-", "-q", input="\ufeff" + text).stdout == run("torques", PLANAR, PLANAR_CSV,
                                                                                  "-q").stdout
    doc = json.dumps({"time": [0, 0.1, 0.2], "q": {"shoulder": [0, 1, 2], "elbow": [0, 1, 2]}})
    assert run("torques", PLANAR, "-", "-q", input="\ufeff" + doc).exit_code == 0


@pytest.mark.parametrize("size", [(1 << 20) + 1, 3 << 20, 7 << 20])
def test_a_data_line_over_the_limit_is_refused_whatever_the_block(tmp_path, size):
    path = tmp_path / "long.csv"
    path.write_text("time,q_shoulder,q_elbow\n0,0,0\n0.1,0," + "0" * size + "\n0.2,0,0\n0.3,0,0\n")
    one_line_error(run("torques", PLANAR, path, "-o", tmp_path / "o.csv"), "line 3: longer than 1,048,576 bytes")
    assert not (tmp_path / "o.csv").exists()
    path.write_text("time,q_shoulder,q_elbow\n0,0,0\n0.1,0," + "0" * ((1 << 20) - 10) + "\n0.2,0,0\n0.3,0,0\n")
    assert run("torques", PLANAR, path, "-q").exit_code == 0


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
