"""Tables out: every double read back bit for bit in its shortest form, one notation per file,
bounded memory in the writer thread, and files that are whole or absent, whatever kills the process."""

import io
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from conftest import ROBOTS, open_files
from rnea_cli.errors import RneaError
from rnea_cli.outputs import writers
from rnea_cli.outputs.destinations import NamedStream
from rnea_cli.outputs.writers import table_writer

doubles = arrays(np.float64, st.tuples(st.integers(1, 40), st.integers(1, 4)),
                 elements=st.floats(allow_nan=False, allow_infinity=False, width=64))


def written(blocks, background=False):
    stream = io.BytesIO()
    names = [f"c{k}" for k in range(blocks[0].shape[1])]
    with table_writer(stream, "csv", names, [(n,) for n in names], background=background) as writer:
        for block in blocks:
            writer.write(block)
    lines = stream.getvalue().decode().splitlines()
    assert lines[0] == ",".join(names)
    return lines[1:]


@given(doubles)
@settings(max_examples=200, deadline=None)
def test_csv_output_reads_back_bit_for_bit(block):
    back = np.array([[float(x) for x in line.split(",")] for line in written([block])])
    assert back.tobytes() == block.tobytes()


def significant_digits(text):
    mantissa = text.lower().split("e")[0].lstrip("-").replace(".", "").lstrip("0").rstrip("0")
    return len(mantissa)


@given(doubles)
@settings(max_examples=100, deadline=None)
def test_csv_output_has_the_shortest_round_trip_digits(block):
    """As many significant digits as Python's repr, which is the shortest that reads back exactly."""
    cells = [c for line in written([block]) for c in line.split(",")]
    assert [significant_digits(c) for c in cells] == [significant_digits(repr(float(x))) for x in block.ravel()]


def test_a_file_has_one_float_notation_whatever_its_blocks():
    """Blocks of any size, in the writer thread or not, give the text of the whole table written at once."""
    rng = np.random.default_rng(9)
    block = rng.standard_normal((9000, 5)) * 10.0 ** rng.integers(-30, 30, (9000, 5))
    whole = written([block])
    for cuts in ([1, 2, 5000], [4000, 4001], [8999]):
        parts = np.split(block, cuts)
        assert written(parts, background=True) == whole
        assert written(parts) == whole
    assert {"0.00001", "1e-7"} <= {c for line in written([np.array([[1e-5, 1e-7]])]) for c in line.split(",")}


class ManualPool:
    """A stand-in for the writer's thread: a job runs when its result is asked for, or never if cancelled."""

    def __init__(self):
        self.jobs = []

    def submit(self, fn, *args):
        job = ManualJob(fn, args)
        self.jobs.append(job)
        return job

    def shutdown(self, wait=True, cancel_futures=False):
        for job in self.jobs:
            if cancel_futures and not job.ran:
                job.cancelled = True


class ManualJob:
    def __init__(self, fn, args):
        self.fn, self.args, self.ran, self.cancelled = fn, args, False, False

    def done(self):
        return self.ran

    def result(self):
        if not self.ran and not self.cancelled:
            self.ran = True
            self.fn(*self.args)


def test_the_writer_queue_is_bounded_and_dropped_on_an_error(monkeypatch):
    """At most IN_FLIGHT_BYTES of blocks wait for the writer thread; on an error the blocks not
    yet written are dropped; a failed write raises at a later write()."""
    monkeypatch.setattr(writers, "IN_FLIGHT_BYTES", 10 * 8 * 2 * 1000)  # ten blocks of 1000 x 2
    block = np.ones((1000, 2))
    stream = io.BytesIO()
    with pytest.raises(RuntimeError, match="stop"):
        with table_writer(stream, "csv", ["a", "b"], [("a",), ("b",)], background=True) as writer:
            writer._pool = pool = ManualPool()
            for k in range(30):
                writer.write(block)
                waiting = [job for job in pool.jobs if not job.ran]
                assert len(waiting) == min(k + 1, 10)  # blocks are written only to make room
            raise RuntimeError("stop")  # e.g. a bad row further on
    assert stream.getvalue().count(b"\n") == 1 + 20 * 1000  # the header and the 20 blocks written

    class Full(io.BytesIO):
        def write(self, data):
            raise OSError(28, "No space left on device")

    writer = table_writer(NamedStream(Full(), "out.csv"), "csv", ["a", "b"], [("a",), ("b",)], background=True)
    writer._pool = ManualPool()
    with pytest.raises(RneaError, match="out.csv: cannot write: No space left on device"):
        for _ in range(12):
            writer.write(block)


