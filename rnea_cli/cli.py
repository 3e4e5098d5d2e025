"""The `rnea` command: parses arguments, calls the library, prints data to stdout and reports to stderr."""

import gc
import os
import signal
import sys
import time as _time
import warnings

import click

from .errors import RneaError

GRAVITY = "0,0,-9.81"


class Group(click.Group):
    """The one place where domain errors become a message and exit status 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except RneaError as exc:
            click.echo(f"rnea: error: {exc}", err=True)
            ctx.exit(2)
        except BrokenPipeError:  # the reader went away (SIGPIPE ignored by our parent): end quietly
            sys.stderr.flush()
            os._exit(141)
        except OSError as exc:  # writing the output failed: a full disk, /dev/full, a lost mount
            where = exc.filename or "output"
            click.echo(f"rnea: error: {where}: cannot write: {exc.strerror or exc}", err=True)
            ctx.exit(2)
        except (click.exceptions.Exit, click.ClickException, SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:  # a bug of ours: one line, unless RNEA_DEBUG asks for the traceback
            if os.environ.get("RNEA_DEBUG"):
                raise
            click.echo(f"rnea: internal error: {type(exc).__name__}: {exc} (RNEA_DEBUG=1 shows where; "
                       "please report it)", err=True)
            ctx.exit(70)


def positive(ctx, param, value):
    """A finite number > 0 (click's FloatRange lets nan and inf through)."""
    if value is not None and not (0 < value < float("inf")):
        raise click.BadParameter(f"{value!r} is not a finite number above 0")
    return value


def vector3(ctx, param, value):
    try:
        parts = [float(x) for x in value.replace(" ", "").split(",")]
    except ValueError:
        parts = []
    if len(parts) != 3 or not all(abs(x) < float("inf") for x in parts):
        raise click.BadParameter(f"'{value}' is not three numbers GX,GY,GZ")
    return tuple(parts)


class Silent:
    """The console of --quiet on stderr: prints nothing, so neither rich nor the reports are needed."""

    quiet = True
    is_terminal = False

    def print(self, *objects, **options):
        pass


def make_console(stderr=True, quiet=False):
    """Rich on a terminal; plain, wide text otherwise (files, pipes, CI logs)."""
    if quiet and stderr:
        return Silent()
    from rich.console import Console

    console = Console(stderr=stderr, quiet=quiet, highlight=False)
    if not console.is_terminal:
        console = Console(stderr=stderr, quiet=quiet, highlight=False, width=200, no_color=True)
    return console


def load_model(path, console):
    from .urdf import load_urdf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_urdf(path)
    for text in model.warnings:
        console.print(f"warning: {text}", markup=False)
    return model


def with_progress(chunks, console, enabled):
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


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rnea-cli", prog_name="rnea")
def main():
    """Robot inverse dynamics from a URDF: joint torques along a trajectory, checked against limits."""


def trajectory_options(command):
    """The options every command that reads a trajectory shares."""
    options = [
        click.argument("robot", metavar="ROBOT.urdf"),
        click.argument("trajectory", metavar="TRAJ"),
        click.option("--input-format", type=click.Choice(["csv", "yaml", "json"]),
                     help="Trajectory format (default: from the extension; sniffed for '-')."),
        click.option("--gravity", default=GRAVITY, callback=vector3, metavar="GX,GY,GZ", show_default=True,
                     help="Gravity in the world (root) frame, m/s²."),
        click.option("--degrees", is_flag=True, help="Angles of revolute/continuous joints are in degrees."),
        click.option("--dt", type=float, callback=positive, metavar="SECONDS",
                     help="Sample period when the trajectory has no time column."),
        click.option("--floating-base", is_flag=True,
                     help="The root link is free (6 DoF): base pose, twist and its derivative come from the "
                          "trajectory. Implied by a floating joint in the URDF."),
        click.option("--no-mimic", is_flag=True, help="Treat <mimic> followers as independent joints."),
        click.option("--wrench-frame", type=click.Choice(["world", "link"]), default="world", show_default=True,
                     help="Frame of the fext_<link>_* wrench columns."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def table_output(what):
    """-o and --format of a command that writes a table of `what`."""
    def decorate(command):
        command = click.option("--format", "fmt", type=click.Choice(["csv", "json", "yaml"]),
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


quiet_option = click.option("-q", "--quiet", is_flag=True, help="Print nothing on stderr but errors.")


def say_notices(console, notices):
    for notice in notices:
        console.print(notice if notice.startswith("warning:") else f"note: {notice}", markup=False)


def open_inputs(robot, trajectory, console, *, input_format, gravity, degrees, dt, floating_base, no_mimic,
                wrench_frame, quiet, actuators=None, fixed_joints=False, **compute):
    """(model, coordinates, trajectory, options, iterator of compute.Block): what the commands
    share. actuators: the path of a --actuators file, read before the first block is computed;
    fixed_joints: compute with the fixed joints kept, for the wrenches across them."""
    from . import compute as engine
    from .actuators import load_drives
    from .model import Coordinates
    from .trajectory import open_trajectory, prefetch

    model = load_model(robot, console)
    coords = Coordinates(model, mimic=not no_mimic)
    floating = floating_base or model.floating
    if fixed_joints:
        from .urdf import load_urdf

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # said once, by load_model
            compute["fixed"] = engine.with_fixed_joints(model, load_urdf(robot, fixed_joints=True))
    if model.n == 0 and not floating and not (fixed_joints and compute["fixed"].model.n):
        raise RneaError(robot, None, "the robot has no movable joint (--floating-base for a free body)")
    links = [link.name for link in model.links]
    traj = open_trajectory(trajectory, coords, fmt=input_format, degrees=degrees, dt=dt, floating=floating,
                           links=links)
    shown = len(traj.notices)
    say_notices(console, traj.notices)
    if coords.followers:
        many = len(coords.followers) > 1
        console.print(f"note: {len(coords.followers)} mimic joint{'s' if many else ''} "
                      f"follow{'' if many else 's'} {'their leaders' if many else 'its leader'} "
                      f"({', '.join(coords.followers[:4])}{', ...' if len(coords.followers) > 4 else ''}); "
                      "--no-mimic to give them columns of their own", markup=False)
    if traj.wrenched:
        fixed = [name for name in traj.wrenched if not floating and next(
            l for l in model.links if l.name == name).body < 0]
        console.print(f"note: external wrenches on {', '.join(traj.wrenched)} ({wrench_frame} frame)"
                      + (f"; those on {', '.join(fixed)} act on the fixed root and change no torque" if fixed else ""),
                      markup=False)
    drives = load_drives(actuators, coords) if actuators else {}
    if actuators and not drives:
        console.print(f"warning: {actuators} names no joint: no drive terms", markup=False)
    options = engine.Options(gravity=gravity, floating=floating, wrench_frame=wrench_frame, drives=drives, **compute)

    def stream():
        chunks = with_progress(prefetch(traj.chunks), console, not quiet)
        yield from engine.blocks(model, coords, chunks, options, traj)
        say_notices(console, traj.notices[shown:])  # found while reading

    return model, coords, traj, options, stream()


@main.command()
@trajectory_options
@table_output("torques")
@actuator_options("Add tau_friction_<joint> columns from the URDF's <dynamics damping friction>.",
                  "YAML per joint: gear_ratio, rotor_inertia, viscous, coulomb; adds tau_friction_, "
                  "tau_armature_ and tau_motor_ columns.")
@quiet_option
def torques(robot, trajectory, output, fmt, friction, actuators_file, quiet, **options):
    """Joint torques/forces along a trajectory (TRAJ: .csv, .yaml, .json, or - for stdin)."""
    import numpy as np

    from . import output as out
    from .compute import torque_columns
    from .compute import Peaks
    from .report import actuator_table, base_wrench_line, summary_line, torque_table

    console = make_console(quiet=quiet)
    model, coords, traj, opts, blocks = open_inputs(robot, trajectory, console, quiet=quiet, friction=friction,
                                                    actuators=actuators_file, **options)
    drives = opts.drives
    names, keys, values = torque_columns(coords, traj.has_time, opts)
    peaks, base = Peaks(coords.n), Peaks(2) if opts.floating else None
    extra = {k: Peaks(coords.n) for k in ("friction", "armature", "motor")} if friction or drives else {}
    with out.destination(output) as stream, \
            out.TableWriter(stream, out.output_format(output, fmt), names, keys, background=True) as writer:
        for block in blocks:
            chunk = block.chunk
            peaks.update(chunk.start, chunk.time, block.tau)
            if base is not None:
                magnitudes = np.column_stack([np.linalg.norm(block.base_wrench[:, 3:], axis=1),
                                              np.linalg.norm(block.base_wrench[:, :3], axis=1)])
                base.update(chunk.start, chunk.time, magnitudes)
            for key, acc in extra.items():
                if getattr(block, key) is not None:
                    acc.update(chunk.start, chunk.time, getattr(block, key))
            writer.write(values(block))
    if console.quiet:
        return
    plain = not console.is_terminal
    if coords.n:
        console.print(torque_table(coords, peaks, traj.has_time, plain=plain))
    if extra:
        console.print(actuator_table(coords, extra, bool(drives), plain=plain))
    if base is not None:
        console.print(base_wrench_line(base, traj.has_time), markup=False)
    console.print(summary_line(coords, peaks), markup=False)


@main.command()
@trajectory_options
@table_output("wrenches")
@click.option("--fixed", is_flag=True, help="Also the wrench across each fixed joint (a tool flange, a sensor "
                                             "mount), after the movable joints.")
@quiet_option
def wrenches(robot, trajectory, output, fmt, fixed, quiet, **options):
    """The 6D wrench each joint transmits from parent to child, in the joint's frame."""
    import numpy as np

    from . import output as out
    from .compute import wrench_columns
    from .compute import Peaks
    from .report import wrench_table

    console = make_console(quiet=quiet)
    model, coords, traj, opts, blocks = open_inputs(robot, trajectory, console, quiet=quiet, wrenches=True,
                                                    fixed_joints=fixed, **options)
    joints = opts.fixed.names if fixed else model.joint_names
    if fixed and len(joints) == model.n:
        console.print("note: --fixed: the robot has no fixed joint", markup=False)
    names, keys, values = wrench_columns(joints, traj.has_time)
    force, moment = Peaks(len(joints)), Peaks(len(joints))
    with out.destination(output) as stream, \
            out.TableWriter(stream, out.output_format(output, fmt), names, keys, background=True) as writer:
        for block in blocks:
            W, chunk = block.joint_wrenches, block.chunk
            moment.update(chunk.start, chunk.time, np.linalg.norm(W[:, :, :3], axis=2))
            force.update(chunk.start, chunk.time, np.linalg.norm(W[:, :, 3:], axis=2))
            writer.write(values(block))
    if not console.quiet:
        shown = joints[:model.n] + [f"{name} (fixed)" for name in joints[model.n:]]
        console.print(wrench_table(shown, force, moment, traj.has_time, plain=not console.is_terminal))


@main.command()
@trajectory_options
@click.option("--limits", "limits_file", metavar="FILE",
              help="YAML overriding or adding limits per joint: effort, velocity, lower, upper, rms_effort.")
@click.option("--margin", type=float, callback=positive, default=1.0, show_default=True,
              help="Allowed fraction of the effort, velocity and rms_effort limits.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "junit", "github"]), default="text",
              show_default=True, help="Report format, on stdout.")
@click.option("--strict", is_flag=True, help="A joint without a limit for a quantity is a failure.")
@actuator_options("Effort is the rigid-body torque plus the URDF's <dynamics damping friction>.",
                  "YAML per joint (as for torques): effort also includes the drive's friction and "
                  "reflected rotor inertia.")
@quiet_option
def check(robot, trajectory, limits_file, margin, fmt, strict, friction, actuators_file, quiet, **options):
    """Check a trajectory against joint limits: exit 0 within limits, 1 exceeded, 2 bad input."""
    import json

    from . import report
    from .limits import LimitCheck, joint_limits, load_limits_file

    console = make_console(quiet=quiet)
    model, coords, traj, opts, blocks = open_inputs(robot, trajectory, console, quiet=quiet, friction=friction,
                                                    actuators=actuators_file, **options)
    overrides = load_limits_file(limits_file, model) if limits_file else None
    limits, notes = joint_limits(model, overrides, limits_file)
    for note in notes:
        console.print(f"warning: {note}", markup=False)
    # the torque the joint's drive delivers: with --friction/--actuators, friction and armature too
    terms = (["friction"] if friction or opts.drives else []) + (["armature"] if opts.drives else [])
    result = LimitCheck(model, coords, limits, margin, effort_terms=terms)
    for block in blocks:
        result.update(block.chunk, block.tau + sum(getattr(block, term) for term in terms))
    result.finish()
    failed = bool(result.violations) or (strict and bool(result.unchecked))
    source = traj.label
    if fmt == "text":
        stdout = make_console(stderr=False)
        stdout.print(report.check_table(model, result, traj.has_time, plain=not stdout.is_terminal))
        stdout.print(report.verdict(result, strict), markup=False,
                     style=None if not stdout.is_terminal else "bold red" if failed else "bold green")
    elif fmt == "json":
        click.echo(json.dumps(report.check_json(coords, result, strict, source), indent=2))
    elif fmt == "junit":
        click.echo(report.check_junit(coords, result, strict, source), nl=False)
    else:
        click.echo(report.check_github(result, strict, source, traj.line or (lambda k: None)), nl=False)
        console.print(report.verdict(result, strict), markup=False)
    if failed:
        raise SystemExit(1)


@main.command()
@click.argument("robot", metavar="ROBOT.urdf")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def info(robot, fmt):
    """Links, joints, masses and limits of a robot, and what looks wrong in its URDF."""
    import json

    from .report import robot_facts, robot_tree
    from .urdf import load_urdf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_urdf(robot)
    facts = robot_facts(model)
    if fmt == "json":
        click.echo(json.dumps(facts, indent=2))
        return
    stdout = make_console(stderr=False)
    stdout.print(robot_tree(facts))
    base = " + 6 of the floating base" if facts["floating"] else ""
    dof = f"{facts['dof']} degree{'s' if facts['dof'] != 1 else ''} of freedom"
    stdout.print(f"{facts['robot'] or 'robot'}: {dof}{base}, total mass "
                 f"{facts['total_mass']:.6g} kg, root link {facts['root_link']}", markup=False)
    for text in facts["warnings"]:
        stdout.print(f"warning: {text}", markup=False, style="yellow" if stdout.is_terminal else None)


def run():
    """Console-script entry point: restore SIGPIPE so `rnea ... | head` ends quietly."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    # the engine's 6x6 products gain nothing from BLAS threads, which would spin beside the
    # reader and writer threads; set before numpy is imported, unless the user chose
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        main()
    finally:  # the objects die with the process: no final collection over them (0.1 s with polars)
        gc.freeze()


if __name__ == "__main__":
    run()
