"""Trajectories: one reader per format behind one interface (sources/), streaming chunks; what a
source does not give, derived (derive.py) or fitted (smoothing.py). Imports model and dynamics."""
