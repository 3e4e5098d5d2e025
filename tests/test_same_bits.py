"""A sample's results are the same bits however the work is cut and on whatever CPU it runs.

Three layers, so that the property is seen on any machine, not only on one whose kernels happen
to agree: the code is read for operations whose rounding depends on the CPU or on the length of
the call (BLAS, SIMD reductions, libm); a sample is computed alone and inside chunks of every
length around it; and the same computation runs in child processes under each BLAS kernel and
each numpy SIMD level this CPU can run, and on three 64-bit ARM CPUs under qemu (an ARM Python
with the same packages, made by `make cpus`: tests/cpus/aarch64.sh), which must all print the
same bytes."""

import ast
import json
import os
import pathlib
import platform
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, corpus_params, corpus_robot, need_corpus, under_ci
from motion import random_base, random_motion
from random_urdf import random_urdf
from rnea_cli.dynamics import engine
from rnea_cli import load_urdf
from rnea_cli.dynamics.kinematics import body_placements

# The modules whose arithmetic reaches the torques, the joint and base wrenches and the placements,
# and what the trajectory's q, qd, qdd are made of (derived rates, a floating base, --smooth)
NUMERIC = ("dynamics/engine.py", "dynamics/workspace.py", "dynamics/spatial.py", "dynamics/kinematics.py",
           "trajectory/derive.py", "trajectory/smoothing.py")
# numpy calls whose result can differ by CPU (a BLAS kernel, a SIMD or libm transcendental) or by
# the length of the call (a pairwise or vectorised reduction)
VARYING = {"matmul", "dot", "vdot", "inner", "einsum", "tensordot", "linalg", "sum", "prod", "mean", "cumsum",
           "tan", "sin", "cos", "exp", "log", "arctan2", "hypot", "power", "reduce"}


OURS = {("spatial", "dot"), ("math", "prod")}  # a product summed in order; an integer product of a shape


