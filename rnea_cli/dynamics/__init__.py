"""Dynamics: spatial algebra, the RNEA engine (vectorised over samples) and the textbook RNEA beside
it, placements and wrenches, and the joint-torque regressor. Imports nothing of rnea but errors."""
