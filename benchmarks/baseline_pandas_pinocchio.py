"""The baseline: what users write today to get torques from a URDF and a trajectory CSV.

pandas reads the CSV, Pinocchio computes one sample per `pin.rnea` call in a Python loop, pandas
writes the result (float_format=None: every float in its exact repr). It is the *good* version of
that script: columns are pulled out as numpy arrays once, not row by row with iterrows().

Usage: python baseline_pandas_pinocchio.py ROBOT.urdf TRAJ.csv|TRAJ.parquet OUT.csv|OUT.parquet
TRAJ has columns time, q_<joint>..., qd_<joint>..., qdd_<joint>...; OUT gets time, tau_<joint>...
(Parquet in and out by pandas.read_parquet and DataFrame.to_parquet, through pyarrow.)
"""

import sys

import numpy as np
import pandas as pd
import pinocchio as pin


def main(urdf, trajectory, output):
    model = pin.buildModelFromUrdf(urdf)
    data = model.createData()
    # one coordinate per joint (no continuous joints, which Pinocchio stores as cos, sin),
    # so joint k of model.names[1:] is entry k of q, v and tau
    names = list(model.names)[1:]
    assert model.nq == model.nv == len(names), "this baseline handles one-coordinate joints only"

    df = pd.read_parquet(trajectory) if trajectory.endswith(".parquet") else pd.read_csv(trajectory)
    q = df[[f"q_{name}" for name in names]].to_numpy()
    qd = df[[f"qd_{name}" for name in names]].to_numpy()
    qdd = df[[f"qdd_{name}" for name in names]].to_numpy()

    tau = np.empty_like(q)
    for k in range(len(df)):
        tau[k] = pin.rnea(model, data, q[k], qd[k], qdd[k])

    result = pd.DataFrame(tau, columns=[f"tau_{name}" for name in names])
    result.insert(0, "time", df["time"])
    if output.endswith(".parquet"):
        result.to_parquet(output, index=False)
    else:
        result.to_csv(output, index=False, float_format=None)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