def start_writing(tmp_path, extra=(), name="out.csv", way="unnamed"):
    """`rnea torques` from a pipe into tmp_path/name, stopped mid-run with its output open and
    partly written: (the process, the path of the file being written). way
    'temp': into a hidden temp file, as where there is no O_TMPFILE."""
    rows = "".join(f"{k * 1e-3!r},{k * 1e-4!r},{-k * 1e-4!r}\n" for k in range(400_000))  # ~11 MB
    proc = subprocess.Popen([sys.executable, "-c", rnea_code(way), "torques",
                             str(ROBOTS / "planar2.urdf"), "-", "--input-format", "csv", "-o",
                             str(tmp_path / name), "-q", *extra], stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp_path)
    proc.stdin.write(b"time,q_shoulder,q_elbow\n" + rows.encode())
    proc.stdin.flush()  # more than a block: the first is computed and written, then it waits for more
    def writing():  # a file under tmp_path open and holding rows
        for fd, path in open_files(proc.pid).items():
            try:
                if path.startswith(str(tmp_path)) and os.stat(fd).st_size > 0:
                    return path
            except OSError:  # closed meanwhile
                continue
        return None

    for _ in range(6000):  # at most a minute
        path = writing()
        if path:
            return proc, path
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.01)
    pytest.fail("the output was never started")


def rnea_code(way):
    """The Python of `rnea` writing its files one way: 'unnamed' as installed (Linux's O_TMPFILE),
    'temp' as where there is none, its invocation's Guard told so."""
    if way == "unnamed":
        return "from rnea_cli.cli import run; run()"
    return ("from rnea_cli.cli import main; from rnea_cli.cli.common import Invocation; "
            "from rnea_cli.outputs.destinations import Guard; main(obj=Invocation(guard=Guard(unnamed=False)))")


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to see the output being written")
@pytest.mark.parametrize("signum, status", [(signal.SIGKILL, -9), (signal.SIGTERM, -15), (signal.SIGHUP, -1),
                                            (signal.SIGINT, 130)])
@pytest.mark.parametrize("name", ["out.csv", "out.parquet", "out.arrow"])
def test_a_signal_mid_write_leaves_nothing_behind(tmp_path, signum, status, name):
    """Nothing on disk, and after Ctrl-C exactly one line."""
    proc, _ = start_writing(tmp_path, name=name)
    stop(proc, signum, status)
    assert os.listdir(tmp_path) == [], os.listdir(tmp_path)
    if signum == signal.SIGINT:
        assert proc.stderr.read().decode() == "rnea: interrupted\n"


def stop(proc, signum, status):
    proc.send_signal(signum)
    try:
        proc.stdin.close()
    except BrokenPipeError:
        pass
    code = proc.wait(60)
    assert code == status, (code, proc.stderr.read())


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to see the output being written")
@pytest.mark.parametrize("signum, status, way", [(signal.SIGKILL, -9, "unnamed"), (signal.SIGTERM, -15, "temp"),
                                                 (signal.SIGINT, 130, "temp")], ids=["KILL", "TERM-temp", "INT-temp"])
