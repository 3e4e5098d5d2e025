"""The run and its answers, as a library: the pipeline from chunks to torques, actuator terms,
limits and their check, running statistics, DataFrames, and the answers along a whole trajectory
(payload, speed, compare, identification, excitation). Imports trajectory, model and dynamics."""
