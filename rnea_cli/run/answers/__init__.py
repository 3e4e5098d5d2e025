"""Answers along a whole trajectory: payload capacity, feasible speed, measured against model."""
