"""Outputs: destinations and table writers, text reports, the check formats for CI, pictures, and
the identified URDF. Imports the run and what is below it, never the CLI."""
