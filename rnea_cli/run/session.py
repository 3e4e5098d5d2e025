"""One run, as the library makes it: a robot and a trajectory in, the pipeline's blocks out.

Every command, the DataFrame API and the pictures go through `open_run`. What a person should be
told (a derived column, a mimic joint, a URDF's oddity) comes back as notices, data the caller
prints or not; nothing here prints, reads click's names or keeps state between runs. A cache of
loaded robots (`Models`) and the engine's thread count are given, not found.
"""

import dataclasses
import os
import stat
import warnings
from dataclasses import dataclass, field

from ..errors import RneaError
from . import options as checked


@dataclass(frozen=True)
class RunOptions:
    """How a trajectory is read and what is computed from it; the defaults are the CLI's.

    Reading: `input_format` ('csv', 'yaml', 'json', 'parquet', 'arrow', 'bag'; None: from the
    extension), `columns` ('time=t,q=pos_{i}'), `preset` ('ur-rtde', 'franka'), `time_unit`
    ('s', 'ms', 'us', 'ns'), a bag's `topic`, JointTrajectory `message` and JointState
    `publisher`, `degrees`, `dt` (seconds, no time column), `smooth` (seconds of a local cubic fit),
    `resample` (Hz), `static` (poses held still: qd = qdd = 0), `effort` (read measured effort
    columns too). The robot: `xacro_args` ('name:=value'), `package_paths`, `mimic` (followers
    move with their leaders; False: columns of their own), `floating` (a free root link; implied by
    a floating joint in the URDF). Computing: `gravity` (world frame, m/s²), `wrench_frame`
    ('world' or 'link', of the fext_ columns), `friction` (the URDF's <dynamics>), `actuators` (a
    YAML file of drives), `wrenches` (joint wrenches), `fixed` (wrenches across fixed joints too),
    `split` (gravity, inertia, Coriolis and external parts), `threads` (the engine's; None: the
    usable cores). `actuators` may be {joint: actuators.Drive} instead of a file's path."""

    input_format: str | None = None
    columns: str | None = None
    preset: str | None = None
    time_unit: str | None = None
    topic: str | None = None
    message: int | None = None
    publisher: str | None = None
    degrees: bool = False
    dt: float | None = None
    smooth: float | None = None
    resample: float | None = None
    static: bool = False
    effort: bool = False
    xacro_args: tuple = ()
    package_paths: tuple = ()
    mimic: bool = True
    floating: bool = False
    gravity: tuple = (0.0, 0.0, -9.81)
    wrench_frame: str = "world"
    friction: bool = False
    actuators: object = None
    wrenches: bool = False
    fixed: bool = False
    split: bool = False
    threads: int | None = None

    def __post_init__(self):
        from ..trajectory.sources import FORMATS
        from ..trajectory.sources.clock import UNITS
        from ..trajectory.sources.layout import PRESETS

        for name in ("degrees", "static", "effort", "mimic", "floating", "friction", "wrenches", "fixed", "split"):
            checked.flag(getattr(self, name), name)
        for name in ("dt", "smooth", "resample"):
            checked.optional_positive(getattr(self, name), name)
        object.__setattr__(self, "gravity", tuple(checked.vector3(self.gravity, "gravity")))
        checked.choice(self.wrench_frame, "wrench_frame", ("world", "link"))
        for name, choices in (("input_format", FORMATS), ("preset", tuple(PRESETS))):
            if getattr(self, name) is not None:
                checked.choice(getattr(self, name), name, choices)
        if self.time_unit is not None and self.time_unit not in UNITS:
            raise RneaError("time_unit", None, f"{self.time_unit!r}: expected one of {', '.join(UNITS)}")
        for name in ("columns", "topic", "publisher"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise RneaError(name, None, f"expected a str, got {type(value).__name__}")
        if self.message is not None and (isinstance(self.message, bool) or not isinstance(self.message, int)
                                         or self.message < 0):
            raise RneaError("message", None, f"{self.message!r} is not a message index (an int, 0 or more)")
        if self.threads is not None and (isinstance(self.threads, bool) or not isinstance(self.threads, int)
                                         or not 0 < self.threads <= 4096):
            raise RneaError("threads", None, f"{self.threads!r} is not a number of threads (1 to 4096)")
        for name in ("xacro_args", "package_paths"):
            value = getattr(self, name) or ()
            if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not all(
                    isinstance(x, (str, os.PathLike)) for x in value):
                raise RneaError(name, None, f"expected a list of str (one per {name[:-1].replace('_', ' ')}), got "
                                            f"{type(value).__name__}")
            object.__setattr__(self, name, tuple(os.fspath(x) for x in value))
        if not isinstance(self.actuators, dict):
            object.__setattr__(self, "actuators", checked.path(self.actuators, "actuators"))


class Models:
    """Robots loaded once and reused while their file is unchanged: many trajectories of one robot
    (batch mode) read its URDF once per process. A pipe or a device is read each time."""

    def __init__(self):
        self._loaded = {}

    def load(self, robot, options, fixed_joints=False):
        key = _model_key(robot, options, fixed_joints)
        model = self._loaded.get(key) if key is not None else None
        if model is None:
            model = load_model(robot, options, fixed_joints)
            if key is not None:
                self._loaded[key] = model
        return model


def load_model(robot, options, fixed_joints=False):
    """The Model of a URDF or xacro path (its warnings are the model's, `model.warnings`)."""
    from ..model.robot import load_robot

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_robot(robot, xacro_args=options.xacro_args, package_paths=options.package_paths,
                          fixed_joints=fixed_joints)


def _model_key(robot, options, fixed_joints):
    """What a loaded robot depends on: its file as it is now (a regular file only) and the options."""
    try:
        st = os.stat(robot)
    except (OSError, TypeError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (os.path.realpath(robot), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, options.xacro_args,
            options.package_paths, fixed_joints)


@dataclass
class Run:
    """A robot, the trajectory's columns, the trajectory and the pipeline for it. `notices`: what a
    person should know, each a line beginning 'note: ' or 'warning: '; those a trajectory finds
    while it is read (dropped rows, a time gap) join them once `blocks()` has gone through."""

    model: object
    coords: object
    traj: object
    pipeline: object
    notices: list = field(default_factory=list)
    _seen: int = 0  # the trajectory's notices already in `notices`
    _begun: bool = False  # blocks() was called

    def blocks(self, wrap=None, *, dynamics=True):
        """The pipeline's Blocks, the trajectory read ahead in a thread; wrap(chunks): an iterator
        of the chunks in their place (a progress display), or None. dynamics=False: the motions
        only (`Pipeline.motions`), for a caller that computes its own. A trajectory streams: its
        blocks can be read once (open the run again to read them again)."""
        from ..streams import prefetch

        if self._begun:
            raise RneaError(self.traj.label, None, "this run's blocks were read already: a trajectory streams "
                                                   "once (open_run again)")
        self._begun = True
        chunks = prefetch(self.traj.chunks)
        traj = dataclasses.replace(self.traj, chunks=wrap(chunks) if wrap else chunks)
        yield from (self.pipeline.blocks if dynamics else self.pipeline.motions)(traj)
        self.notices += [_line(notice) for notice in self.traj.notices[self._seen:]]
        self._seen = len(self.traj.notices)


def open_run(robot, trajectory, options=RunOptions(), *, models=None, before_reading=None):
    """Load the robot (a path, or a Model), open the trajectory (a path, '-' for standard input,
    or a function (coords, floating) -> a source's Trajectory: the DataFrame API's table) and make
    the pipeline. models: a Models cache, or None. before_reading(coords, drives): checks of the
    caller's made before the trajectory is opened (a bag is read whole when it is opened)."""
    from ..model.tree import Coordinates, Model
    from ..trajectory import derive
    from ..trajectory.open import open_trajectory
    from ..workers import usable_cores
    from .actuators import checked_drives, load_drives
    from .pipeline import FixedJoints, Pipeline

    if not isinstance(options, RunOptions):
        raise RneaError("options", None, f"expected a RunOptions, got {type(options).__name__}")
    if not isinstance(robot, Model):
        robot = checked.path(robot, "robot")
        if robot is None:
            raise RneaError("robot", None, "expected a Model or a robot file's path, got None")
    if not callable(trajectory):
        trajectory = checked.path(trajectory, "trajectory")
        if trajectory is None:
            raise RneaError("trajectory", None, "expected a trajectory file's path, '-' or a source, got None")
    load = models.load if models is not None else lambda path, opts, fixed_joints=False: load_model(
        path, opts, fixed_joints)
    model = robot if isinstance(robot, Model) else load(robot, options)
    notices = [f"warning: {text}" for text in model.warnings]
    coords = Coordinates(model, mimic=options.mimic)
    floating = options.floating or model.floating
    kept = None
    if options.fixed:
        if isinstance(robot, Model):
            raise RneaError("robot", None, "fixed=True needs the robot's path (its fixed joints are read again)")
        kept = FixedJoints.of(model, load(robot, options, fixed_joints=True))
    if model.n == 0 and not floating and not (kept and kept.model.n):
        raise RneaError(_label(robot), None, "the robot has no movable joint (--floating-base for a free body)")
    if isinstance(options.actuators, dict):
        drives = checked_drives(options.actuators, coords)
    else:
        drives = load_drives(options.actuators, coords) if options.actuators else {}
    if before_reading is not None:
        before_reading(coords, drives)
    threads = options.threads or usable_cores()
    if callable(trajectory):
        traj = derive.prepare(trajectory(coords, floating), coords, degrees=options.degrees, dt=options.dt,
                              floating=floating, static=options.static, smooth=options.smooth,
                              resample=options.resample)
    else:
            traj = open_trajectory(trajectory, coords, fmt=options.input_format, degrees=options.degrees, dt=options.dt,
                               floating=floating, links=[link.name for link in model.links], effort=options.effort,
                               columns=options.columns, preset=options.preset, time_unit=options.time_unit,
                               topic=options.topic, message=options.message, publisher=options.publisher,
                               static=options.static, smooth=options.smooth, resample=options.resample,
                               workers=threads)
    notices += [_line(notice) for notice in traj.notices]
    notices += _mimic_notice(coords) + _wrench_notice(traj, model, floating, options.wrench_frame)
    if options.actuators and not isinstance(options.actuators, dict) and not drives:
        notices.append(f"warning: {options.actuators} names no joint: no drive terms")
    pipeline = Pipeline(model, coords, gravity=options.gravity, floating=floating, wrench_frame=options.wrench_frame,
                        friction=options.friction, drives=drives, wrenches=options.wrenches, fixed=kept,
                        split=options.split, threads=threads)
    return Run(model, coords, traj, pipeline, notices, len(traj.notices))


def _label(robot):
    return robot if isinstance(robot, str) else "robot"


def _line(notice):
    return notice if notice.startswith("warning:") else f"note: {notice}"


def _mimic_notice(coords):
    followers = coords.followers
    if not followers:
        return []
    many = len(followers) > 1
    return [f"note: {len(followers)} mimic joint{'s' if many else ''} "
            f"({', '.join(followers[:4])}{', ...' if len(followers) > 4 else ''}) "
            f"follow{'' if many else 's'} {'their leaders' if many else 'its leader'}; "
            f"--no-mimic to give {'them columns of their' if many else 'it a column of its'} own"]


def _wrench_notice(traj, model, floating, frame):
    if not traj.wrenched:
        return []
    on_root = [name for name in traj.wrenched if not floating and next(
        link for link in model.links if link.name == name).body < 0]
    return [f"note: external wrenches on {', '.join(traj.wrenched)} ({frame} frame)"
            + (f"; those on {', '.join(on_root)} act on the fixed root and change no torque" if on_root else "")]
