"""The `rnea` group: the one place where domain errors become a message and an exit status."""

import os
import sys

import click

from ..errors import RneaError, printable


class Group(click.Group):
    """The one place where domain errors become a message and an exit status."""

    def main(self, *args, **kwargs):
        """Click's main, with its usage errors one line too (Click prints the usage, a hint and the
        error on four): 'rnea: error: <what> (see rnea <command> --help)', exit 2."""
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.ClickException as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # a bare `rnea`: the help, as Click shows it
                exc.show()
                sys.exit(exc.exit_code)
            path = exc.ctx.command_path.split(" ")[1:] if getattr(exc, "ctx", None) is not None else []
            command = " ".join(["rnea", *path])  # whatever name the program was started by
            hint = f" (see {command} --help)" if isinstance(exc, click.UsageError) else ""
            _say(f"rnea: error: {exc.format_message()}{hint}")
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            _say("rnea: interrupted")
            sys.exit(130)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx):
        stdout = sys.stdout
        if stdout is not None and not isinstance(stdout, _NamedStdout):
            sys.stdout = _NamedStdout(stdout)

        def work():
            super(Group, self).invoke(ctx)
            sys.stdout.flush()  # a full disk is said here, naming <stdout>, not at exit

        try:
            code = handled(work)
        finally:
            sys.stdout = stdout
        if code:
            ctx.exit(code)


class _NamedStdout:
    """sys.stdout whose write errors name it: '<stdout>: cannot write: No space left on device'."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        return self._call(self._stream.write, text)

    def flush(self):
        return self._call(self._stream.flush)

    def _call(self, method, *args):
        try:
            return method(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise RneaError("<stdout>", None, f"cannot write: {exc.strerror or exc}") from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


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
