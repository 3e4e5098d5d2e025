"""Output files keep what they are: a symbolic link stays a link and its target is written (whole,
its new version made beside it); a read-only file is refused, for root too; an existing file keeps its
mode and owner; a hard-linked file is refused; an input is never an output, through a link either."""

import contextlib
import os
import signal
import stat
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROBOTS, run
from rnea_cli.errors import RneaError
from rnea_cli.outputs.destinations import Guard, destination
from rnea_cli.outputs.writers import table_writer
from test_writers import rnea_code

PLANAR, PLANAR_CSV = ROBOTS / "planar2.urdf", ROBOTS / "planar2_traj.csv"
ARM, ARM_MEASURED = ROBOTS / "arm7.urdf", ROBOTS / "arm7_measured.csv"
OLD = b"old output\n"
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

# every command that writes a file, by the output's extension: (arguments before -o, exact bytes or not)
WRITERS = {"csv": (["torques", PLANAR, PLANAR_CSV], True), "json": (["torques", PLANAR, PLANAR_CSV], True),
           "yaml": (["torques", PLANAR, PLANAR_CSV], True), "parquet": (["torques", PLANAR, PLANAR_CSV], True),
           "arrow": (["torques", PLANAR, PLANAR_CSV], True), "wrench.csv": (["wrenches", PLANAR, PLANAR_CSV], True),
           "residual.csv": (["compare", ARM, ARM_MEASURED], True), "html": (["report", PLANAR, PLANAR_CSV], True),
           "png": (["plot", PLANAR, PLANAR_CSV], True), "svg": (["plot", PLANAR, PLANAR_CSV], False),
           "pdf": (["plot", PLANAR, PLANAR_CSV], False)}  # (svg and pdf hold ids that differ from run to run)


@pytest.fixture(params=["unnamed", "temp"])
def run_way(request):
    """`rnea ARGS` through Click's runner, on each way of writing a file: Linux's unnamed file, and
    the hidden temp file (its invocation's Guard told so; a batch's workers get it too)."""
    from click.testing import CliRunner

    from rnea_cli.cli import main
    from rnea_cli.cli.common import Invocation
    from rnea_cli.outputs.destinations import Guard

    def invoke(*args):
        obj = Invocation(guard=Guard(unnamed=request.param == "unnamed"))
        return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False, obj=obj)

    return invoke


def tree(root):
    """{path under root: what is there}: a link's text, a file's bytes and mode, a folder's mode."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            info = os.lstat(path)
            key = os.path.relpath(path, root)
            if stat.S_ISLNK(info.st_mode):
                found[key] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                found[key] = ("folder", stat.S_IMODE(info.st_mode))
            else:
                with open(path, "rb") as f:
                    found[key] = ("file", f.read(), stat.S_IMODE(info.st_mode), info.st_ino)
    return found


def one_line_error(result, *needles):
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("rnea: error: "), result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr


def fresh(tmp_path, ext, out="direct"):
    """The bytes the command writes into a new file."""
    args, _ = WRITERS[ext]
    folder = tmp_path / out
    folder.mkdir(exist_ok=True)
    result = run(*args, "-o", folder / f"x.{ext}", "-q")
    assert result.exit_code == 0, result.stderr
    return (folder / f"x.{ext}").read_bytes()


def relative(tmp):
    (tmp / "data").mkdir()
    (tmp / "data" / "real.csv").write_bytes(OLD)
    os.symlink("data/real.csv", tmp / "out.csv")
    return tmp / "out.csv", tmp / "data" / "real.csv"


def absolute_elsewhere(tmp):
    (tmp / "a").mkdir()
    (tmp / "b").mkdir()
    (tmp / "b" / "real.csv").write_bytes(OLD)
    os.symlink(tmp / "b" / "real.csv", tmp / "a" / "out.csv")
    return tmp / "a" / "out.csv", tmp / "b" / "real.csv"


def chain(tmp):
    """out.csv -> d/l2.csv -> ../e/real.csv: the second link's text is read from its own folder, d."""
    (tmp / "d").mkdir()
    (tmp / "e").mkdir()
    (tmp / "e" / "real.csv").write_bytes(OLD)
    os.symlink("d/l2.csv", tmp / "out.csv")
    os.symlink("../e/real.csv", tmp / "d" / "l2.csv")
    return tmp / "out.csv", tmp / "e" / "real.csv"


