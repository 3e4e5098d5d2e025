"""`rnea torques` and `rnea wrenches`: a table of results per sample, a report on stderr."""

import click

from .group import main
from .common import destination, make_console, open_run, say
from .options import actuator_options, quiet_option, table_output, trajectory_options


@main.command()
@trajectory_options
@table_output("torques")
@actuator_options("Add tau_friction_<joint> columns from the URDF's <dynamics damping friction>.",
                  "YAML per joint: gear_ratio, rotor_inertia, viscous, coulomb, efficiency, torque_constant, "
                  "motor limits; adds tau_friction_, tau_armature_, tau_motor_ and power_ columns.")
@click.option("--split", is_flag=True, help="Add tau_gravity_, tau_inertia_, tau_coriolis_ (and tau_external_) "
                                            "columns, which sum to tau_.")
@click.option("--static", is_flag=True, help="Poses held still: q only, qd = qdd = 0 (the torque to hold each "
                                             "pose).")
@quiet_option
def torques(output, fmt, friction, actuators_file, split, static, quiet, **options):
    """Joint torques/forces along a trajectory (TRAJ: CSV, YAML, JSON, Parquet, Arrow, a ROS bag, or -)."""
    from ..outputs import writers
    from ..run.columns import torque_table
    from ..run.stats import Energy
    from ..outputs.report import actuator_table, base_wrench_line, energy_table, print_whole, summary_line
    from ..outputs.report import torque_table as torque_report

    console = make_console(quiet=quiet)
    run = open_run(options, console, quiet=quiet, friction=friction, actuators=actuators_file, split=split,
                   static=static)
    pipeline, coords, traj = run.pipeline, run.coords, run.traj
    power = bool(pipeline.drives)
    table = torque_table(coords, traj, pipeline, power=power)
    energy = Energy(coords.n) if power else None
    sparks = None
    if console.is_terminal:  # |tau|/limit over time, beside the table where the terminal has room
        from ..outputs.report import Sparklines

        sparks = Sparklines([j.limits.effort or 0.0 for j in coords.joints])
    with destination(output) as stream, \
            writers.table_writer(stream, writers.output_format(output, fmt), table.names, table.keys,
                                 background=True) as writer:
        for block in run.blocks():
            if energy is not None:
                energy.update(block)
            if sparks is not None:
                sparks.update(block.tau)
            writer.write(table.values(block))
    if console.quiet:
        return
    plain = not console.is_terminal
    peaks = pipeline.peaks
    if coords.n:
        def table(sparklines=None):
            return torque_report(coords, peaks["tau"], traj.has_time, plain=plain, sparklines=sparklines)

        print_whole(console, table(), None if sparks is None else lambda: table(sparks))
    if pipeline.effort_terms:
        print_whole(console, actuator_table(coords, peaks, bool(pipeline.drives), plain=plain))
    if energy is not None and traj.has_time:
        print_whole(console, energy_table(coords, energy, plain=plain))
    if "base" in peaks:
        say(console, base_wrench_line(peaks["base"], traj.has_time))
    say(console, summary_line(coords, peaks["tau"]))


@main.command()
@trajectory_options
@table_output("wrenches")
@click.option("--fixed", is_flag=True, help="Also the wrench across each fixed joint (a tool flange, a sensor "
                                             "mount), after the movable joints.")
@quiet_option
def wrenches(output, fmt, fixed, quiet, **options):
    """The 6D wrench each joint transmits from parent to child, in the joint's frame."""
    import numpy as np

    from ..outputs import writers
    from ..run.columns import wrench_table
    from ..outputs.report import wrench_table as wrench_report
    from ..run.stats import Peaks

    console = make_console(quiet=quiet)
    run = open_run(options, console, quiet=quiet, wrenches=True, fixed=fixed)
    model, traj = run.model, run.traj
    joints = run.pipeline.fixed.names if fixed else model.joint_names
    if fixed and len(joints) == model.n:
        say(console, "note: --fixed: the robot has no fixed joint")
    table = wrench_table(joints, traj.has_time)
    force, moment = Peaks(len(joints)), Peaks(len(joints))
    with destination(output) as stream, \
            writers.table_writer(stream, writers.output_format(output, fmt), table.names, table.keys,
                                 background=True) as writer:
        for block in run.blocks():
            W, chunk = block.joint_wrenches, block.chunk
            moment.update(chunk.start, chunk.time, np.hypot.reduce(W[:, :, :3], axis=2))
            force.update(chunk.start, chunk.time, np.hypot.reduce(W[:, :, 3:], axis=2))
            writer.write(table.values(block))
    if not console.quiet:
        shown = joints[:model.n] + [f"{name} (fixed)" for name in joints[model.n:]]
        from ..outputs.report import print_whole

        print_whole(console, wrench_report(shown, force, moment, traj.has_time, plain=not console.is_terminal))
