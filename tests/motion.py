"""Random samples for the tests, without Pinocchio (so that a child process on another CPU, which
has none, can draw them too; oracle.py passes them on)."""

import numpy as np


def random_motion(rng, N, n):
    return rng.uniform(-3, 3, (N, n)), rng.normal(0, 2, (N, n)), rng.normal(0, 5, (N, n))


def random_base(rng, N):
    """Random floating-base states: pose with a unit quaternion (x, y, z, w), twist, dtwist."""
    quat = rng.normal(size=(N, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    return np.column_stack([rng.normal(size=(N, 3)), quat]), rng.normal(size=(N, 6)), rng.normal(size=(N, 6))
