"""`rnea excite`: an excitation trajectory for identification, written as a trajectory file."""

import click

from .group import main
from .common import make_console, say
from .options import positive, quiet_option, robot_options, table_output


@main.command()
@robot_options
@click.option("--duration", type=float, required=True, callback=positive, metavar="S",
              help="Length of the run (s): whole periods, starting and ending at rest.")
@click.option("--rate", type=float, required=True, callback=positive, metavar="HZ", help="Samples per second.")
@click.option("--harmonics", type=click.IntRange(2, 50), default=5, show_default=True,
              help="Harmonics of the Fourier series per joint.")
@click.option("--period", type=float, callback=positive, metavar="S",
              help="Period of the series (default: the duration); must divide the duration.")
@click.option("--margin", type=float, callback=positive, default=0.9, show_default=True,
              help="Fraction of each position range, velocity, acceleration and effort limit to use.")
@click.option("--limits", "limits_file", metavar="FILE",
              help="YAML per joint overriding or adding limits: lower, upper, velocity, acceleration, effort.")
@click.option("--no-friction", is_flag=True, help="Condition the inertial parameters alone (no friction columns).")
@click.option("--steps", type=click.IntRange(0, 100_000), default=100, show_default=True,
              help="Quasi-Newton steps of the search.")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True, help="Seed of the random start.")
@table_output("the trajectory")
@quiet_option
def excite(duration, rate, harmonics, period, margin, limits_file, no_friction, steps, seed, output, fmt, quiet,
           **options):
    """A periodic excitation for `rnea identify`: a Fourier series per joint, at rest at both ends,
    within the limits times --margin, its coefficients chosen to minimise the condition number of
    the base regressor. Writes time, q_, qd_ and qdd_ columns (exact derivatives)."""
    import numpy as np

    from ..run.answers import excite as ex
    from ..outputs import writers
    from ..errors import RneaError
    from ..model.jointfile import read_joint_file
    from ..run.limits import KEYS, joint_limits
    from ..model.tree import Coordinates
    from .common import destination, invocation, load_model

    console = make_console(quiet=quiet)
    if margin > 1:
        raise click.BadParameter(f"{margin!r} is above 1: an excitation goes no further than the limits",
                                 param_hint="--margin")
    if duration * rate > 50_000_000:
        raise click.BadParameter(f"{duration:g} s at {rate:g} Hz is more than 50M samples", param_hint="--duration")
    period = ex.periods(duration, period, rate, harmonics)
    for path in (options["robot"], limits_file):  # never an output of this run
        invocation().guard.protect(path)
    model = load_model(options, console)
    coords = Coordinates(model)
    if coords.n == 0:
        raise RneaError(model.source, None, "the robot has no movable joint to excite")
    if model.floating:
        raise RneaError(model.source, None, "a floating base is not excited by joint motion alone: excite its "
                                            "joints with the base fixed (without --floating-base)")
    keys = tuple(k for k in KEYS if k != "rms_effort")  # (an RMS is no bound of a sample)
    overrides = read_joint_file(limits_file, model.joint_names, keys, nullable=True, among="the robot's") if limits_file else {}
    for joint, entry in overrides.items():
        value = entry.get("acceleration")
        if value is not None and value <= 0:
            raise RneaError(limits_file, f"{joint}.acceleration", f"must be positive, got {value!r}")
    limits, notes = joint_limits(model, overrides, limits_file)
    acceleration = {j.name: lim.acceleration for j, lim in zip(model.joints, limits) if lim.acceleration}
    for text in notes:
        say(console, f"note: {text}")
    problem = ex.Problem(coords, period, harmonics, ex.bounds(coords, limits, acceleration, margin),
                         friction=not no_friction)
    result = ex.excite(problem, steps=steps, seed=seed)
    (t, q, qd, qdd), result = ex.samples(result, problem, duration, rate)
    names = ["time"] + [f"{p}_{j}" for p in ("q", "qd", "qdd") for j in coords.joint_names]
    keys = [("time",)] + [(p, j) for p in ("q", "qd", "qdd") for j in coords.joint_names]
    with destination(output) as stream, \
            writers.table_writer(stream, writers.output_format(output, fmt), names, keys) as writer:
        writer.write(np.column_stack([t, q, qd, qdd]))
    say(console, f"excitation: {len(t)} samples over {duration:g} s ({duration / period:g} period of {period:g} s, "
                 f"{harmonics} harmonics), base parameters {problem.base.rank}")
    say(console, f"condition number of the base regressor: {result.condition:.4g}; a random Fourier series of "
                 f"the same harmonics filling the same limits: {result.random_condition:.4g} (the median of "
                 f"{result.drawn}, {result.random_condition / result.condition:.3g}x); the search's start: "
                 f"{result.start_condition:.4g}")
    tau = problem.torques(q, qd, qdd)
    L = problem.limits
    for k, joint in enumerate(coords.joint_names):
        parts = [f"|q - middle| {np.abs(q[:, k] - L.centre[k]).max():.4g}", f"|qd| {np.abs(qd[:, k]).max():.4g}",
                 f"|qdd| {np.abs(qdd[:, k]).max():.4g}", f"|tau| {np.abs(tau[:, k]).max():.4g}"]
        say(console, f"  {joint}: " + ", ".join(parts))
