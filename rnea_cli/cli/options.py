"""The options the commands share, as click declares them; their values are checked by the library's
own functions (run/options.py), so that the CLI and the Python API refuse alike."""

import click

from ..errors import RneaError
from ..run import options

GRAVITY = "0,0,-9.81"
INPUT_FORMATS = ["csv", "yaml", "json", "parquet", "arrow", "bag"]


def positive(ctx, param, value):
    """A finite number > 0 (click's FloatRange lets nan and inf through), as the library checks it."""
    try:
        return options.optional_positive(value, param.name)
    except RneaError as exc:
        raise click.BadParameter(exc.message) from None


def vector3(ctx, param, value):
    """X,Y,Z: three finite numbers, as the library checks them."""
    try:
        return options.vector3([float(x) for x in value.replace(" ", "").split(",")], param.name)
    except (ValueError, RneaError):
        raise click.BadParameter(f"{value[:60]!r} is not three finite numbers X,Y,Z") from None


def robot_options(command):
    """ROBOT and how to expand it when it is xacro."""
    for option in reversed([
        click.argument("robot", metavar="ROBOT"),
        click.option("--xacro-arg", "xacro_args", multiple=True, metavar="NAME:=VALUE",
                     help="An argument of a xacro ROBOT (repeatable)."),
        click.option("--package-path", "package_paths", multiple=True, metavar="DIR",
                     help="A folder searched for ROS packages, for $(find PKG) in xacro (repeatable; "
                          "ROS_PACKAGE_PATH is searched too)."),
    ]):
        command = option(command)
    return command


def trajectory_options(command, batch=True):
    """The options of every command that reads a trajectory; several trajectories run one by one
    in worker processes (cli/batch.py), or, with batch False, all go to the command as a tuple
    (`rnea identify` fits them together)."""
    from .batch import batchable

    command = batchable(command) if batch else command
    options = [
        click.argument("trajectory", metavar="TRAJ...", nargs=-1, required=True),
    ] + ([
        click.option("--output-dir", type=click.Path(file_okay=False), metavar="DIR",
                     help="With several TRAJ: write each one's output here (its stem, the format's extension)."),
        click.option("--jobs", type=click.IntRange(min=1), metavar="N",
                     help="With several TRAJ: worker processes (default: the usable cores)."),
    ] if batch else []) + [
        click.option("--input-format", type=click.Choice(INPUT_FORMATS),
                     help="Trajectory format (default: from the extension; sniffed for '-')."),
        click.option("--columns", metavar="ROLE=TEMPLATE,...",
                     help="Columns of a table by role: time, q, qd, qdd, effort; {i} is the joint's index, "
                          "{joint} its name. E.g. 'time=timestamp,q=actual_q_{i}'."),
        click.option("--preset", type=click.Choice(["ur-rtde", "franka"]),
                     help="The columns of a UR RTDE or libfranka log (see the README)."),
        click.option("--time-unit", type=click.Choice(["s", "ms", "us", "ns"]),
                     help="Unit of a table's or document's time column (default: s; ms with --preset franka; "
                          "a timestamp column's is its type's). Not for bags."),
        click.option("--topic", metavar="NAME", help="The topic of a ROS bag to read (default: its only "
                                                     "JointState or JointTrajectory topic)."),
        click.option("--message", type=click.IntRange(min=0), metavar="K",
                     help="Which JointTrajectory message of the topic (0-based; default: the last)."),
        click.option("--publisher", metavar="NAME",
                     help="Which publisher of a bag's JointState topic to read, where several publish the same "
                          "joints: its ROS 1 caller id or its header.frame_id."),
        click.option("--gravity", default=GRAVITY, callback=vector3, metavar="GX,GY,GZ", show_default=True,
                     help="Gravity in the world (root) frame, m/s²."),
        click.option("--degrees", is_flag=True, help="Angles of revolute/continuous joints are in degrees."),
        click.option("--dt", type=float, callback=positive, metavar="SECONDS",
                     help="Sample period when the trajectory has no time column."),
        click.option("--smooth", type=float, callback=positive, metavar="SECONDS",
                     help="Estimate q, qd, qdd by local cubic fits over windows of this length (noisy "
                          "measured positions)."),
        click.option("--resample", type=float, callback=positive, metavar="HZ",
                     help="Interpolate onto a uniform time grid of this rate first."),
        click.option("--floating-base", is_flag=True,
                     help="The root link is free (6 DoF): base pose, twist and its derivative come from the "
                          "trajectory. Implied by a floating joint in the URDF."),
        click.option("--no-mimic", is_flag=True, help="Treat <mimic> followers as independent joints."),
        click.option("--wrench-frame", type=click.Choice(["world", "link"]), default="world", show_default=True,
                     help="Frame of the fext_<link>_* wrench columns."),
    ]
    for option in reversed(options):
        command = option(command)
    return robot_options(command)


def table_output(what):
    """-o and --format of a command that writes a table of `what`."""
    def decorate(command):
        command = click.option("--format", "fmt", type=click.Choice(["csv", "json", "yaml", "parquet", "arrow"]),
                               help="Output format (default: from the -o extension, else csv).")(command)
        return click.option("-o", "--output", default="-", metavar="FILE",
                            help=f"Write {what} here (default: stdout).")(command)
    return decorate


def actuator_options(friction_help, actuators_help):
    """--friction and --actuators FILE, with what they mean for the command."""
    def decorate(command):
        command = click.option("--actuators", "actuators_file", metavar="FILE", help=actuators_help)(command)
        return click.option("--friction", is_flag=True, help=friction_help)(command)
    return decorate


def limit_options(command):
    """--limits and --margin, as `check` takes them."""
    command = click.option("--margin", type=float, callback=positive, default=1.0, show_default=True,
                           help="Allowed fraction of the effort, velocity and rms_effort limits.")(command)
    return click.option("--limits", "limits_file", metavar="FILE",
                        help="YAML overriding or adding limits per joint: effort, velocity, lower, upper, "
                             "rms_effort, acceleration.")(command)


quiet_option = click.option("-q", "--quiet", is_flag=True, help="Print nothing on stderr but errors.")
