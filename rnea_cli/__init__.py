"""rnea: robot inverse dynamics from a URDF, as a library and a command-line tool."""

from .errors import RneaError, TrajectoryError, URDFError, URDFWarning
from .model import Joint, Limits, Mimic, Model
from .rnea import rnea
from .urdf import load_urdf

__all__ = [
    "Joint", "Limits", "Mimic", "Model", "RneaError", "TrajectoryError", "URDFError", "URDFWarning",
    "load_urdf", "rnea",
]
__version__ = "0.1.0"
