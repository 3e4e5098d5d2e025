"""Identification of measured runs, start to end: each run opened and streamed into the normal
equations, the estimate, and the validation on runs not fitted (what `rnea identify` prints and
writes back)."""

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ....errors import RneaError, TrajectoryError
from ..compare import current_factors, measured_torque
from .estimate import estimate, ols
from .normal import NormalEquations
from .parameters import base_parameters

LARGEST = {"effort": "1e150", "q, qd or qdd": "1e30"}  # beyond these the regressor's squares, summed, are no doubles


@dataclass(frozen=True)
class Identified:
    """What `identify_runs` found: the model, its BaseParameters, the NormalEquations of the runs
    fitted, the Estimate, and per run validated {trajectory, samples, rms_before, rms_after}
    (lists per movable joint, over every sample)."""

    model: object
    base: object
    normal: object
    fit: object
    validation: list = field(default_factory=list)


def identify_runs(robot, trajectories, options=None, *, friction=True, offset=False, armature=False, links=None,
                  min_speed=None, prior_weight=None, least_squares=False, validate=(), effort_is="torque",
                  actuators=None, threads=1, opener=None):
    """Identify a robot (a path or a Model) from measured runs (paths; effort_<joint> columns, a
    bag's JointState effort, a preset's torque or current) read with `options` (a RunOptions).
    friction/offset/armature: the terms per joint; links: the names of the only links identified
    (`base_parameters`); min_speed: `NormalEquations`; prior_weight: `estimate`; least_squares:
    `ols` instead; validate: runs not fitted, their residuals before and after; effort_is
    'current': the effort times the drives' torque constant, gear ratio and efficiency of
    `actuators`; threads: the sums'. opener(path, options, before_reading): a Run, for a caller
    that shows it as it goes (default `session.open_run`). Returns an Identified."""
    from ...session import RunOptions, open_run

    options = RunOptions() if options is None else options
    if effort_is not in ("torque", "current"):
        raise RneaError("effort_is", None, f"{effort_is!r} is neither 'torque' nor 'current'")
    if options.floating:
        raise RneaError(getattr(robot, "source", robot), None, _FLOATING)
    options = dataclasses.replace(options, effort=True, actuators=actuators if effort_is == "current" else None)
    opener = opener or (lambda path, opts, before_reading: open_run(robot, path, opts, before_reading=before_reading))
    found = {}

    def read(path, normal=None, slowest=min_speed):
        """The samples of one run added to the normal equations (made on the first run)."""
        factors = {}

        def currents(coords, drives):
            factors["current"] = current_factors(coords, drives, actuators)

        run = opener(path, options, currents if effort_is == "current" else None)
        if run.pipeline.floating:
            raise RneaError(getattr(robot, "source", robot), None, _FLOATING)
        apart = [name for name in run.coords.followers if f"effort_{name}" in run.traj.ignored]
        if apart:  # the leader's effort then its own alone, or the pair's? Not guessed: a bad model either way
            where = f"joint {apart[0]}" if run.traj.unit == "message" else f"column effort_{apart[0]}"
            raise TrajectoryError(run.traj.label, where,
                                  "the effort of a mimic follower, measured apart: identify with --no-mimic to "
                                  "fit each joint's own effort (the follower's q columns too), or leave the "
                                  "follower's columns out to fit its leader's as the pair's")
        if "base" not in found:  # mimic followers (as the run's coordinates have them) in their leaders' efforts
            found["model"], found["base"] = run.model, base_parameters(
                run.model, gravity=options.gravity, friction=friction, offset=offset, armature=armature, links=links,
                mimic=run.coords)
        if normal is None:
            normal = NormalEquations(found["base"], gravity=options.gravity, min_speed=slowest, threads=threads)
        try:
            _add_blocks(run, normal, factors.get("current"))
        except BaseException:
            normal.close()  # its summing thread, on the error that ends the run
            raise
        return normal

    normal = None
    for path in trajectories:
        normal = read(path, normal)
    if normal is None:
        raise RneaError("trajectories", None, "no run to identify from")
    normal.finish()
    base = found["base"]
    fit = ols(normal, base) if least_squares else estimate(normal, base, prior_weight=prior_weight)
    checks = []
    for path in validate:
        held = read(path, slowest=0.0).finish()  # every sample: what `rnea compare` says of the run
        rows = np.maximum(held.rows, 1)
        before, after = (np.sqrt(np.maximum(held.rss(theta), 0.0) / rows) for theta in (base.layout.parameters(),
                                                                                          fit.theta))
        checks.append({"trajectory": path, "samples": held.count, "rms_before": before.tolist(),
                       "rms_after": after.tolist()})
    return Identified(found["model"], base, normal, fit, checks)


def _add_blocks(run, normal, factors):
    """Each block of the run into the normal equations: its motion and measured effort (times the
    drives' factors for a current), both checked to be finite doubles whose squares sum."""
    for block in run.blocks(dynamics=False):
        measured = measured_torque(block.chunk, factors, run.traj.label)
        for what, xs in (("effort", [measured]), ("q, qd or qdd", block.motion)):
            largest = float(LARGEST[what])
            if all(x.max(initial=0.0) <= largest and x.min(initial=0.0) >= -largest for x in xs):
                continue  # (a nan fails both: it is found below)
            within = np.logical_and.reduce([(np.abs(x) <= largest).all(axis=1) for x in xs])
            raise TrajectoryError(run.traj.label, run.traj.where(block.chunk.start + int(np.argmin(within))),
                                  f"{what} not finite or beyond {LARGEST[what]} in size")
        normal.add(*block.motion, measured)


_FLOATING = "a floating base is not identified (its base wrench is not measured): fix the base"