def test_a_signal_mid_write_through_a_link_leaves_its_target_whole(tmp_path, signum, status, way):
    """-o out.csv, a link to data/real.csv: the new file is written beside real.csv (on its file
    system, to be renamed over it), and a signal leaves real.csv, the link and both folders as they were."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "real.csv").write_bytes(b"old\n")
    os.symlink("data/real.csv", tmp_path / "out.csv")
    proc, path = start_writing(tmp_path, way=way)
    assert os.path.dirname(path) == str(tmp_path / "data"), path
    assert os.path.basename(path).startswith(".real.csv." if way == "temp" else "#"), path  # (O_TMPFILE's: #inode)
    stop(proc, signum, status)
    assert (tmp_path / "data" / "real.csv").read_bytes() == b"old\n"
    assert os.readlink(tmp_path / "out.csv") == "data/real.csv"
    assert sorted(os.listdir(tmp_path)) == ["data", "out.csv"] and os.listdir(tmp_path / "data") == ["real.csv"]


@pytest.mark.parametrize("background, when", [(False, "while computing"), (True, "while computing"),
                                              (True, "while the last block is written")])
def test_a_dropped_parquet_output_says_nothing_later(tmp_path, background, when):
    """Interrupted mid-run (Ctrl-C while a block is computed, or while close() waits for the writer
    thread's last block), the output is dropped: its writer writes no footer, neither at once (a cut-off
    table on stdout would read as whole) nor into the closed file when it is collected (Python would
    print 'Exception ignored in ParquetWriter.__del__')."""
    fmt = "parquet"
    import gc

    class Interrupted:  # the last block's future, waited for by close() when Ctrl-C comes
        def __init__(self, job):
            self.job = job

        def done(self):
            return False

        def result(self):
            self.job.result()
            raise KeyboardInterrupt

    unraisable = []
    hook, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        stream = open(tmp_path / f"o.{fmt}", "wb")
        with pytest.raises(KeyboardInterrupt):
            with table_writer(stream, fmt, ["a", "b"], [("a",), ("b",)], background=background) as writer:
                writer.write(np.ones((10, 2)))
                if when == "while computing":
                    raise KeyboardInterrupt
                job, size = writer._pending[-1]  # (only a writer thread has a block to wait for)
                writer._pending[-1] = (Interrupted(job), size)
        stream.close()
        dropped = (tmp_path / f"o.{fmt}").read_bytes()
        del writer
        gc.collect()
    finally:
        sys.unraisablehook = hook
    assert unraisable == [], [u.exc_value for u in unraisable]
    assert dropped.startswith(b"PAR1") and not dropped.endswith(b"PAR1")  # the rows' pages, no footer
    assert (tmp_path / f"o.{fmt}").read_bytes() == dropped


def test_a_complete_output_replaces_an_old_one_and_a_new_one_has_the_umask(tmp_path):
    """A new file gets the mode open() would give it; an old one replaced keeps its own
    (tests/test_outputs_files.py: modes, owners, links)."""
    (tmp_path / "old.csv").write_text("old\n")
    os.chmod(tmp_path / "old.csv", 0o604)
    old_umask = os.umask(0o027)
    try:
        for name in ("new.csv", "old.csv"):
            code = subprocess.run([sys.executable, "-c", "from rnea_cli.cli import run; run()", "torques",
                                   str(ROBOTS / "planar2.urdf"), str(ROBOTS / "planar2_traj.csv"), "-o",
                                   str(tmp_path / name), "-q"], capture_output=True, text=True)
            assert code.returncode == 0, code.stderr
    finally:
        os.umask(old_umask)
    assert (tmp_path / "old.csv").read_text() == (tmp_path / "new.csv").read_text()
    assert (tmp_path / "new.csv").read_text().startswith("time,tau_")
    assert sorted(os.listdir(tmp_path)) == ["new.csv", "old.csv"]
    assert (tmp_path / "new.csv").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "old.csv").stat().st_mode & 0o777 == 0o604
