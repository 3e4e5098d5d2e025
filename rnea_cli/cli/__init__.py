"""The `rnea` command: parses arguments, wires a source, the pipeline, a writer and a report.

Data goes to stdout, reports and diagnostics to stderr. Exit status: 0 done (within limits),
1 a limit exceeded (check, payload, scale, compare --max-rms), 2 bad input, 70 a bug of ours,
130 interrupted (Ctrl-C), 141 the reader of stdout went away.
"""

import gc
import os
import signal
import sys

import click

from ..errors import RneaError, printable


class Group(click.Group):
    """The one place where domain errors become a message and an exit status."""

    def invoke(self, ctx):
        code = handled(lambda: super(Group, self).invoke(ctx))
        if code:
            ctx.exit(code)


def handled(work, say=None):
    """Run work(); its exit status, with every failure as one line (say: where lines go)."""
    say = say or _say
    try:
        work()
        return 0
    except RneaError as exc:
        say(f"rnea: error: {exc}\n" if say is not _say else f"rnea: error: {exc}")
        return 2
    except BrokenPipeError:  # the reader went away (SIGPIPE ignored by our parent): end quietly
        _flush()
        os._exit(141)
    except KeyboardInterrupt:
        say("rnea: interrupted\n" if say is not _say else "rnea: interrupted")
        return 130
    except MemoryError:
        say("rnea: error: out of memory\n" if say is not _say else "rnea: error: out of memory")
        return 2
    except OSError as exc:  # reading or writing failed below the formats: a lost mount, a device
        if os.environ.get("RNEA_DEBUG"):
            raise
        where = exc.filename or "input/output"
        text = f"rnea: error: {printable(where, 300)}: {printable(exc.strerror or exc, 200)}"
        say(text + "\n" if say is not _say else text)
        return 2
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    except click.ClickException:
        raise
    except Exception as exc:  # a bug of ours: one line, unless RNEA_DEBUG asks for the traceback
        if os.environ.get("RNEA_DEBUG"):
            raise
        text = (f"rnea: internal error: {type(exc).__name__}: {printable(exc, 300)} (RNEA_DEBUG=1 shows where; "
                "please report it)")
        say(text + "\n" if say is not _say else text)
        return 70


def _say(text):
    if sys.stderr is not None:
        try:
            click.echo(printable(text), err=True)
        except (OSError, ValueError):
            pass


def _flush():
    try:
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rnea-cli", prog_name="rnea")
def main():
    """Robot inverse dynamics from a URDF: joint torques along a trajectory, checked against limits."""


from . import answers, check, pictures, tables  # noqa: E402,F401  (the commands register themselves)


def run():
    """Console-script entry point: restore SIGPIPE so `rnea ... | head` ends quietly."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    # the engine's 6x6 products gain nothing from BLAS threads, which would spin beside the
    # reader and writer threads; set before numpy is imported, unless the user chose
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # numpy's floating-point warnings (with source paths) would come before the one-line error that
    # names the input: every value that reaches an output is checked for being finite instead
    import warnings

    warnings.filterwarnings("ignore", category=RuntimeWarning)
    try:
        main()
    except KeyboardInterrupt:  # between commands' own handling, e.g. while importing
        _say("rnea: interrupted")
        sys.exit(130)
    finally:  # the objects die with the process: no final collection over them
        gc.freeze()


if __name__ == "__main__":
    run()