def through_a_linked_folder(tmp):
    """out.csv -> deep/../real.csv, deep a link to x/y: its '..' is x, as the kernel reads it, not tmp."""
    (tmp / "x" / "y").mkdir(parents=True)
    (tmp / "x" / "real.csv").write_bytes(OLD)
    os.symlink("x/y", tmp / "deep")
    os.symlink("deep/../real.csv", tmp / "out.csv")
    return tmp / "out.csv", tmp / "x" / "real.csv"


def dangling(tmp):
    (tmp / "new").mkdir()
    os.symlink("new/real.csv", tmp / "out.csv")
    return tmp / "out.csv", tmp / "new" / "real.csv"


@pytest.mark.parametrize("layout", [relative, absolute_elsewhere, chain, through_a_linked_folder, dangling])
def test_a_link_stays_a_link_and_its_target_is_written(tmp_path, run_way, layout):
    expected = fresh(tmp_path, "csv")
    tmp = tmp_path / "run"
    tmp.mkdir()
    output, target = layout(tmp)
    before = tree(tmp)
    result = run_way("torques", PLANAR, PLANAR_CSV, "-o", output, "-q")
    assert result.exit_code == 0, result.stderr
    after = tree(tmp)
    assert target.read_bytes() == expected
    key = os.path.relpath(target, tmp)
    assert {k: v for k, v in after.items() if k != key} == {k: v for k, v in before.items() if k != key}  # links kept
    assert after[key][2] == (before[key][2] if key in before else 0o666 & ~current_umask())


def current_umask():
    umask = os.umask(0)
    os.umask(umask)
    return umask


@pytest.mark.parametrize("ext", list(WRITERS))
def test_every_output_is_written_through_a_link(tmp_path, ext):
    expected = fresh(tmp_path, ext)
    args, exact = WRITERS[ext]
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / f"real.{ext}").write_bytes(OLD)
    os.symlink(f"t/real.{ext}", tmp_path / f"out.{ext}")
    result = run(*args, "-o", tmp_path / f"out.{ext}", "-q")
    assert result.exit_code == 0, result.stderr
    assert os.readlink(tmp_path / f"out.{ext}") == f"t/real.{ext}"
    assert os.listdir(tmp_path / "t") == [f"real.{ext}"]
    written = (tmp_path / "t" / f"real.{ext}").read_bytes()
    assert written == expected if exact else written[:4] == expected[:4] and len(written) > 1000


def test_an_output_dir_writes_through_its_links(tmp_path, run_way):
    """`--output-dir out` where out/a.csv is a link: its target is written, keeping its mode; a
    worker, or this process with --jobs 1, alike."""
    (tmp_path / "in").mkdir()
    for name in ("a.csv", "b.csv"):
        (tmp_path / "in" / name).write_bytes(PLANAR_CSV.read_bytes())
    expected = fresh(tmp_path, "csv")
    for jobs in ("1", "2"):
        out, keep = tmp_path / f"out{jobs}", tmp_path / f"keep{jobs}"
        out.mkdir()
        keep.mkdir()
        (keep / "real_a.csv").write_bytes(OLD)
        os.chmod(keep / "real_a.csv", 0o600)
        os.symlink(f"../keep{jobs}/real_a.csv", out / "a.csv")
        result = run_way("torques", PLANAR, tmp_path / "in" / "a.csv", tmp_path / "in" / "b.csv", "--output-dir",
                         out, "--jobs", jobs, "-q")
        assert result.exit_code == 0, result.stderr
        assert os.readlink(out / "a.csv") == f"../keep{jobs}/real_a.csv"
        assert (keep / "real_a.csv").read_bytes() == expected == (out / "b.csv").read_bytes()
        assert stat.S_IMODE(os.stat(keep / "real_a.csv").st_mode) == 0o600
        assert sorted(os.listdir(out)) == ["a.csv", "b.csv"] and os.listdir(keep) == ["real_a.csv"]