def _varying(tree):
    """The places in a module's syntax whose rounding may depend on the CPU or the call's length."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            found.append(f"line {node.lineno}: @")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and not (
                isinstance(node.right, ast.Constant) and isinstance(node.right.value, int)):
            found.append(f"line {node.lineno}: ** (pow is libm's)")
        if isinstance(node, ast.Attribute) and node.attr in VARYING - {"linalg"} and not (
                isinstance(node.value, ast.Name) and (node.value.id, node.attr) in OURS):
            found.append(f"line {node.lineno}: .{node.attr}")  # np.sum, x.sum(), w.dot(x), math.sin alike
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and \
                node.value.attr == "linalg" and node.attr != "LinAlgError":  # LAPACK, by way of BLAS
            found.append(f"line {node.lineno}: linalg.{node.attr}")
        if isinstance(node, ast.ImportFrom) and node.module in ("numpy", "math", "numpy.linalg"):
            found += [f"line {node.lineno}: from {node.module} import {a.name}" for a in node.names
                      if a.name in VARYING or node.module == "numpy.linalg"]
    return found


@pytest.mark.parametrize("module", NUMERIC)
def test_the_numeric_modules_have_no_operation_whose_rounding_depends_on_the_cpu(module):
    """No `@`, no numpy product, reduction or transcendental, no pow: every operation on samples
    is an element-wise +, -, *, /, sqrt, rint or floor, correctly rounded element by element."""
    assert _varying(ast.parse((ROOT / "rnea_cli" / module).read_text())) == []


def test_the_check_sees_each_kind_of_call():
    text = ("import numpy as np\nimport math\nfrom numpy import sin\nx.sum()\nw.dot(x)\nnp.cumsum(x)\n"
            "y = x ** 0.5\nz = x ** 2\nmath.cos(1.0)\nA @ B\nnp.linalg.solve(A, B)\nnp.linalg.LinAlgError\n")
    found = _varying(ast.parse(text))
    assert len(found) == 8, found  # all but x ** 2 and LinAlgError


LENGTHS = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513,
           1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096]


def _same_bits_in_every_chunk(model, motion, base=None):
    """Each length of LENGTHS: the first samples computed as one call (and the engine's chunks of
    a longer call cut them anywhere) give the bits of each sample computed alone."""
    N = len(motion[0])
    pick = [0, 1, N // 2, N - 2, N - 1]
    alone = [engine.inverse_dynamics(model, *(x[k] for x in motion), wrenches=True,
                                     base=None if base is None else [b[k] for b in base]) for k in pick]
    for length in LENGTHS:
        for start in {0, N - length, (N - length) // 3}:
            rows = slice(start, start + length)
            got = engine.inverse_dynamics(model, *(x[rows] for x in motion), wrenches=True, threads=2,
                                          base=None if base is None else [b[rows] for b in base])
            for k, expected in zip(pick, alone):
                if start <= k < start + length:
                    for a, b in zip(got, expected):
                        if b is not None:
                            np.testing.assert_array_equal(a[k - start], b, err_msg=f"sample {k} in {rows}")


@pytest.mark.parametrize("seed", [11, 12])
def test_a_sample_is_the_same_bits_alone_and_in_any_chunk_random_trees(seed, monkeypatch):
    monkeypatch.setattr(engine, "CHUNK", 700)  # a call of 4096 samples is then cut into six chunks
    monkeypatch.setattr(engine, "THREADED_CHUNK", 1000)
    model = load_urdf(random_urdf(seed, n_links=9)[0])
    rng = np.random.default_rng(seed)
    _same_bits_in_every_chunk(model, random_motion(rng, 4096, model.n))
    _same_bits_in_every_chunk(model, random_motion(rng, 4096, model.n), base=list(random_base(rng, 4096)))


@pytest.mark.parametrize("path", corpus_params(["iiwa14", "simple_humanoid", "anymal_c", "pr2"]))
def test_a_sample_is_the_same_bits_alone_and_in_any_chunk_shared_robots(path, monkeypatch):
    monkeypatch.setattr(engine, "CHUNK", 1500)
    model = load_urdf(str(need_corpus(path)))
    rng = np.random.default_rng(3)
    _same_bits_in_every_chunk(model, random_motion(rng, 4096, model.n))


def test_placements_are_the_same_bits_in_any_chunk(monkeypatch):
    model = load_urdf(random_urdf(13, n_links=8)[0])
    rng = np.random.default_rng(13)
    q = random_motion(rng, 300, model.n)[0]
    base = random_base(rng, 300)[0]
    whole = body_placements(model, q, base)
    monkeypatch.setattr("rnea_cli.dynamics.kinematics.CHUNK", 7)
    for b, (R, p) in body_placements(model, q, base).items():
        np.testing.assert_array_equal(R, whole[b][0])
        np.testing.assert_array_equal(p, whole[b][1])
    for k in (0, 150, 299):
        for b, (R, p) in body_placements(model, q[k:k + 1], base[k:k + 1]).items():
            np.testing.assert_array_equal(R[0], whole[b][0][k])
            np.testing.assert_array_equal(p[0], whole[b][1][k])


# -- the same bytes under every kernel this CPU runs ------------------------------------------------

# What a child script prints last, to be compared across the variants: one JSON object with "blas"
# (the OpenBLAS kernels it loaded) and "simd" (numpy's dispatched levels on) beside what it computed.
REPORT = """
blas = sorted({i.get("architecture", "?") for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"})
from numpy._core import _multiarray_umath as umath
simd = [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)]
"""


CHILD = r"""
import hashlib, json, sys
import numpy as np, threadpoolctl
sys.path.insert(0, sys.argv[1])
from motion import random_base, random_motion
from random_urdf import random_urdf
from rnea_cli import load_urdf
from rnea_cli.dynamics import engine, spatial
from rnea_cli.dynamics.kinematics import body_placements

digest = hashlib.sha256()
rng = np.random.default_rng(7)
models = [load_urdf(random_urdf(seed, n_links=8)[0]) for seed in (21, 22)] + [load_urdf(p) for p in sys.argv[2:]]
for model in models:
    for N in (1, 5, 333, 7000):
        motion = random_motion(rng, N, model.n)
        base = list(random_base(rng, N))
        for result in (engine.inverse_dynamics(model, *motion, wrenches=True, threads=2),
                       engine.inverse_dynamics(model, *motion, base=base, wrenches=True)):
            for x in result:
                if x is not None:
                    digest.update(np.ascontiguousarray(x).tobytes())
        for R, p in body_placements(model, motion[0], base[0]).values():
            digest.update(R.tobytes() + p.tobytes())
from rnea_cli.trajectory.smoothing import fit
t = np.cumsum(rng.uniform(0.001, 0.003, 3000))
for x in fit(t, rng.normal(size=(3000, 4)), 0.02, np.arange(20, 2980)):  # --smooth's cubic fits
    digest.update(np.ascontiguousarray(x).tobytes())
q = np.concatenate([rng.uniform(-4, 4, 5000), rng.uniform(-1e6, 1e6, 5000)])
digest.update(b"".join(x.tobytes() for x in spatial.cos_sin(q, *np.empty((2, len(q))), np.empty((5, len(q))))))
""" + REPORT + """print(json.dumps({"blas": blas, "simd": simd, "digest": digest.hexdigest()}))
"""


def _cpu_flags():
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    return set(next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), []))


# Another CPU: a 64-bit ARM Python with .venv's packages (tests/cpus/aarch64.sh, by `make cpus`),
# run by qemu's user-mode emulator as each of these CPUs. Their numpy and OpenBLAS pick other
# kernels: ARMv8.0 NEON alone (numpy's baseline, OpenBLAS cortexa57: a Jetson Nano's), ARMv8.2
# with the half-precision and dot-product extensions (neoversen1: Graviton 2, Ampere), and qemu's
# newest, with SVE and SME (armv9sme).
AARCH64 = ROOT / ".cpus" / "aarch64"
ARM_CPUS = ("cortex-a57", "neoverse-n1", "max")


def arm_ready():
    return (AARCH64 / ".ready").is_file() and platform.machine() not in ("aarch64", "arm64")


def _command(extra):
    """The child's interpreter and the variables it needs: this Python, or under `QEMU_CPU` the
    ARM one (its paths below AARCH64/root, the packages in AARCH64/site, rnea_cli from ROOT)."""
    if "QEMU_CPU" not in extra:
        return [sys.executable], {}
    return (["qemu-aarch64-static", "-L", str(AARCH64 / "root"), str((AARCH64 / "python").resolve())],
            {"PYTHONPATH": os.pathsep.join([str(AARCH64 / "site"), str(ROOT)])})


def _variants():
    """Environments for the children: the machine's own, then each OpenBLAS kernel this CPU can
    run (x86-64: SSE3 Prescott without FMA, AVX Sandybridge, AVX2 Haswell, AVX-512 SkylakeX), and
    numpy without its dispatched SIMD levels (baseline only, then without AVX-512, then without
    each AVX-512 level above the next one down: an Ice Lake's and a Skylake-X's numpy), then the
    ARM CPUs (ARM_CPUS) where `make cpus` made their Python. These variables are set here in the
    children only, to see other CPUs' kernels on this one; the suite itself runs with the
    machine's settings."""
    from numpy._core import _multiarray_umath as umath

    variants = [{}]
    if platform.machine() in ("x86_64", "AMD64"):
        flags = _cpu_flags()
        for core, needs in (("Prescott", "sse3"), ("Sandybridge", "avx"), ("Haswell", "avx2"),
                            ("SkylakeX", "avx512f")):
            if needs in flags or (needs == "sse3" and "pni" in flags):
                variants.append({"OPENBLAS_CORETYPE": core})
    dispatch = [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)]
    if dispatch:
        variants.append({"NPY_DISABLE_CPU_FEATURES": " ".join(dispatch)})
        wide = [f for f in dispatch if "512" in f or f == "X86_V4"]
        if wide and wide != dispatch:
            variants.append({"NPY_DISABLE_CPU_FEATURES": " ".join(wide)})
        for k in range(1, len(wide)):  # each older AVX-512 CPU's numpy: the levels above its own off
            variants.append({"NPY_DISABLE_CPU_FEATURES": " ".join(wide[k:])})
    if arm_ready():
        variants += [{"QEMU_CPU": cpu} for cpu in ARM_CPUS]
    return variants


