"""docs/many-files.md's Ray Data recipe, run against the CLI (by hand: pip install "ray[data]").

    python docs/recipes/check_ray.py
"""

import sys
import tempfile
from pathlib import Path

import polars as pl
import ray

import dataset
from rnea_cli import load_urdf, torques_frame

folder = Path(tempfile.mkdtemp())
expected = dataset.write(folder)
model = load_urdf(dataset.ROBOT)
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
ray.data.read_parquet(str(folder / "traj")).map_batches(lambda table: torques_frame(model, table),
                                                        batch_format="pyarrow").write_parquet(str(folder / "out"))
frame = pl.read_parquet(str(folder / "out" / "*.parquet"))
sys.exit(0 if dataset.same(frame, expected, "Ray Data map_batches") else 1)