def test_a_link_loop_or_a_link_into_no_folder_is_one_line(tmp_path, run_way):
    os.symlink("b.csv", tmp_path / "a.csv")
    os.symlink("a.csv", tmp_path / "b.csv")
    os.symlink("no/such/folder/x.csv", tmp_path / "nowhere.csv")
    before = tree(tmp_path)
    one_line_error(run_way("torques", PLANAR, PLANAR_CSV, "-o", tmp_path / "a.csv"),
                   "a.csv: cannot write: Too many levels of symbolic links")
    one_line_error(run_way("torques", PLANAR, PLANAR_CSV, "-o", tmp_path / "nowhere.csv"),
                   "nowhere.csv: cannot write: No such file or directory")
    assert tree(tmp_path) == before


@contextlib.contextmanager
def mode(path, bits):
    """path with these permission bits for the block (then writable again, for the clean-up)."""
    os.chmod(path, bits)
    try:
        yield path
    finally:
        os.chmod(path, 0o755)


@pytest.mark.parametrize("ext", ["csv", "parquet", "html"])
def test_a_read_only_output_is_refused_even_for_root(tmp_path, run_way, ext):
    """As the shell's > says 'Permission denied' to its user; and to root too (which may write
    anything) when no one has a write bit: a 0444 file, or a file in, or new to, a 0555 folder."""
    args, _ = WRITERS[ext]
    (tmp_path / f"ro.{ext}").write_bytes(OLD)
    os.chmod(tmp_path / f"ro.{ext}", 0o444)
    os.symlink(f"ro.{ext}", tmp_path / f"link.{ext}")
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / f"rw.{ext}").write_bytes(OLD)
    before = tree(tmp_path)
    one_line_error(run_way(*args, "-o", tmp_path / f"ro.{ext}"), f"ro.{ext}: cannot write: Permission denied")
    one_line_error(run_way(*args, "-o", tmp_path / f"link.{ext}"),
                   f"link.{ext}: cannot write: Permission denied ({os.path.realpath(tmp_path / f'ro.{ext}')} "
                   "is read-only)")
    with mode(tmp_path / "locked", 0o555):
        for name in (f"rw.{ext}", f"new.{ext}"):
            one_line_error(run_way(*args, "-o", tmp_path / "locked" / name),
                           f"{name}: cannot write: Permission denied (its folder")
    assert tree(tmp_path) == before


def test_a_file_with_a_write_bit_is_written_by_root_as_by_its_owner(tmp_path, run_way):
    """What is refused is a file no one may write: one with a write bit is written, keeping its mode."""
    for bits in (0o200, 0o644):
        (tmp_path / "out.csv").write_bytes(OLD)
        os.chmod(tmp_path / "out.csv", bits)
        result = run_way("torques", PLANAR, PLANAR_CSV, "-o", tmp_path / "out.csv", "-q")
        assert result.exit_code == 0, result.stderr
        assert stat.S_IMODE(os.stat(tmp_path / "out.csv").st_mode) == bits
        os.chmod(tmp_path / "out.csv", 0o644)
        assert (tmp_path / "out.csv").read_bytes().startswith(b"time,tau_")


def rnea(*args, way="unnamed", umask=0o022):
    """`rnea ARGS` in a real process with this umask (and, way 'temp', the hidden temp file)."""
    old = os.umask(umask)
    try:
        return subprocess.run([sys.executable, "-c", rnea_code(way), *map(str, args)], capture_output=True, text=True)
    finally:
        os.umask(old)


@pytest.mark.parametrize("way", ["unnamed", "temp"])
@pytest.mark.parametrize("bits", [0o600, 0o640, 0o755, 0o604], ids=lambda bits: f"{bits:04o}")
def test_an_existing_output_keeps_its_mode(tmp_path, way, bits):
    """Whatever the umask (022 would make 0644), directly and through a link; a new file gets the umask's."""
    (tmp_path / "out.csv").write_bytes(OLD)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "real.parquet").write_bytes(OLD)
    os.symlink("t/real.parquet", tmp_path / "link.parquet")
    for name in ("out.csv", "t/real.parquet"):
        os.chmod(tmp_path / name, bits)
    for output, written in (("out.csv", "out.csv"), ("link.parquet", "t/real.parquet"), ("new.csv", "new.csv")):
        done = rnea("torques", PLANAR, PLANAR_CSV, "-o", tmp_path / output, "-q", way=way)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / written).read_bytes() != OLD
        assert stat.S_IMODE(os.stat(tmp_path / written).st_mode) == (0o644 if output == "new.csv" else bits)
    assert os.path.islink(tmp_path / "link.parquet")
    assert sorted(os.listdir(tmp_path)) == ["link.parquet", "new.csv", "out.csv", "t"]
    assert os.listdir(tmp_path / "t") == ["real.parquet"]


