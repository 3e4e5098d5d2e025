"""What the commands share: their options, the consoles, and `open_run` (robot, trajectory, pipeline)."""

import os
import stat
import time as _time
import warnings
from dataclasses import dataclass

import click

from .. import options
from ..errors import RneaError

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


class Silent:
    """The console of --quiet on stderr: prints nothing, so neither rich nor the reports are needed."""

    quiet = True
    is_terminal = False

    def print(self, *objects, **options):
        pass


def make_console(stderr=True, quiet=False):
    """Rich on a terminal; plain, wide text otherwise (files, pipes, CI logs). Text is printed as
    written, never as Rich markup ('[bold]') or an emoji code (':smile:'): names come from the
    user's files."""
    if quiet and stderr:
        return Silent()
    from rich.console import Console

    plain = dict(stderr=stderr, quiet=quiet, highlight=False, markup=False, emoji=False)
    console = Console(**plain)
    if not console.is_terminal:
        console = Console(**plain, width=200, no_color=True)
    return console


def say(console, text, style=None):
    """One line of text, control characters escaped (names come from the user's files)."""
    from ..errors import printable

    console.print(printable(text, 4000), markup=False, style=style)


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


class Later:
    """A console whose lines wait: notes are said once the run has gone through, so that bad input
    gets its one line on stderr and nothing else."""

    def __init__(self, console):
        self.console, self.lines = console, []
        self.quiet, self.is_terminal = console.quiet, console.is_terminal

    def print(self, *objects, **options):
        self.lines.append((objects, options))

    def flush(self):
        for objects, options in self.lines:
            self.console.print(*objects, **options)
        self.lines = []


MODELS = None  # {key: Model} while many files run (cli/batch.py): their one robot is read once per process


def load_model(options, console, fixed_joints=False):
    """The robot of the command's ROBOT options, its warnings said once."""
    from ..robot import load_robot

    key = _model_key(options, fixed_joints) if MODELS is not None else None
    model = MODELS.get(key) if key is not None else None
    if model is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = load_robot(options["robot"], xacro_args=options["xacro_args"],
                               package_paths=options["package_paths"], fixed_joints=fixed_joints)
        if key is not None:
            MODELS[key] = model
    if not fixed_joints:
        for text in model.warnings:
            say(console, f"warning: {text}")
    return model


