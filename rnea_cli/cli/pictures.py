"""`rnea report` and `rnea plot`: pictures of a run (matplotlib, imported only by these)."""

import click

from .group import main
from .check import limit_check
from .common import destination, make_console, open_run
from .options import actuator_options, limit_options, quiet_option, trajectory_options
from ..errors import RneaError, shown

HINT = "needs matplotlib: pip install 'rnea-cli[report]' (or matplotlib)"


def _need_output(output):
    if output is None:
        raise click.UsageError("Missing option '-o' / '--output' (or --output-dir, for several trajectories).")


def need_matplotlib(command):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise RneaError(f"rnea {command}", None, HINT) from None


@main.command()
@trajectory_options
@limit_options
@click.option("-o", "--output", metavar="FILE.html", help="The report to write (several TRAJ: --output-dir).")
@click.option("--strict", is_flag=True, help="A joint without a limit for a quantity is a failure.")
@actuator_options("Effort is the rigid-body torque plus the URDF's <dynamics damping friction>.",
                  "YAML per joint (as for check): motor operating points, envelope and power are drawn.")
@quiet_option
def report(output, strict, friction, actuators_file, quiet, **options):
    """One self-contained HTML report of a run: the verdict and limit table of check, each joint's
    effort, velocity and position against its limits, motors, power, measured effort. Exit status
    as for check (the report is written either way)."""
    import os

    _need_output(output)
    if output != "-" and os.path.splitext(output)[1].lower() not in (".html", ".htm"):
        raise RneaError(output, None, "the report's name must end in .html (it is an HTML page; - for stdout)")
    need_matplotlib("report")
    from ..run.info import robot_facts, robot_tree
    from ..outputs.pictures.html import document

    console = make_console(quiet=quiet)
    run = open_run(options, console, quiet=quiet, friction=friction, actuators=actuators_file, effort=True)
    check, recorder = checked_and_recorded(run, options, console)
    facts = robot_facts(run.model)
    page = document(run, check, recorder, strict, facts, "\n".join(robot_tree(facts)))
    with destination(output) as stream:
        stream.write(page.encode())
    if not console.quiet:
        console.print(f"report written to {output} ({len(page) / 1e6:.2f} MB)", markup=False)
    if check.violations or (strict and check.unchecked):
        raise SystemExit(1)


@main.command()
@trajectory_options
@limit_options
@click.option("-o", "--output", metavar="FILE.png|svg|pdf",
              help="The figure to write (several TRAJ: --output-dir, and -o only for the format).")
@click.option("--joints", metavar="J1,J2,...", help="The joints to draw (default: all); a name with a comma in "
                                                     "double quotes, as in CSV.")
@click.option("--quantity", type=click.Choice(["torque", "velocity", "position", "power"]), default="torque",
              show_default=True)
@actuator_options("Torque is the rigid-body torque plus the URDF's <dynamics damping friction>.",
                  "YAML per joint: torque includes the drive's terms (power needs it for the effort it draws).")
@quiet_option
def plot(output, joints, quantity, friction, actuators_file, quiet, **options):
    """One figure of a quantity over time, for a slide or a paper, with the limit lines."""
    _need_output(output)
    need_matplotlib("plot")
    import os

    from ..outputs.pictures import figures

    fmt = os.path.splitext(output)[1].lower().lstrip(".")
    if fmt not in ("png", "svg", "pdf"):
        raise RneaError(output, None, "the figure's name must end in .png, .svg or .pdf")
    console = make_console(quiet=quiet)
    run = open_run(options, console, quiet=quiet, friction=friction, actuators=actuators_file)
    coords, model = run.coords, run.model
    names = coords.joint_names if quantity in ("torque", "power") else model.joint_names
    chosen = names if not joints else _joint_list(joints)
    for name in chosen:
        if name not in names:
            raise RneaError("--joints", None, f"no joint {shown(name)} among {', '.join(map(shown, names[:12]))}"
                                              + (", ..." if len(names) > 12 else ""))
    check, recorder = checked_and_recorded(run, options, console)
    series = {"torque": recorder.effort, "velocity": recorder.velocity, "position": recorder.position,
              "power": recorder.power}[quantity]
    if series is None:
        raise RneaError("--quantity power", None, "needs --actuators (the power a drive delivers)")
    plt = figures.pyplot()
    units = {"torque": "N·m or N", "velocity": "rad/s or m/s", "position": "rad or m", "power": "W"}
    fig = figures.curves_figure(plt, f"{quantity} of {', '.join(chosen[:6])}" + ("..." if len(chosen) > 6 else ""),
                                [(n, series[names.index(n)]) for n in chosen], f"{quantity} ({units[quantity]})",
                                "time (s)" if run.traj.has_time else "sample", quantity)
    ax = fig.axes[0]
    limit_quantity = {"torque": "effort", "velocity": "velocity", "position": "position"}.get(quantity)
    for c in check.checks:
        if c.joint in chosen and c.quantity == limit_quantity:
            values = c.limit if c.quantity == "position" else (c.allowed, -c.allowed)
            for v in values:
                ax.axhline(v, color=figures.COLORS["limit"], lw=0.8, ls="--")
    with destination(output) as stream:
        fig.savefig(stream, format=fmt, dpi=150 if fmt == "png" else 72, metadata={"Creator": None} if fmt != "png"
                    else None)
    plt.close(fig)


def _joint_list(text):
    """J1,J2,...: one row of CSV, so that a name holding a comma is given quoted ('"a,b",c')."""
    import csv

    return [name.strip() for name in next(csv.reader([text]), []) if name.strip()]


def checked_and_recorded(run, options, console):
    """One pass over the run: the limit check, and the series the pictures draw."""
    from ..outputs.pictures.record import Recorder

    check = limit_check(run, options, console)
    recorder = Recorder(run)
    for block in run.blocks():
        check.update(block)
        recorder.update(block)
    check.finish()
    return check, recorder