def in_every_variant(child, args, tmp_path, timeout=600):
    """[(variables, the JSON object the child printed last)] of the child script run under each of
    `_variants()`, with sys.argv[1] the tests folder; checked to have run more than one kernel or
    SIMD level (where the CPU has more than one), so that agreeing digests mean something."""
    script = tmp_path / "child.py"
    script.write_text(child)
    results = []
    for extra in _variants():
        python, more = _command(extra)
        done = subprocess.run([*python, str(script), str(ROOT / "tests"), *map(str, args)],
                              env=dict(os.environ, **extra, **more), capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, (extra, done.stderr[-2000:])
        results.append((extra, json.loads(done.stdout.splitlines()[-1])))
    seen = {json.dumps([r["blas"], r["simd"]]) for _, r in results}
    assert len(seen) >= min(2, len(results)), f"the variants ran no other kernel: {results}"
    return results


def test_another_cpu_is_there_to_compare_with():
    """The ARM variants run only where `make cpus` made their Python (as root, from Debian's
    packages): without it the children compare x86 kernels alone, which this says (a failure
    under CI=true: .ci/run makes it, and fails where it cannot). Its packages and Python are
    .venv's versions, so that only the CPU differs."""
    if platform.machine() in ("aarch64", "arm64"):
        pytest.skip("this machine is an ARM one: its own kernels are the other CPU's")
    if not arm_ready():
        message = f"no ARM Python at {AARCH64} (make cpus): the same bits were compared on this CPU's kernels only"
        if under_ci():
            pytest.fail(message)
        pytest.skip(message)
    labels, here = set(), json.loads(subprocess.run([sys.executable, "-c", VERSIONS], capture_output=True, text=True,
                                                    check=True).stdout)
    for cpu in ARM_CPUS:
        python, more = _command({"QEMU_CPU": cpu})
        done = subprocess.run([*python, "-c", VERSIONS + KERNELS], env=dict(os.environ, QEMU_CPU=cpu, **more),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (cpu, done.stderr[-2000:])
        got = json.loads(done.stdout.splitlines()[-1])
        assert got["versions"] == here["versions"], f"the ARM Python's are not .venv's versions (make cpus): {got}"
        labels.add(json.dumps([got["blas"], got["simd"]]))
    assert len(labels) == len(ARM_CPUS), f"the ARM CPUs ran the same kernels: {labels}"


# Python's major.minor and the versions of the packages whose code makes or writes the numbers
VERSIONS = """
import importlib.metadata, json, sys
versions = {name: importlib.metadata.version(name) for name in
            ("numpy", "scipy", "polars", "pyarrow", "lxml", "click", "pyyaml", "rosbags")}
versions["python"] = "%d.%d" % sys.version_info[:2]
print(json.dumps({"versions": versions}))
"""
KERNELS = "import threadpoolctl\n" + REPORT + "print(json.dumps({'blas': blas, 'simd': simd, 'versions': versions}))\n"


def test_the_same_bytes_under_every_blas_kernel_and_simd_level_this_cpu_runs(tmp_path):
    robots = [corpus_robot(name) for name in ("iiwa14", "simple_humanoid")]
    results = in_every_variant(CHILD, robots, tmp_path)
    first = results[0][1]["digest"]
    differ = [(extra, r["blas"], r["simd"]) for extra, r in results if r["digest"] != first]
    assert not differ, f"other bits than the machine's ({results[0][1]['blas']}, {results[0][1]['simd']}): {differ}"


# The commands themselves, files in and files out: what a user on another machine diffs
COMMANDS = r"""
import hashlib, json, pathlib, sys, tempfile
import numpy as np, threadpoolctl
from click.testing import CliRunner
from rnea_cli.cli import main
robots = pathlib.Path(sys.argv[2])
arm, traj, measured, held = (str(robots / f) for f in ("arm7.urdf", "arm7_traj.csv", "arm7_real_excite.csv",
                                                       "arm7_real_traj.csv"))
out = {}
with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    for name, args, files, code in (
            ("torques", ["torques", arm, traj, "--split", "--friction"], [], 0),
            ("torques derived", ["torques", arm, measured, "--smooth", "0.2"], [], 0),
            ("torques parquet", ["torques", arm, traj, "-o", tmp / "tau.parquet"], ["tau.parquet"], 0),
            ("check", ["check", arm, traj, "--margin", "0.5", "--format", "json"], [], 1),  # a limit exceeded
            ("identify", ["identify", arm, measured, "--smooth", "0.2", "--validate", held, "--format", "json",
                          "-o", tmp / "id.urdf"], ["id.urdf"], 0),
            ("identify ols", ["identify", arm, measured, "--smooth", "0.2", "--ols", "--format", "json"], [], 0),
            ("excite", ["excite", arm, "--duration", "4", "--rate", "25", "--steps", "4", "-o", tmp / "x.csv"],
             ["x.csv"], 0)):
        result = CliRunner().invoke(main, [str(a) for a in args + ["-q"]], catch_exceptions=False)
        assert result.exit_code == code, (name, result.exit_code, result.stderr)
        h = hashlib.sha256(result.stdout_bytes)
        for f in files:
            h.update((tmp / f).read_bytes())
        out[name] = h.hexdigest()
""" + REPORT + """print(json.dumps({"blas": blas, "simd": simd, "digests": out}))
"""


def test_the_commands_write_the_same_bytes_under_every_kernel_and_on_arm(tmp_path):
    """`rnea torques` (CSV with --split and --friction, from derived rates, Parquet), `check`'s JSON,
    `identify`'s report and URDF (and --ols), `excite`'s CSV: the bytes a user would diff, in
    child processes under each kernel of this CPU and on the ARM CPUs."""
    results = in_every_variant(COMMANDS, [ROOT / "robots"], tmp_path, timeout=900)
    first = results[0][1]["digests"]
    differ = [(extra, r["blas"], name) for extra, r in results for name, d in r["digests"].items() if d != first[name]]
    assert not differ, f"other bytes than the machine's ({results[0][1]['blas']}): {differ}"


@pytest.mark.parametrize("path", corpus_params(["ur5"]))
def test_a_batch_of_files_gives_the_bytes_of_one_at_a_time_runs(path, tmp_path):
    """The issue's case, smaller: UR5 files of 40,000 rows (two CSV blocks, several engine chunks,
    the last ones short), each run alone and then all in one --output-dir run, 1 and 2 workers."""
    import polars as pl

    from conftest import run

    robot = need_corpus(path)
    names = load_urdf(str(robot)).joint_names
    rng = np.random.default_rng(8)
    inputs = []
    for k, rows in enumerate((40_000, 39_999, 6_145)):
        t = np.arange(rows) * 1e-3
        columns = {"time": t}
        for j, name in enumerate(names):
            w, phase = rng.uniform(0.5, 3.0), rng.uniform(0, 6)
            columns[f"q_{name}"] = np.sin(w * t + phase)
            columns[f"qd_{name}"] = w * np.cos(w * t + phase)
            columns[f"qdd_{name}"] = -w * w * np.sin(w * t + phase)
        inputs.append(tmp_path / f"run{k}.csv")
        pl.DataFrame(columns).write_csv(inputs[-1])
    alone = {p.name: run("torques", robot, p, "-q").stdout for p in inputs}
    for jobs in ("1", "2"):
        result = run("torques", robot, *inputs, "--output-dir", tmp_path / f"out{jobs}", "--jobs", jobs, "-q")
        assert result.exit_code == 0, result.stderr
        for name, text in alone.items():
            assert (tmp_path / f"out{jobs}" / name).read_text() == text, (jobs, name)


def test_an_angle_beyond_the_exact_reduction_is_refused(tmp_path):
    """Beyond spatial.MAX_ANGLE the engine's cos and sin are not (at 1e17 rad, |sin| > 1): the
    library raises, the CLI names the line and the joint, exit 2."""
    from conftest import run
    from rnea_cli.dynamics import spatial

    model = load_urdf(str(ROOT / "robots" / "planar2.urdf"))
    q = np.zeros((3, model.n))
    q[1, 1] = 1e17
    with pytest.raises(ValueError, match="million turns"):
        engine.rnea(model, q, q * 0, q * 0)
    engine.rnea(model, q * 0 + spatial.MAX_ANGLE, q * 0, q * 0)  # at the bound: computed
    names = model.joint_names
    path = tmp_path / "t.csv"
    path.write_text("time," + ",".join(f"{p}_{j}" for p in ("q", "qd", "qdd") for j in names) + "\n" +
                    "".join(f"{k * 0.01},0,{1e17 if k == 1 else 0},0,0,0,0\n" for k in range(3)))
    result = run("torques", ROOT / "robots" / "planar2.urdf", path)
    assert result.exit_code == 2 and "line 3" in result.stderr and names[1] in result.stderr, result.stderr
