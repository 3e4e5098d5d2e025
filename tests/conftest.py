"""Shared test helpers: the URDF corpus in ../shared/urdf (beside the clone), running rnea, writing
and reading trajectories and URDF texts, and checking one-line errors."""

import os
import pathlib
import re

import numpy as np
import pytest
from hypothesis import settings

# No test depends on timing: hypothesis' per-example deadline (200 ms by default) is off everywhere.
settings.register_profile("rnea", deadline=None)
settings.load_profile("rnea")

ROOT = pathlib.Path(__file__).resolve().parents[1]
ROBOTS = ROOT / "robots"
ARM, ARM_CSV, ARM_YAML = (str(ROBOTS / name) for name in ("arm7.urdf", "arm7_traj.csv", "arm7_traj.yaml"))
CORPUS = ROOT.parent / "shared" / "urdf"
CORPUS_FILES = sorted(CORPUS.glob("*.urdf")) if CORPUS.is_dir() else []
CORPUS_ROBOTS = ("anymal_c", "baxter", "cassie", "double_pendulum", "iiwa14", "kinova_j2s6s200", "panda", "pr2",
                 "romeo", "romeo_laas_small", "simple_humanoid", "solo12", "turtlebot3_waffle_pi", "ur5")  # SOURCES.md


def corpus_params(names=None):
    """One pytest param per shared URDF (or per name in names); one 'corpus-missing' param without it."""
    files = [p for p in CORPUS_FILES if names is None or p.stem in names]
    if CORPUS_FILES:
        missing = set(names if names is not None else CORPUS_ROBOTS) - {p.stem for p in files}
        assert not missing, f"robots {sorted(missing)} are not in the corpus at {CORPUS}"
    if files:
        return [pytest.param(p, id=p.stem) for p in files]
    return [pytest.param(None, id="corpus-missing")]


def under_ci():
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def need_corpus(path):
    """The path, or a skip (a failure under CI=true) when the corpus is not beside the clone."""
    if path is None:
        message = f"URDF corpus not found at {CORPUS}"
        if under_ci():
            pytest.fail(message + f" (CI={os.environ['CI']}: it must be there)")
        pytest.skip(message)
    return path


def corpus_robot(name):
    """The path of one shared robot, or need_corpus's skip (a failure under CI=true) without it."""
    path = CORPUS / f"{name}.urdf"
    return need_corpus(path if path.is_file() else None)


def run(*args, input=None):
    """`rnea ARGS` through Click's runner; stdout and stderr apart; exceptions propagate."""
    from click.testing import CliRunner

    from rnea_cli.cli import main

    return CliRunner().invoke(main, [str(a) for a in args], input=input, catch_exceptions=False)


def load(source, **options):
    """load_urdf without its URDFWarnings (for robots with impossible inertias)."""
    import warnings

    from rnea_cli import URDFWarning, load_urdf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        return load_urdf(source, **options)


def write_csv(path, columns):
    """A trajectory CSV from {name: (N,) numbers}, every value in repr form; returns path."""
    names = list(columns)
    N = len(next(iter(columns.values())))
    lines = [",".join(names)] + [",".join(repr(float(columns[c][k])) for c in names) for k in range(N)]
    path.write_text("\n".join(lines) + "\n")
    return path


def joint_columns(names, q, qd, qdd):
    """{q_<joint>: .., qd_<joint>: .., qdd_<joint>: ..} from (N, n) arrays in the order of names."""
    return {f"{prefix}_{name}": x[:, i] for prefix, x in (("q", q), ("qd", qd), ("qdd", qdd))
            for i, name in enumerate(names)}


def columns(text):
    """{name: (N,) floats} of a CSV text."""
    import csv
    import io

    import numpy as np

    rows = list(csv.reader(io.StringIO(text)))
    data = np.array([[float(x) for x in r] for r in rows[1:]])
    return {name: data[:, k] for k, name in enumerate(rows[0])}


