"""Many trajectories in one command: each runs in a worker process, exactly as it would alone;
outputs go to --output-dir (same stem, the chosen format), reports are gathered (JUnit: one
<testsuite> per file; JSON: a list), and a summary table goes to stderr."""

import functools
import io
import json
import os
import stat
import sys

import click

from ..errors import RneaError, printable
from ..workers import parallel, usable_cores
from . import common

WRITES = {"torques": "csv", "wrenches": "csv", "compare": "csv", "report": "html", "plot": "png"}
OPTIONAL = {"compare"}  # writes (its residuals) only when asked: with --output-dir


def batchable(callback):
    """Run the command once per trajectory when given several (or --output-dir), else as it is."""
    @functools.wraps(callback)
    def command(trajectory, output_dir, jobs, **params):
        if len(trajectory) == 1 and output_dir is None:
            return callback(trajectory=trajectory[0], **params)
        return _many(click.get_current_context(), callback, list(trajectory), output_dir, jobs, params)
    return command


def _many(ctx, callback, files, output_dir, jobs, params):  # noqa: ARG001 (callback: the worker finds it by name)
    name = ctx.command.name
    writes = name in WRITES and (output_dir is not None or name not in OPTIONAL)
    given = ctx.get_parameter_source("output") == click.core.ParameterSource.COMMANDLINE
    if given and name != "plot":  # (plot's -o: only the figures' format)
        raise click.UsageError("-o with several trajectories: give --output-dir instead")
    common.engine_threads()  # RNEA_THREADS checked here: the workers' own is 1
    if writes and output_dir is None:
        raise click.UsageError(f"rnea {name} with several trajectories writes one output each: give --output-dir")
    stems = {}
    for path in files if writes else ():
        stem = os.path.splitext(os.path.basename(os.path.normpath(path)))[0]
        if stem in stems:
            raise RneaError(path, None, f"has the same name as {stems[stem]}: their outputs would collide")
        stems[stem] = path
    _read_once(files, params)
    from ..outputs.destinations import make_folder

    if output_dir is not None:
        make_folder(output_dir)
    guard = common.invocation().guard
    for path in files:  # (a worker knows only its own inputs, not an output linked to another's trajectory)
        guard.protect(path)
    work = []
    for path in files:
        one = dict(params, trajectory=path)
        if writes:
            one["output"] = os.path.join(output_dir, _stem(path) + "." + _extension(name, params))
            guard.refuse_input(one["output"])
        one["quiet"] = True  # the summary table says it all
        work.append((name, one))
    jobs = jobs or usable_cores()
    results = _run_all(work, jobs, [k for k, path in enumerate(files) if not _openable_anywhere(path)], guard)
    _gather(name, params, files, results, output_dir)
    codes = [code for code, *_ in results]
    ctx.exit(next((code for code in (70, 2, 1) if code in codes), max(codes)))  # a bug of ours first, then bad input


def _stem(path):
    return os.path.splitext(os.path.basename(os.path.normpath(path)))[0]


def _extension(name, params):
    fmt = params.get("fmt")
    if name in ("torques", "wrenches") and fmt:
        return {"yaml": "yaml", "json": "json", "parquet": "parquet", "arrow": "arrow"}.get(fmt, "csv")
    if name == "plot" and params.get("output"):
        return os.path.splitext(params["output"])[1].lstrip(".") or "png"
    return WRITES[name]


