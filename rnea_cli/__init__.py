"""rnea: robot inverse dynamics from a URDF, as a library and a command-line tool.

The names below are imported on first use, so that `rnea --help` and `import rnea_cli.errors`
need neither numpy nor lxml.
"""

import importlib
import sys
import types

from .errors import RneaError, TrajectoryError, URDFError, URDFWarning

_LAZY = {
    "Coordinates": "model", "Joint": "model", "Limits": "model", "Mimic": "model", "Model": "model",
    "Dynamics": "rnea", "inverse_dynamics": "rnea", "rnea": "rnea", "load_urdf": "urdf",
}

__all__ = [
    "Coordinates", "Dynamics", "Joint", "Limits", "Mimic", "Model", "RneaError", "TrajectoryError", "URDFError",
    "URDFWarning", "inverse_dynamics", "load_urdf", "rnea",
]
__version__ = "0.1.0"


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


class _Package(types.ModuleType):
    """`rnea_cli.rnea` is the function, as `from rnea_cli import rnea` promises: importing the
    submodule of the same name (which lives on in sys.modules["rnea_cli.rnea"]) does not rebind it."""

    def __setattr__(self, name, value):
        if name == "rnea" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
