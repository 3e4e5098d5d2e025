"""A small partitioned dataset and the CLI's torques for it, shared by the cluster recipe checks.

Four Parquet files, each a whole trajectory of the bundled arm (q, qd, qdd: a batch that a
framework cuts out of a file may then be computed alone), and `rnea torques` on each file."""

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl

ROBOTS = Path(__file__).resolve().parents[2] / "robots"
ROBOT = ROBOTS / "arm7.urdf"
RNEA = [sys.executable, "-c", "from rnea_cli.cli import run; run()"]


def write(folder, parts=4):
    """The dataset in folder/traj/ and the CLI's torques of its files, rows sorted."""
    base = pl.read_csv(ROBOTS / "arm7_traj.csv")
    (folder / "traj").mkdir(parents=True, exist_ok=True)
    expected = []
    for k in range(parts):
        part = base.with_columns(pl.col("time") + 10.0 * k,
                                 *[pl.col(c) + 0.1 * k for c in base.columns if c.startswith("q_")])
        path = folder / "traj" / f"part{k}.parquet"
        part.write_parquet(path)
        out = subprocess.run([*RNEA, "torques", str(ROBOT), str(path), "-q"], capture_output=True, check=True).stdout
        expected.append(pl.read_csv(io.BytesIO(out)))
    return sorted_rows(pl.concat(expected))


def sorted_rows(frame):
    return frame.sort(frame.columns).to_numpy()


def same(result, expected, what):
    result = sorted_rows(result)
    ok = result.shape == expected.shape and np.array_equal(result, expected)
    print(f"{what}: {len(result)} rows, {'the same doubles as the CLI' if ok else 'DIFFERENT from the CLI'}")
    return ok
