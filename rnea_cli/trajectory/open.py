"""A trajectory ready for the engine: a source (sources/) and what is derived from it (derive.py)."""

from . import derive
from .sources import open_source


def open_trajectory(path, coords, *, fmt=None, degrees=False, dt=None, floating=False, links=(), effort=False,
                    columns=None, preset=None, time_unit=None, topic=None, message=None, publisher=None, static=False,
                    smooth=None, resample=None, workers=1):
    """Open a trajectory (a path, or '-' for standard input) for `coords` (a Model or
    Coordinates), with q, qd and qdd complete; its chunks are read as they are iterated. The
    options are those of `sources.open_source` and `derive.prepare`."""
    traj = open_source(path, coords, fmt=fmt, floating=floating, links=links, effort=effort, columns=columns,
                       preset=preset, time_unit=time_unit, topic=topic, message=message, publisher=publisher,
                       workers=workers)
    return derive.prepare(traj, coords, degrees=degrees, dt=dt, floating=floating, static=static, smooth=smooth,
                          resample=resample)