def _model_key(options, fixed_joints):
    """What a loaded robot depends on: its file as it is now (a regular file only) and the options."""
    try:
        st = os.stat(options["robot"])
    except (OSError, TypeError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None  # a pipe, a device: read each time
    return (os.path.realpath(options["robot"]), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
            tuple(options["xacro_args"] or ()), tuple(options["package_paths"] or ()), fixed_joints)


@dataclass
class Run:
    """What a command works on: the robot, the trajectory's columns, the trajectory, the pipeline."""

    model: object
    coords: object
    traj: object
    pipeline: object
    console: object
    quiet: bool = False
    later: object = None  # notes and warnings, said once every block went through

    def blocks(self):
        """The pipeline's Blocks, read ahead in a thread; notes and warnings said at the end."""
        from ..streams import prefetch

        shown = len(self.traj.notices)
        chunks = _with_progress(prefetch(self.traj.chunks), self.console, not self.quiet)
        self.traj.chunks = chunks
        yield from self.pipeline.blocks(self.traj)
        self.later.flush()
        for notice in self.traj.notices[shown:]:
            say(self.console, notice if notice.startswith("warning:") else f"note: {notice}")


def open_run(options, console, *, friction=False, actuators=None, wrenches=False, fixed=False, split=False,
             effort=False, static=False, quiet=False, before_reading=None):
    """Load the robot, open the trajectory and make the pipeline, saying what the user should know.
    before_reading(coords, drives): checks of the options made before a trajectory is opened (a
    bag is read whole when it is opened)."""
    from ..actuators import load_drives
    from ..model import Coordinates
    from ..pipeline import FixedJoints, Pipeline
    from ..trajectory import open_trajectory

    from ..writers import protect

    for path in (options["robot"], options["trajectory"], actuators, options.get("limits")):
        protect(path)
    console = later = Later(console)
    model = load_model(options, console)
    coords = Coordinates(model, mimic=not options["no_mimic"])
    floating = options["floating_base"] or model.floating
    kept = FixedJoints.of(model, load_model(options, console, fixed_joints=True)) if fixed else None
    if model.n == 0 and not floating and not (kept and kept.model.n):
        raise RneaError(options["robot"], None, "the robot has no movable joint (--floating-base for a free body)")
    drives = load_drives(actuators, coords) if actuators else {}
    if before_reading is not None:
        before_reading(coords, drives)
    traj = open_trajectory(options["trajectory"], coords, fmt=options["input_format"], degrees=options["degrees"],
                           dt=options["dt"], floating=floating, links=[link.name for link in model.links],
                           effort=effort, columns=options["columns"], preset=options["preset"],
                           time_unit=options["time_unit"], topic=options["topic"], message=options["message"],
                           publisher=options["publisher"],
                           static=static, smooth=options["smooth"], resample=options["resample"],
                           workers=engine_threads())
    context = click.get_current_context(silent=True)
    if context is not None:  # a command that stops before reading it all closes its file
        context.call_on_close(traj.close)
    for notice in traj.notices:
        say(console, notice if notice.startswith("warning:") else f"note: {notice}")
    if coords.followers:
        many = len(coords.followers) > 1
        say(console, f"note: {len(coords.followers)} mimic joint{'s' if many else ''} "
                     f"({', '.join(coords.followers[:4])}{', ...' if len(coords.followers) > 4 else ''}) "
                     f"follow{'' if many else 's'} {'their leaders' if many else 'its leader'}; "
                     f"--no-mimic to give {'them columns of their' if many else 'it a column of its'} own")
    if traj.wrenched:
        on_root = [name for name in traj.wrenched if not floating and next(
            link for link in model.links if link.name == name).body < 0]
        say(console, f"note: external wrenches on {', '.join(traj.wrenched)} ({options['wrench_frame']} frame)"
                     + (f"; those on {', '.join(on_root)} act on the fixed root and change no torque" if on_root
                        else ""))
    if actuators and not drives:
        say(console, f"warning: {actuators} names no joint: no drive terms")
    pipeline = Pipeline(model, coords, gravity=options["gravity"], floating=floating,
                        wrench_frame=options["wrench_frame"], friction=friction, drives=drives, wrenches=wrenches,
                        fixed=kept, split=split, threads=engine_threads())
    run = Run(model, coords, traj, pipeline, later.console, quiet, later)
    from .batch import CURRENT

    CURRENT["run"] = run  # for the summary of a run among several
    return run


def engine_threads():
    """Threads for the engine: the usable cores (RNEA_THREADS to choose)."""
    chosen = os.environ.get("RNEA_THREADS", "").strip()
    if chosen:
        if not (chosen.isascii() and chosen.isdigit() and len(chosen) <= 4 and 0 < int(chosen) <= 4096):
            from ..errors import shown

            raise RneaError("RNEA_THREADS", None, f"{shown(chosen)} is not a number of threads (1 to 4096)")
        return int(chosen)
    from ..workers import usable_cores

    return usable_cores()


def _with_progress(chunks, console, enabled):
    """Yield chunks; on a terminal, show a progress line once the work has taken over a second."""
    if not enabled or not console.is_terminal:
        yield from chunks
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    started, progress, task, done = _time.monotonic(), None, None, 0
    try:
        for chunk in chunks:
            yield chunk
            done += len(chunk)
            if progress is None and _time.monotonic() - started > 1.0:
                progress = Progress(SpinnerColumn(), TextColumn("{task.completed:,} samples"), TimeElapsedColumn(),
                                    console=console, transient=True)
                progress.start()
                task = progress.add_task("rnea", total=None)
            if progress is not None:
                progress.update(task, completed=done)
    finally:
        if progress is not None:
            progress.stop()
