"""rnea: robot inverse dynamics from a URDF, as a library and a command-line tool.

The names below are imported on first use, so that `rnea --help` and `import rnea_cli.errors`
need neither numpy nor lxml.
"""

import importlib

from .errors import RneaError, TrajectoryError, URDFError, URDFWarning

_LAZY = {
    "Coordinates": "model.tree", "Joint": "model.tree", "Limits": "model.tree", "Mimic": "model.tree",
    "Model": "model.tree", "Dynamics": "dynamics.engine", "Workspace": "dynamics.workspace",
    "inverse_dynamics": "dynamics.engine", "rnea": "dynamics.engine", "rnea_reference": "dynamics.reference",
    "load_urdf": "model.urdf", "load_robot": "model.robot", "Pipeline": "run.pipeline",
    "open_source": "trajectory.sources", "open_trajectory": "trajectory.open", "torques_frame": "run.dataframes",
    "check_frame": "run.dataframes", "CheckSummary": "run.dataframes", "regressor": "dynamics.inertial",
    "base_parameters": "run.answers.identify", "open_run": "run.session", "RunOptions": "run.session",
    "Models": "run.session",
}

__all__ = sorted(["RneaError", "TrajectoryError", "URDFError", "URDFWarning", *_LAZY])
__version__ = "0.2.0"


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