@pytest.mark.skipif(not ROOT, reason="only root can own a file for another user (CI runs as root)")
@pytest.mark.parametrize("way", ["unnamed", "temp"])
def test_an_existing_output_keeps_its_owner_and_group(tmp_path, way):
    (tmp_path / "out.csv").write_bytes(OLD)
    os.chown(tmp_path / "out.csv", 4321, 8765)
    os.chmod(tmp_path / "out.csv", 0o2640)  # (set-group-ID too: the change of owner clears it, and it is given back)
    done = rnea("torques", PLANAR, PLANAR_CSV, "-o", tmp_path / "out.csv", "-q", way=way)
    assert done.returncode == 0, done.stderr
    info = os.stat(tmp_path / "out.csv")
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (4321, 8765, 0o2640)
    assert (tmp_path / "out.csv").read_bytes().startswith(b"time,tau_")


def test_a_hard_linked_output_is_refused(tmp_path, run_way):
    """A new file renamed into place would part one name from the others, which would keep the old
    content; writing in place could be cut off half done: refused, both names as they were."""
    (tmp_path / "out.csv").write_bytes(OLD)
    os.link(tmp_path / "out.csv", tmp_path / "other.csv")
    os.symlink("other.csv", tmp_path / "link.csv")
    before = tree(tmp_path)
    for name in ("out.csv", "link.csv"):
        one_line_error(run_way("torques", PLANAR, PLANAR_CSV, "-o", tmp_path / name),
                       f"{name}: cannot write: it has 1 more hard link(s)")
    assert tree(tmp_path) == before and os.stat(tmp_path / "out.csv").st_nlink == 2


def test_an_input_is_not_an_output_through_a_link(tmp_path):
    """-o a link to the trajectory or the robot, for every command that writes a file."""
    (tmp_path / "traj.csv").write_bytes(PLANAR_CSV.read_bytes())
    (tmp_path / "robot.urdf").write_bytes(PLANAR.read_bytes())
    traj, robot = tmp_path / "traj.csv", tmp_path / "robot.urdf"
    os.symlink("traj.csv", tmp_path / "t.csv")
    os.symlink("robot.urdf", tmp_path / "r.html")
    os.symlink(tmp_path / "t.csv", tmp_path / "p.png")  # (a chain)
    before = tree(tmp_path)
    for args in (["torques", robot, traj, "-o", tmp_path / "t.csv"],
                 ["wrenches", robot, traj, "-o", tmp_path / "t.csv"],
                 ["report", robot, traj, "-o", tmp_path / "r.html"], ["plot", robot, traj, "-o", tmp_path / "p.png"]):
        one_line_error(run(*args), "is an input of this run")
    assert tree(tmp_path) == before


def test_an_output_dir_link_to_another_trajectory_of_the_run_is_refused(tmp_path):
    """Each worker reads one trajectory; out/a.csv linked to b.csv, which another one reads, is refused
    before any starts."""
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    for name in ("a.csv", "b.csv"):
        (tmp_path / "in" / name).write_bytes(PLANAR_CSV.read_bytes())
    os.symlink("../in/b.csv", tmp_path / "out" / "a.csv")
    before = tree(tmp_path)
    for jobs in ("1", "2"):
        one_line_error(run("torques", PLANAR, tmp_path / "in" / "a.csv", tmp_path / "in" / "b.csv", "--output-dir",
                           tmp_path / "out", "--jobs", jobs), "a.csv: is an input of this run")
        assert tree(tmp_path) == before


