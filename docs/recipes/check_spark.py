"""docs/many-files.md's Spark recipe, run against the CLI (by hand: pip install pyspark; Java 17).

    PYSPARK_PYTHON=$(which python) python docs/recipes/check_spark.py
"""

import sys
import tempfile
from pathlib import Path

import polars as pl
from pyspark.sql import SparkSession

import dataset
from rnea_cli import load_urdf, torques_frame

folder = Path(tempfile.mkdtemp())
expected = dataset.write(folder)
model = load_urdf(dataset.ROBOT)
schema = "time double, " + ", ".join(f"tau_{j} double" for j in model.joint_names)
spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
result = spark.read.parquet(str(folder / "traj")).mapInArrow(
    lambda batches: (torques_frame(model, batch) for batch in batches), schema)
frame = pl.from_pandas(result.toPandas())
spark.stop()
sys.exit(0 if dataset.same(frame, expected, "Spark mapInArrow") else 1)
