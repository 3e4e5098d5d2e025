"""`rnea check` (limits, for people and CI) and `rnea info` (the robot)."""

import json

import click

from .group import main
from .common import make_console, open_run, say
from .options import actuator_options, limit_options, quiet_option, robot_options, trajectory_options

CHECK_FORMATS = ["text", "json", "junit", "github", "markdown"]


def limit_check(run, options, console):
    """The LimitCheck of a run's pipeline, with the limits of --limits over the URDF's."""
    from ..run.limits import limit_check as checked
    from .common import invocation

    check, notes = checked(run.model, run.coords, run.pipeline, options.get("limits_file"), options.get("margin", 1.0))
    for note in notes:
        run.note(f"warning: {note}")
    invocation().check = check
    return check


@main.command()
@trajectory_options
@limit_options
@click.option("--format", "fmt", type=click.Choice(CHECK_FORMATS), default="text", show_default=True,
              help="Report format, on stdout (markdown: for a GitHub job summary).")
@click.option("--strict", is_flag=True, help="A joint without a limit for a quantity is a failure.")
@actuator_options("Effort is the rigid-body torque plus the URDF's <dynamics damping friction>.",
                  "YAML per joint (as for torques): effort also includes the drive's friction and reflected "
                  "rotor inertia; motor limits (peak_torque, continuous_torque, max_speed, envelope) are checked.")
@quiet_option
def check(fmt, strict, friction, actuators_file, quiet, **options):
    """Check a trajectory against joint limits: exit 0 within limits, 1 exceeded, 2 bad input."""
    from ..outputs import checkreport as report

    console = make_console(quiet=quiet)
    run = open_run(options, console, quiet=quiet, friction=friction, actuators=actuators_file)
    result = limit_check(run, options, console)
    efforts = {i: c for c, i, q in result.plan if q == "effort"}
    sparks = None
    if fmt == "text":
        from ..outputs.report import Sparklines

        sparks = Sparklines([efforts[i].allowed if i in efforts else 0.0 for i in range(run.coords.n)])
    for block in run.blocks():
        result.update(block)
        if sparks is not None:
            sparks.update(block.effort)
    result.finish()
    failed = bool(result.violations) or (strict and bool(result.unchecked))
    source = run.traj.label
    if fmt == "text":
        stdout = make_console(stderr=False)
        from ..outputs.report import print_whole

        def table(sparklines=None):
            return report.check_table(run.model, result, run.traj.has_time, plain=not stdout.is_terminal,
                                      sparklines=sparklines)

        print_whole(stdout, table(), lambda: table({run.coords.joint_names[i]: sparks.line(i) for i in efforts}))
        say(stdout, report.verdict(result, strict),
            style=None if not stdout.is_terminal else "bold red" if failed else "bold green")
    elif fmt == "json":
        click.echo(json.dumps(report.check_json(run.coords, result, strict, source), indent=2, allow_nan=False))
    elif fmt == "junit":
        click.echo(report.check_junit(run.coords, result, strict, source), nl=False)
    elif fmt == "markdown":
        click.echo(report.check_markdown(run.model, result, strict, source, run.traj.has_time), nl=False)
    else:
        click.echo(report.check_github(result, strict, source, run.traj.line or (lambda k: None)), nl=False)
        say(console, report.verdict(result, strict))
    if failed:
        raise SystemExit(1)


@main.command()
@robot_options
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def info(fmt, **options):
    """Links, joints, masses and limits of a robot, and what looks wrong in its URDF."""
    from ..run.info import robot_facts, robot_tree
    from .common import load_model

    model = load_model(options, make_console(quiet=True))
    facts = robot_facts(model)
    if fmt == "json":
        click.echo(json.dumps(facts, indent=2, allow_nan=False))
        return
    stdout = make_console(stderr=False)
    click.echo("\n".join(robot_tree(facts)))
    base = " + 6 of the floating base" if facts["floating"] else ""
    dof = f"{facts['dof']} degree{'s' if facts['dof'] != 1 else ''} of freedom"
    say(stdout, f"{facts['robot'] or 'robot'}: {dof}{base}, total mass {facts['total_mass']:.6g} kg, root link "
                f"{facts['root_link']}")
    for text in facts["warnings"]:
        say(stdout, f"warning: {text}", style="yellow" if stdout.is_terminal else None)
