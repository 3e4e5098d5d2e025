"""`rnea payload`, `rnea scale` and `rnea compare`: answers along a whole trajectory."""

import json

import click

from .group import main
from .check import limit_check
from .common import destination, make_console, open_run, say
from .options import actuator_options, limit_options, quiet_option, trajectory_options, vector3

ACTUATORS_HELP = "YAML per joint (as for check): effort includes friction and armature; motor limits count."
FRICTION_HELP = "Effort includes the URDF's <dynamics damping friction>."


def place(ctx, param, value):
    """A point or size in metres: three finite numbers, each at most 1e100 in size (as in a URDF)."""
    parts = vector3(ctx, param, value)
    if not all(abs(x) <= 1e100 for x in parts):
        raise click.BadParameter(f"{value[:60]!r}: each number must be at most 1e100 in size")
    return parts


def lengths(ctx, param, value):
    if value is None:
        return None
    parts = place(ctx, param, value)
    if not all(x > 0 for x in parts):
        raise click.BadParameter(f"{value[:60]!r}: the box's edge lengths must be above 0")
    return parts


def _line(text):
    """One line of a text answer on stdout: the names in it (joints, links) printable, on one line."""
    from ..errors import printable

    click.echo(printable(text, 4000))


def _place(limiting, has_time):
    from ..outputs.report import time_text

    if limiting is None:
        return ""
    if limiting.get("sample") is None:
        return f"{limiting['joint']} {limiting['quantity']} (an RMS)"
    at = f"t = {time_text(limiting['time'])} s" if has_time and limiting.get("time") is not None else \
        f"sample {limiting['sample']}"
    return f"{limiting['joint']} {limiting['quantity']} at {at}"


def _highest_use(check):
    worst = max(check.checks, key=lambda c: c.utilisation, default=None)
    from ..outputs.report import percent

    return "no limit to check" if worst is None else f"{percent(worst.utilisation)} ({worst.joint} {worst.quantity})"


@main.command()
@trajectory_options
@click.option("--link", required=True, help="The link the payload is attached to (a link merged by a fixed "
                                            "joint, such as tool0, too).")
@click.option("--at", default="0,0,0", callback=place, metavar="X,Y,Z", show_default=True,
              help="Where the payload's centre of mass is, in the link's frame (m).")
@click.option("--box", callback=lengths, metavar="LX,LY,LZ",
              help="A uniform solid box of these edge lengths (m), axes along the link's, instead of a point mass.")
@click.option("--static", is_flag=True, help="Poses held still: q only, qd = qdd = 0.")
@limit_options
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@actuator_options(FRICTION_HELP, ACTUATORS_HELP)
@quiet_option
def payload(link, at, box, static, fmt, friction, actuators_file, quiet, **options):
    """The heaviest payload on LINK for which every limit holds along the whole motion (exit 1 if the
    motion breaks a limit already without payload)."""
    from ..run.answers.payload import MAX_PAYLOAD, PayloadSolver, unit_model
    from ..run.pipeline import Pipeline

    console = make_console(quiet=quiet)
    run = open_run(options, console, quiet=quiet, friction=friction, actuators=actuators_file, static=static)
    check = limit_check(run, options, console)
    unit, _ = unit_model(run.model, link, at, box)
    unit_pipeline = Pipeline(unit, run.coords, gravity=options["gravity"], floating=run.pipeline.floating,
                             threads=run.pipeline.threads)
    solver = PayloadSolver(check, unit_pipeline, run.pipeline.drives, run.traj.has_time)
    for block in run.blocks():
        check.update(block)
        solver.update(block, run.traj)
    check.finish()
    mass = run.model.body_mass(-1) + sum(run.model.body_mass(i) for i in range(run.model.n))
    result = solver.result(link, at, box, robot_mass=mass)
    if fmt == "json":
        click.echo(json.dumps(result.to_json(), indent=2, allow_nan=False))
    else:
        where = f"{link} at ({', '.join(f'{x:g}' for x in at)})" + (f", a {' x '.join(f'{x:g}' for x in box)} m box"
                                                                  if box else "")
        if not result.feasible_without_payload:
            text = f"no payload: the motion breaks a limit without one ({_place(_first(check), run.traj.has_time)})"
        elif result.unbounded:
            text = f"payload on {where}: no limit bounds it (none binds below {MAX_PAYLOAD:g} times the robot's mass)"
        else:
            text = (f"max payload on {where}: {result.max_payload:.6g} kg, limited by "
                    f"{_place(result.limiting, run.traj.has_time)}")
        _line(text)
        _line(f"without payload: highest use {_highest_use(check)}")
    if not result.feasible_without_payload:
        raise SystemExit(1)


def _first(check):
    bad = check.violations[0]
    return {"joint": bad.joint, "quantity": bad.quantity, "sample": bad.first_sample, "time": bad.first_time}


