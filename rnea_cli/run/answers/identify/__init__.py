"""Identification of inertial parameters and joint friction from measured joint efforts.

The effort of a fixed-base robot is linear in its parameters: effort = W(q, qd, qdd) theta, with
W the joint-torque regressor (`inertial.regressor`, 10 columns per body) followed by friction
columns per movable joint: viscous qd_j and Coulomb sign(qd_j) (the URDF's <dynamics damping
friction>, as `rnea torques --friction` adds them), and optionally a constant offset (1) and an
armature (qdd_j). Not every combination of theta shows in the efforts: `base_parameters` finds the
identifiable ones, beta = theta[independent] + K theta[dependent] (parameters.py).

Efforts stream in chunks into per-joint normal equations (`NormalEquations`, normal.py); `ols`
gives the noise-weighted least-squares base parameters with standard errors, `estimate` the
physically consistent parameters of every body (pseudo-inertia positive definite) with a prior
around the URDF's values (estimate.py); `links_found` what was found of each link named, with
standard errors (links.py). `identify_runs` does it all for measured runs, as `rnea identify`
(runs.py).
"""

from .estimate import (Estimate, consistent, estimate, from_pseudo_inertia, made_consistent, ols, placeholders,
                       prior_scale, pseudo_inertia, weighted)
from .links import INERTIA_ENTRIES, LinkFound, covariance, links_found, mass_properties
from .normal import MIN_SPEED, NormalEquations
from .runs import Identified, identify_runs
from .parameters import (FRICTION, PRIOR_WEIGHT, BaseParameters, Block, IdentificationError, Layout, base_parameters,
                         layout, random_motion)

__all__ = ["FRICTION", "INERTIA_ENTRIES", "MIN_SPEED", "PRIOR_WEIGHT", "BaseParameters", "Block", "Estimate",
           "IdentificationError", "Identified", "Layout", "LinkFound", "NormalEquations", "base_parameters",
           "consistent", "covariance", "estimate", "from_pseudo_inertia", "identify_runs", "layout", "links_found",
           "made_consistent", "mass_properties", "ols", "placeholders", "prior_scale", "pseudo_inertia",
           "random_motion", "weighted"]
