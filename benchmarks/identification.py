"""Identification's benchmarks (make bench, section 6): the regressor per sample against a Python
loop over Pinocchio's computeJointTorqueRegressor, and a whole `rnea identify` of a 1M-row CSV
against that bare loop over the same samples, in one run. UR5 of ../shared/urdf. Alone:
`python benchmarks/identification.py [rows]`."""

import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
UR5 = HERE.parent.parent / "shared" / "urdf" / "ur5.urdf"
RNEA = Path(sys.executable).parent / "rnea"


def _pin(model):
    import pinocchio as pin

    pm = pin.buildModelFromUrdf(str(UR5))
    idx = [pm.joints[pm.getJointId(name)].idx_v for name in model.joint_names]
    return pin, pm, idx


def _motion(model, N, seed=7):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-np.pi, np.pi, (N, model.n)), rng.uniform(-2, 2, (N, model.n)),
            rng.uniform(-10, 10, (N, model.n)))


def _loop(pin, pm, idx, q, qd, qdd):
    """The bare loop a user writes: one computeJointTorqueRegressor per sample."""
    data = pm.createData()
    Q, V, A = (np.zeros(pm.nv) for _ in range(3))
    for k in range(len(q)):
        Q[idx], V[idx], A[idx] = q[k], qd[k], qdd[k]
        pin.computeJointTorqueRegressor(pm, data, Q, V, A)


def regressor(samples=20_000, loop_samples=4_000, repeats=5):
    """µs per sample of the loop and of rnea_cli.regressor, taking turns (best of repeats): ours
    into an array made once and passed as `out` again and again, as the loop's Pinocchio writes
    into its `data` made once (and as identify makes it), and ours into a new array each call
    (`fresh`: the 58 MB of Y's 20,000 samples taken from the system page by page)."""
    from rnea_cli import load_urdf, regressor as ours

    model = load_urdf(str(UR5))
    pin, pm, idx = _pin(model)
    q, qd, qdd = _motion(model, samples)
    out = np.zeros((model.n, 10 * model.n, samples))
    ours(model, q, qd, qdd, out=out)
    loop_t, ours_t, fresh_t = [], [], []
    for _ in range(repeats):
        start = time.perf_counter()
        _loop(pin, pm, idx, q[:loop_samples], qd[:loop_samples], qdd[:loop_samples])
        loop_t.append((time.perf_counter() - start) / loop_samples)
        start = time.perf_counter()
        ours(model, q, qd, qdd, out=out)
        ours_t.append((time.perf_counter() - start) / samples)
        start = time.perf_counter()
        ours(model, q, qd, qdd)
        fresh_t.append((time.perf_counter() - start) / samples)
    return {"robot": "ur5", "loop_us": min(loop_t) * 1e6, "ours_us": min(ours_t) * 1e6,
            "fresh_us": min(fresh_t) * 1e6}


def identify_end_to_end(rows=1_000_000, loop_samples=50_000, repeats=2):
    """Wall time of `rnea identify ur5.urdf run.csv` of `rows` samples (efforts from Pinocchio's
    rnea; the CSV made once) and of the bare regressor loop over the same samples (timed on
    loop_samples, scaled), taking turns, best of repeats each; and the regressor's own ratio in
    the same run, for the two side by side."""
    from rnea_cli import load_urdf
    import polars as pl

    model = load_urdf(str(UR5))
    pin, pm, idx = _pin(model)
    q, qd, qdd = _motion(model, rows, seed=8)
    path = HERE / "data" / f"ur5_identify_{rows}.csv"
    if not path.exists():
        data = pm.createData()
        effort = np.empty_like(q)
        Q, V, A = (np.zeros(pm.nv) for _ in range(3))
        for k in range(rows):
            Q[idx], V[idx], A[idx] = q[k], qd[k], qdd[k]
            effort[k] = pin.rnea(pm, data, Q, V, A)[idx]
        columns = {"time": np.arange(rows) * 1e-3}
        for prefix, x in (("q", q), ("qd", qd), ("qdd", qdd), ("effort", effort)):
            columns.update({f"{prefix}_{j}": x[:, k] for k, j in enumerate(model.joint_names)})
        path.parent.mkdir(exist_ok=True)
        pl.DataFrame(columns).write_csv(path)
    loop_t, ours_t = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        _loop(pin, pm, idx, q[:loop_samples], qd[:loop_samples], qdd[:loop_samples])
        loop_t.append((time.perf_counter() - start) / loop_samples * rows)
        start = time.perf_counter()
        subprocess.run([str(RNEA), "identify", str(UR5), str(path), "-q", "--format", "json"], check=True,
                       stdout=subprocess.DEVNULL)
        ours_t.append(time.perf_counter() - start)
    return {"rows": rows, "loop_s": min(loop_t), "ours_s": min(ours_t), "regressor": regressor()}


IIWA14 = UR5.with_name("iiwa14.urdf")


def identify_memory_file(rows=10_000_000):
    return HERE / "data" / f"iiwa14_identify_{rows}.csv"


def identify_memory(measure, rows=10_000_000, block=250_000):
    """(wall s, peak RSS MB) of `rnea identify iiwa14.urdf` over a CSV of `rows` samples of the 7-DoF
    arm (the issue's 10M in at most 500 MB): measure(cmd) is run.py's run_measured. The CSV (5.5 GB
    for 10M) is written once, block by block, into a temporary file renamed when whole (delete it
    after a change here): random motion, effort from rnea's engine plus viscous and Coulomb friction
    (what is fitted does not matter here, only that the run streams)."""
    from rnea_cli import load_urdf, rnea
    from rnea_cli.outputs.writers import table_writer

    model = load_urdf(str(IIWA14))
    path = identify_memory_file(rows)
    if not path.exists():
        print(f"  writing {path.name} ({rows:,} rows)...", flush=True)
        path.parent.mkdir(exist_ok=True)
        names = ["time"] + [f"{p}_{j}" for p in ("q", "qd", "qdd", "effort") for j in model.joint_names]
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            writer = table_writer(f, "csv", names, names)
            for start in range(0, rows, block):
                q, qd, qdd = _motion(model, min(block, rows - start), seed=start // block)
                effort = rnea(model, q, qd, qdd) + 0.5 * qd + 0.8 * np.sign(qd)
                writer.write(np.column_stack([np.arange(start, start + len(q)) * 1e-3, q, qd, qdd, effort]))
            writer.close()
        tmp.replace(path)
    wall, _, mb = measure([RNEA, "identify", IIWA14, path, "-q", "--format", "json"])
    return {"rows": rows, "wall_s": wall, "peak_mb": mb}


if __name__ == "__main__":  # this section alone: python benchmarks/identification.py [rows]
    result = identify_end_to_end(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
    reg = result["regressor"]
    print(f"rnea identify, {result['rows']} CSV rows: {result['ours_s']:.2f} s; the bare "
          f"computeJointTorqueRegressor loop over them: {result['loop_s']:.2f} s; ratio "
          f"{result['ours_s'] / result['loop_s']:.3f} (target <= 1)")
    print(f"regressor: {reg['ours_us']:.2f} vs the loop's {reg['loop_us']:.2f} us a sample; "
          f"{reg['loop_us'] / reg['ours_us']:.2f}x faster (target >= 3); into a new array each call "
          f"{reg['fresh_us']:.2f} us, {reg['loop_us'] / reg['fresh_us']:.2f}x")
