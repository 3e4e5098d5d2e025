"""The robot: URDF (or xacro, expanded in a sandbox) to a frozen Model, and the per-joint YAML files
(limits, actuators) read beside it. Imports dynamics (the spatial algebra) and nothing above."""
