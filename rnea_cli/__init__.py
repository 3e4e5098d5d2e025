"""rnea: robot inverse dynamics from a URDF, as a library and a command-line tool.

The names below are imported on first use, so that `rnea --help` and `import rnea_cli.errors`
need neither numpy nor lxml.
"""

import importlib

from .errors import RneaError, TrajectoryError, URDFError, URDFWarning

_LAZY = {
    "Coordinates": "model", "Joint": "model", "Limits": "model", "Mimic": "model", "Model": "model",
    "Dynamics": "engine", "Workspace": "engine", "inverse_dynamics": "engine", "rnea": "engine",
    "rnea_reference": "reference", "load_urdf": "urdf", "load_robot": "robot",
    "Pipeline": "pipeline", "open_source": "sources", "open_trajectory": "trajectory",
    "torques_frame": "dataframes", "check_frame": "dataframes", "CheckSummary": "dataframes",
    "regressor": "inertial", "base_parameters": "identify",
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