def _read_once(files, params):
    """Refuse inputs that several runs cannot each read: standard input given twice, and a ROBOT,
    --limits or --actuators that is not a regular file (a pipe gives its text to the first run only)."""
    own = [f for f in files if f == "-" or os.path.abspath(f) in ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")]
    if len(own) > 1:
        raise RneaError(own[0], None, "standard input is given twice among the trajectories: it can be read once")
    for what, key in (("ROBOT", "robot"), ("--limits", "limits_file"), ("--actuators", "actuators_file")):
        path = params.get(key)
        if path and _kind_of(path) not in (None, "file"):
            raise RneaError(path, None, f"{what} is not a regular file (a pipe?): with several trajectories each run "
                                        "reads it, and a pipe is read once; give a file")


def _kind_of(path):
    """'file', 'folder', 'other' (a pipe, a device, standard input) or None (not there: the command says so)."""
    if path == "-":
        return "other"
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return "file" if stat.S_ISREG(mode) else "folder" if stat.S_ISDIR(mode) else "other"


def _openable_anywhere(path):
    """Whether a worker process opens the trajectory as this one would, by its name. Standard
    input ('-', /dev/stdin) and the descriptors of /dev/fd/N are this process's own (a worker's
    standard input is /dev/null, a started one has none of them): they are read here."""
    own = ("/dev/stdin/", "/dev/fd/", "/proc/self/fd/", f"/proc/{os.getpid()}/fd/")
    return path != "-" and not (os.path.abspath(path) + "/").startswith(own)


def _run_all(work, jobs, here, guard):
    """The results of the work, in order: in `jobs` worker processes, or here for one job; the
    jobs of `here` (indices) in this process, one after another, while the workers run. Each
    process reads the robot once (its own cache) and runs the engine on one thread: the parallel
    work is the files'. Each job's outputs are guarded by a copy of guard (the batch's)."""
    from ..run.session import Models

    one = functools.partial(_one, models=Models(), guard=guard)  # (a worker has its own copy, forked or pickled)
    local = [work[k] for k in here]
    away = [job for k, job in enumerate(work) if k not in set(here)]
    results = parallel(one, [(job,) for job in away], jobs, here=(lambda: [one(job) for job in local]) if local else None)
    mine, theirs = (iter(results[0]), iter(results[1:])) if local else (iter(()), iter(results))
    return [next(mine) if k in set(here) else next(theirs) for k in range(len(work))]


def _one(job, models, guard):
    """(exit status, stdout bytes, stderr text, summary) of one trajectory's command, its outputs
    guarded by a copy of guard: the batch's inputs, and temp files of its own."""
    from .group import handled

    from .group import main

    name, params = job
    callback = main.commands[name].callback
    out, err = io.BytesIO(), io.StringIO()
    stdout, stderr = sys.stdout, sys.stderr
    wrapper = sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = err
    record = common.Invocation(models=models, threads=1, guard=guard.copy())
    try:
        context = click.Context(main.commands[name], info_name=name, obj=record)
        try:
            code = handled(lambda: context.invoke(callback, trajectory=(params["trajectory"],), output_dir=None,
                                                  jobs=None, **{k: v for k, v in params.items() if k != "trajectory"}),
                           say=err.write)
        except click.ClickException as exc:  # a usage error found by the command itself: as a lone run says it
            err.write(f"rnea: error: {exc.format_message()} (see rnea {name} --help)\n")
            code = exc.exit_code
    finally:
        wrapper.flush()
        sys.stdout, sys.stderr = stdout, stderr
    data = out.getvalue()
    wrapper.detach()  # or closing the wrapper would close out
    if code == 130:  # Ctrl-C while a file ran here (--jobs 1): the whole run stops, not only this file
        raise KeyboardInterrupt
    return code, data, err.getvalue(), _summary(code, err.getvalue(), record)


def _summary(code, errors, record):
    run, check = record.run, record.check
    if code not in (0, 1) or run is None:
        lines = [line for line in errors.splitlines() if line.startswith("rnea: ")]
        verdict = "bad input" if code == 2 and lines else "failed"
        return {"samples": None, "use": None, "joint": None, "verdict": verdict,
                "error": lines[-1] if lines else errors.strip()}
    samples = run.pipeline.peaks["effort"].count
    if check is not None and check.checks:
        worst = max(check.checks, key=lambda c: c.utilisation)
        use, joint = worst.utilisation, f"{worst.joint} {worst.quantity}"
    else:
        peaks = run.pipeline.peaks["effort"]
        shares = [(peaks.peak[i] / j.limits.effort, j.name) for i, j in enumerate(run.coords.joints) if j.limits.effort]
        use, joint = max(shares) if shares else (None, None)
    return {"samples": samples, "use": use, "joint": joint, "verdict": "limit exceeded" if code == 1 else "ok"}


def _gather(name, params, files, results, output_dir):
    """The reports on stdout, gathered; then the summary on stderr."""
    fmt = params.get("fmt")
    outputs = [out.decode() for _, out, _, _ in results]
    if name in ("check", "payload", "scale", "compare") and fmt == "json":
        docs = [json.loads(text) if text.strip() else None for text in outputs]
        click.echo(json.dumps([dict(doc, trajectory=path) if isinstance(doc, dict) else
                               {"trajectory": path, "error": results[k][3].get("error", "")}
                               for k, (path, doc) in enumerate(zip(files, docs))], indent=2, allow_nan=False))
    elif name == "check" and fmt == "junit":
        click.echo(_junit(outputs, files, results), nl=False)
    elif name == "compare" and fmt == "csv":
        click.echo(_one_csv(outputs, files), nl=False)
    else:
        from ..outputs.checkreport import bad_input

        for path, text, (code, *_, summary) in zip(files, outputs, results):
            if not text and name == "check" and fmt in ("text", "github", "markdown") and code not in (0, 1):
                text = bad_input(fmt, path, summary.get("error", ""), _kind(code))  # CI sees the file not checked
            if not text:
                continue
            if fmt in (None, "text", "csv") and (name not in WRITES or name in OPTIONAL):  # a report, headed
                click.echo(printable(f"== {path}"))
            click.echo(text, nl=False)
    for (code, _, errors, _), path in zip(results, files):  # (with --quiet too: errors are always said)
        for line in errors.splitlines():
            if line.startswith("rnea: internal error: "):  # (which names no file: it is a bug's)
                line = f"rnea: internal error: {path}: {line[len('rnea: internal error: '):]}"
            if line.startswith("rnea: error") or line.startswith("rnea: internal"):
                click.echo(printable(line), err=True)
    if not params.get("quiet"):
        _summary_table(files, [r[3] for r in results])


def _one_csv(outputs, files):
    """The CSV tables of the files as one, its first column the trajectory (a file that could not
    be read has no rows: its error is on stderr)."""
    import csv

    out = io.StringIO()
    writer, header = csv.writer(out, lineterminator="\n"), None
    for path, text in zip(files, outputs):
        rows = list(csv.reader(io.StringIO(text, newline="")))  # (a quoted cell may hold a line break)
        if not rows:
            continue
        if header is None:
            header = rows[0]
            writer.writerow(["trajectory"] + header)
        writer.writerows([path] + row for row in rows[1:])
    return out.getvalue()


def _kind(code):
    return "bad input" if code == 2 else "internal error"


def _junit(outputs, files, results):
    """One JUnit document of the files' suites: each file's <testsuite> as its worker wrote it
    (read back by ElementTree), or one with the error of a file not checked; totals summed."""
    import xml.etree.ElementTree as ET

    from ..outputs.checkreport import junit_document, junit_error_suite

    suites = []
    for text, path, (code, *_, summary) in zip(outputs, files, results):
        if text.strip():
            suites += ET.fromstring(text).findall("testsuite")
        elif code not in (0, 1):  # a file not read, or stopped by a bug: a suite with its error
            from ..errors import printable

            message = printable(summary.get("error", "").removeprefix("rnea: error: "), 2000)
            suites.append(junit_error_suite(path, message, _kind(code)))
    return junit_document(suites)


def _summary_table(files, summaries):
    from rich import box
    from rich.table import Table

    from ..outputs.report import add_row, percent

    console = common.make_console()
    plain = not console.is_terminal
    table = Table(box=None if plain else box.SIMPLE_HEAD, pad_edge=False)
    for title in ("trajectory", "samples", "highest use", "at", "verdict"):
        table.add_column(title, justify="right" if title in ("samples", "highest use") else "left",
                         no_wrap=title != "trajectory", overflow="fold")
    for path, s in zip(files, summaries):
        add_row(table, path, "" if s["samples"] is None else str(s["samples"]),
                "" if s["use"] is None else percent(s["use"]), s["joint"] or "", s["verdict"])
    console.print(table)