def test_an_output_dir_in_or_under_a_read_only_folder_is_refused(tmp_path):
    """--output-dir a 0555 folder: each output refused (its line on stderr); a folder to make in
    one: refused before any work, nothing made."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_bytes(PLANAR_CSV.read_bytes())
    (tmp_path / "locked").mkdir()
    before = tree(tmp_path)
    with mode(tmp_path / "locked", 0o555):
        result = run("torques", PLANAR, tmp_path / "in" / "a.csv", "--output-dir", tmp_path / "locked", "-q")
        assert result.exit_code == 2 and "a.csv: cannot write: Permission denied (its folder" in result.stderr, \
            result.stderr
        deeper = tmp_path / "locked" / "x" / "y"
        one_line_error(run("torques", PLANAR, tmp_path / "in" / "a.csv", "--output-dir", deeper),
                       "y: cannot make the folder: Permission denied (")
    assert tree(tmp_path) == before


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="needs SIGHUP")
def test_the_temp_way_is_a_hidden_file_beside_the_output_and_the_handlers_are_put_back(tmp_path):
    """Guard(unnamed=False): the file is written into a hidden temp file beside the output, which
    SIGTERM and SIGHUP remove only while it is there: the default handler is put back after, and
    a handler of the program's own is left alone. The unnamed way shows no file meanwhile."""
    def own(signum, frame):
        pass

    before = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGHUP)}
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, own)
    try:
        guard = Guard(unnamed=False)
        with destination(tmp_path / "out.csv", guard) as stream:
            stream.write(b"x\n")
            (tmp,) = os.listdir(tmp_path)
            assert tmp.startswith(".out.csv.") and tmp.endswith(".tmp"), tmp
            assert getattr(signal.getsignal(signal.SIGTERM), "__self__", None) is guard
            assert signal.getsignal(signal.SIGHUP) is own
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL and signal.getsignal(signal.SIGHUP) is own
        assert os.listdir(tmp_path) == ["out.csv"] and (tmp_path / "out.csv").read_bytes() == b"x\n"
        if hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd"):
            with destination(tmp_path / "new.csv", Guard()) as stream:
                stream.write(b"y\n")
                assert os.listdir(tmp_path) == ["out.csv"]
                assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
            assert (tmp_path / "new.csv").read_bytes() == b"y\n"
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def test_each_guard_protects_its_own_inputs_and_the_library_needs_none(tmp_path):
    """A Guard refuses the files it protects (its copy, a batch job's, too), through a link; another
    Guard, or none, does not know them; a library caller writes a table without the CLI."""
    robot, link = tmp_path / "robot.urdf", tmp_path / "link.csv"
    robot.write_bytes(PLANAR.read_bytes())
    os.symlink("robot.urdf", link)
    guard = Guard()
    guard.protect(robot)
    for one in (guard, guard.copy()):
        with pytest.raises(RneaError, match="link.csv: is an input of this run"):
            with destination(link, one):
                pytest.fail("opened")
    Guard().refuse_input(link)
    assert robot.read_bytes() == PLANAR.read_bytes() and sorted(os.listdir(tmp_path)) == ["link.csv", "robot.urdf"]
    import pyarrow.parquet as pq

    block = np.array([[0.1, -2.0], [1e-300, 3.0]])
    with destination(tmp_path / "t.parquet") as stream, \
            table_writer(stream, "parquet", ["a", "b"], [("a",), ("b",)]) as writer:
        writer.write(block)
    table = pq.read_table(tmp_path / "t.parquet")
    assert np.column_stack([table["a"].to_numpy(), table["b"].to_numpy()]).tobytes() == block.tobytes()


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_sigterm_removes_the_temp_files_of_every_guard_writing(tmp_path):
    """Two Guards each writing a temp file (the second's handler hands the signal on to the first's):
    SIGTERM ends the process, as by default, and leaves neither file."""
    code = ("import os, signal, sys\n"
            "from rnea_cli.outputs.destinations import Guard, destination\n"
            "with destination(os.path.join(sys.argv[1], 'a.csv'), Guard(unnamed=False)) as a:\n"
            "    a.write(b'a')\n"
            "    with destination(os.path.join(sys.argv[1], 'b.csv'), Guard(unnamed=False)) as b:\n"
            "        b.write(b'b')\n"
            "        assert len(os.listdir(sys.argv[1])) == 2\n"
            "        os.kill(os.getpid(), signal.SIGTERM)\n"
            "        while True:\n"
            "            signal.pause()\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGTERM, done.stderr
    assert os.listdir(tmp_path) == []
