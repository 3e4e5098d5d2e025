"""What the commands share beyond their options: the consoles, and `open_run`, the library's run as a
command shows it (progress, notices), with the invocation's cache of robots and thread count."""

import os
import time as _time
from dataclasses import dataclass, field

import click

from ..errors import RneaError

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


def _guard():
    from ..outputs.destinations import Guard

    return Guard()


@dataclass
class Invocation:
    """What one command is given beyond its options, and what it leaves for the caller: click's
    `ctx.obj`. A lone command gets a fresh one; batch mode (cli/batch.py) gives each file's command
    one with its process's cache of robots, one engine thread and a copy of the batch's Guard, and
    reads back the run and check."""

    models: object = None  # a session.Models, or None: each robot read when asked
    threads: int | None = None  # the engine's; None: RNEA_THREADS, else the usable cores
    run: object = None  # the Run the command opened
    check: object = None  # the LimitCheck it made
    guard: object = field(default_factory=_guard)  # the destinations.Guard of its outputs


def invocation():
    context = click.get_current_context(silent=True)
    return Invocation() if context is None else context.ensure_object(Invocation)


def run_options(options, **computing):
    """The library's RunOptions of a command's click options (and what the command computes)."""
    from ..run.session import RunOptions

    return RunOptions(input_format=options.get("input_format"), columns=options.get("columns"),
                      preset=options.get("preset"), time_unit=options.get("time_unit"), topic=options.get("topic"),
                      message=options.get("message"), publisher=options.get("publisher"),
                      degrees=options.get("degrees", False), dt=options.get("dt"), smooth=options.get("smooth"),
                      resample=options.get("resample"), xacro_args=options.get("xacro_args") or (),
                      package_paths=options.get("package_paths") or (), mimic=not options.get("no_mimic", False),
                      floating=options.get("floating_base", False), gravity=options.get("gravity", (0, 0, -9.81)),
                      wrench_frame=options.get("wrench_frame", "world"), threads=engine_threads(), **computing)


def load_model(options, console, fixed_joints=False):
    """The robot of the command's ROBOT options (through the invocation's cache), its warnings said."""
    from ..run.session import load_model as load

    cache, opts = invocation().models, run_options(options)
    model = cache.load(options["robot"], opts, fixed_joints) if cache is not None else load(
        options["robot"], opts, fixed_joints)
    for text in model.warnings:
        say(console, f"warning: {text}")
    return model


class Shown:
    """A library Run as a command shows it: a progress line on a terminal while its blocks go by,
    and its notices (with the command's own, `note`) said once they all went through, so that bad
    input gets its one line on stderr and nothing else."""

    def __init__(self, run, console, quiet):
        self.run, self.console, self.quiet, self.later, self._opened = run, console, quiet, [], len(run.notices)

    def __getattr__(self, name):  # the run's model, coords, traj, pipeline
        return getattr(self.run, name)

    def note(self, text):
        self.later.append(text)

    def blocks(self, *, dynamics=True):
        yield from self.run.blocks(wrap=lambda chunks: _with_progress(chunks, self.console, not self.quiet),
                                   dynamics=dynamics)
        notices = self.run.notices
        for text in notices[:self._opened] + self.later + notices[self._opened:]:
            say(self.console, text)


def open_run(options, console, *, quiet=False, before_reading=None, **computing):
    """The library's open_run of the command's options; computing: RunOptions' friction,
    actuators, wrenches, fixed, split, effort, static."""
    from ..run.session import open_run as opened

    here = invocation()
    for path in (options["robot"], options["trajectory"], computing.get("actuators"), options.get("limits")):
        here.guard.protect(path)
    run = opened(options["robot"], options["trajectory"], run_options(options, **computing), models=here.models,
                 before_reading=before_reading)
    context = click.get_current_context(silent=True)
    if context is not None:  # a command that stops before reading it all closes its file
        context.call_on_close(run.traj.close)
    here.run = run  # for the summary of a run among several
    return Shown(run, console, quiet)


def destination(path):
    """The destination (destinations.py) of an output of the command, guarded by its invocation's Guard."""
    from ..outputs.destinations import destination as guarded

    return guarded(path, invocation().guard)


def engine_threads():
    """Threads for the engine: the invocation's, else RNEA_THREADS, else the usable cores."""
    given = invocation().threads
    if given is not None:
        return given
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
