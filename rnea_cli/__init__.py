"""rnea: robot inverse dynamics from a URDF, as a library and a command-line tool."""

from .errors import RneaError, TrajectoryError, URDFError, URDFWarning
from .model import Coordinates, Joint, Limits, Mimic, Model
from .rnea import Dynamics, inverse_dynamics, rnea
from .urdf import load_urdf

__all__ = [
    "Coordinates", "Dynamics", "Joint", "Limits", "Mimic", "Model", "RneaError", "TrajectoryError", "URDFError",
    "URDFWarning", "inverse_dynamics", "load_urdf", "rnea",
]
__version__ = "0.1.0"