@main.command()
@trajectory_options
@limit_options
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@actuator_options(FRICTION_HELP, ACTUATORS_HELP)
@quiet_option
def scale(fmt, friction, actuators_file, quiet, **options):
    """How much faster (or slower) the same path may run within every limit: the largest uniform
    time-scaling factor (exit 1 if it is below 1: the planned speed is not feasible)."""
    from ..run.answers.scale import MAX_FACTOR, ScaleSolver

    console = make_console(quiet=quiet)
    run = open_run(options, console, quiet=quiet, friction=friction, actuators=actuators_file)
    check = limit_check(run, options, console)
    solver = ScaleSolver(check, run.pipeline, run.pipeline.drives)
    for block in run.blocks():
        check.update(block)
        solver.update(block, run.traj)
    check.finish()
    result = solver.result()
    for skipped in result.skipped:
        say(console, f"note: not considered by scale: {skipped} (check the scaled motion with rnea check)")
    if fmt == "json":
        click.echo(json.dumps(result.to_json(), indent=2, allow_nan=False))
    elif result.factor is None and result.unbounded:
        _line(f"speed factor: unbounded (no checked limit binds below {MAX_FACTOR:g} times the planned speed)")
    elif result.factor is None:
        _line(f"speed factor: none: the poses cannot be held even at rest ({_place(result.limiting, True)})")
    else:
        verdict = "feasible as planned" if result.factor >= 1 else "NOT feasible as planned"
        duration = f"; duration {result.duration:.6g} s" if result.duration is not None else ""
        _line(f"speed factor: {result.factor:.6g} ({verdict}){duration}; limited by "
                   f"{_place(result.limiting, run.traj.has_time)}")
    if result.factor is None and not result.unbounded or (result.factor is not None and result.factor < 1):
        raise SystemExit(1)


@main.command()
@trajectory_options
@click.option("--effort-is", type=click.Choice(["torque", "current"]), default="torque", show_default=True,
              help="What the measured effort is: joint torque, or motor current (through --actuators).")
@click.option("--max-rms", type=float, metavar="N", help="Exit 1 if a joint's RMS residual exceeds N.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "csv"]), default="text", show_default=True,
              help="The per-joint report, on stdout.")
@click.option("-o", "--output", metavar="FILE", help="Write the per-sample residual_<joint> columns here.")
@actuator_options("The model's effort includes the URDF's <dynamics damping friction>.",
                  "YAML per joint: the model's effort includes the drive's friction and armature; torque_constant "
                  "for --effort-is current.")
@quiet_option
def compare(effort_is, max_rms, fmt, output, friction, actuators_file, quiet, **options):
    """Measured effort against the model's, per joint: residual RMS and max, correlation, and the fit
    measured = scale model + offset (a CI check that the model still matches the robot)."""
    import contextlib

    import numpy as np

    from ..outputs import writers
    from ..run.answers.compare import Comparison, current_factors, measured_torque
    from ..run.columns import Table
    from ..outputs.report import comparison_csv, comparison_table

    if max_rms is not None and not 0 <= max_rms < float("inf"):
        raise click.BadParameter(f"{max_rms!r} is not a finite number of at least 0", param_hint="--max-rms")
    if output == "-":
        raise click.BadParameter("the comparison is written to stdout: give the residuals a file", param_hint="-o")
    console = make_console(quiet=quiet)
    factors = {}

    def currents(coords, drives):  # checked before a bag is read
        factors["current"] = current_factors(coords, drives, actuators_file)

    run = open_run(options, console, quiet=quiet, friction=friction, actuators=actuators_file, effort=True,
                   before_reading=currents if effort_is == "current" else None)
    coords, traj = run.coords, run.traj
    factors = factors.get("current")
    stats = Comparison(coords.n)
    table = Table()
    if traj.has_time:
        table.add(["time"], [("time",)], lambda b: b.chunk.time[:, None])
    table.add([f"residual_{j}" for j in coords.joint_names], [("residual", j) for j in coords.joint_names],
              lambda b: b.residual)
    with contextlib.ExitStack() as stack:
        writer = None
        if output:
            stream = stack.enter_context(destination(output))
            writer = stack.enter_context(writers.table_writer(stream, writers.output_format(output, None),
                                                              table.names, table.keys))
        for block in run.blocks():
            measured = measured_torque(block.chunk, factors, traj.label)
            block.residual = measured - block.effort
            if not np.isfinite(block.residual).all():
                k = int(np.argmin(np.isfinite(block.residual).all(axis=1)))
                from ..errors import TrajectoryError

                raise TrajectoryError(traj.label, traj.where(block.chunk.start + k), "residual overflow (not finite)")
            stats.update(block.chunk.start, block.effort, measured)
            if writer is not None:
                writer.write(table.values(block))
    joints = stats.joints(coords.joint_names, traj.label)
    if fmt == "json":
        click.echo(json.dumps({"joints": joints, "samples": stats.count}, indent=2, allow_nan=False))
    elif fmt == "csv":
        click.echo(comparison_csv(joints), nl=False)
    else:
        stdout = make_console(stderr=False)
        from ..outputs.report import print_whole

        print_whole(stdout, comparison_table(coords, joints, plain=not stdout.is_terminal))
        say(stdout, f"{stats.count} sample{'s' if stats.count != 1 else ''}; model effort = tau" + "".join(f" + {t}" for t in
                                                                            run.pipeline.effort_terms))
    worst = max(joints, key=lambda j: j["rms"], default=None)
    if max_rms is not None and worst is not None and worst["rms"] > max_rms:
        say(console, f"FAIL: {worst['joint']} RMS residual {worst['rms']:.6g} exceeds {max_rms:g}")
        raise SystemExit(1)