def planar_urdf(axis="0 0 1"):
    return f"""<robot name="p"><link name="w"/>
    <link name="b"><inertial><origin xyz="0.1 0.2 0.3" rpy="0.3 0.2 0.1"/><mass value="2"/>
      <inertia ixx="1" ixy="0.1" ixz="0" iyy="2" iyz="0" izz="2.5"/></inertial></link>
    <link name="c"><inertial><origin xyz="0.3 0 0"/><mass value="1"/>
      <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.2"/></inertial></link>
    <joint name="pl" type="planar"><parent link="w"/><child link="b"/><origin xyz="0 0 1" rpy="0.5 0 0"/>
      <axis xyz="{axis}"/></joint>
    <joint name="arm" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 1 0"/>
      <limit effort="1" velocity="1" lower="-1" upper="1"/></joint></robot>"""


LAUNCHER = ("import os, subprocess, sys\nchild = subprocess.Popen(sys.argv[1:], stderr=subprocess.PIPE, text=True)\n"
            "err = child.stderr.read()\n_, status, usage = os.wait4(child.pid, 0)\n"
            "sys.stderr.write(err + '\\nRSS %d\\n' % usage.ru_maxrss)\nsys.exit(os.waitstatus_to_exitcode(status))")


def open_files(pid):
    """{/proc fd path: the file it names} of a process; fds that close meanwhile are left out (a
    process opens and closes files as it goes: one failed readlink must not hide the others)."""
    fd_dir = f"/proc/{pid}/fd"
    try:
        fds = [os.path.join(fd_dir, fd) for fd in os.listdir(fd_dir)]
    except OSError:
        return {}
    found = {}
    for fd in fds:
        try:
            found[fd] = os.readlink(fd)
        except OSError:
            continue
    return found


def run_measured(code, timeout=120):
    """(exit status, stderr, peak RSS MB) of `python -c code`, started by a small launcher: a process
    exec'd straight from this one would be charged this process's RSS (exec keeps the high-water mark)."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", LAUNCHER, sys.executable, "-c", code], capture_output=True,
                          text=True, timeout=timeout)
    err, _, rss = proc.stderr.rpartition("\nRSS ")
    return proc.returncode, err, int(rss) / 1024


def small_blocks(monkeypatch, block_bytes):
    """CSV input read in blocks of about block_bytes (None: the default, arm7_traj.csv in one)."""
    if block_bytes:
        monkeypatch.setattr(__import__("importlib").import_module("rnea_cli.trajectory.sources.csvfile"), "BLOCK_BYTES",
                            block_bytes)


def ok(*args, code=0):
    result = run(*args)
    assert result.exit_code == code, result.stderr
    return result


def stack(out, prefix, joints):
    return np.column_stack([out[f"{prefix}_{j}"] for j in joints])


CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def one_line_error(result, *needles):
    """Exit 2, one line on stderr, no control characters in it, the needles in it."""
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("rnea: error: "), result.stderr
    assert not CONTROL.search(result.stderr), result.stderr
    assert len(result.stderr) <= 1100
    for needle in needles:
        assert needle in result.stderr, result.stderr
    return result.stderr


def child(code):
    """(exit status, stderr, its own peak RSS MB) of code in a fresh interpreter."""
    return run_measured(code)


def cli(*args):
    return f"from rnea_cli.cli import main\nmain({[str(a) for a in args]!r})"


FREE = ["solo12", "anymal_c", "cassie", "simple_humanoid", "romeo", "romeo_laas_small"]  # corpus robots with a free base
WRENCH = ("fx", "fy", "fz", "tx", "ty", "tz")


def torques(*args):
    result = run("torques", *args, "-q")
    assert result.exit_code == 0, result.stderr
    return result.stdout


def read_csv(text):
    """(header, (N, columns) array) of a CSV text."""
    cols = columns(text)
    return list(cols), np.column_stack(list(cols.values()))


def read_traj_csv(path, model):
    header, data = read_csv(pathlib.Path(path).read_text())
    col = {name: k for k, name in enumerate(header)}
    pick = lambda qty: data[:, [col[f"{qty}_{j}"] for j in model.joint_names]]
    return data[:, col["time"]], pick("q"), pick("qd"), pick("qdd")


LINK = '<link name="{0}"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'


def robot(*elements):
    return '<?xml version="1.0"?>\n<robot name="r">\n' + "\n".join(elements) + "\n</robot>\n"


def joint(name, parent, child, kind="revolute", extra='<axis xyz="0 0 1"/>'):
    return f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>{extra}</joint>'


GOOD = [LINK.format("a"), LINK.format("b"), joint("j", "a", "b")]
