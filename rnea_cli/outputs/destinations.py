"""Where an output goes: a file written whole or not at all, whatever its format (writers.py).

On Linux a file is written into an unnamed file (O_TMPFILE) that is linked into place only once
complete, so that no signal, not even SIGKILL, leaves a partial file behind; elsewhere into a hidden
temp file that a handler removes on SIGTERM and SIGHUP (Ctrl-C's KeyboardInterrupt removes it on the
way out). The file replaced is the one a symbolic link names (the link stays), and it keeps its mode
and owner. A Guard holds what one run's outputs are kept from: the files it reads, and its temp files.
"""

import contextlib
import errno
import os
import signal
import stat
import sys

from ..errors import RneaError


class NamedStream:
    """A binary stream whose write errors name the output (not 'output', not a temp file)."""

    def __init__(self, stream, label):
        self.stream, self.label = stream, label

    def write(self, data):
        try:
            return self.stream.write(data)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise RneaError(self.label, None, f"cannot write: {exc.strerror or exc}") from None

    def flush(self):
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise RneaError(self.label, None, f"cannot write: {exc.strerror or exc}") from None

    def __getattr__(self, name):
        return getattr(self.stream, name)


class Guard:
    """What one run's outputs are kept from: a file the run reads (`protect`), never an output; and
    a temp file left behind when a signal ends the process. The CLI makes one per command (a batch,
    one per file: cli/batch.py); a library caller may make its own, or let `destination` make one.

    unnamed: write through Linux's unnamed file where there is one; False: the hidden temp file, as
    on a system without it (so that both ways are tested on Linux)."""

    SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)

    def __init__(self, unnamed=True, inputs=()):
        self.unnamed, self.inputs = unnamed, set(inputs)  # inputs: (device, inode) of the files read
        self._temps, self._previous = set(), {}  # _previous: signal -> the handler ours replaced

    def copy(self):
        """A Guard for another run among several (a batch's file): the same inputs and way of
        writing, temp files of its own."""
        return Guard(self.unnamed, self.inputs)

    def protect(self, path):
        """Mark a file this run reads, so that `destination` refuses to write over it."""
        try:
            if path not in (None, "-"):
                info = os.stat(path)
                self.inputs.add((info.st_dev, info.st_ino))
        except (OSError, TypeError, ValueError):
            pass  # not a file (yet): its reader says what is wrong

    def refuse_input(self, path):
        """An error if path is (or links to, or is a hard link of) a file this run reads."""
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            return
        if (info.st_dev, info.st_ino) in self.inputs:
            raise RneaError(path, None, "is an input of this run (the robot, a trajectory or a YAML file): the "
                                        "output must go elsewhere")

    @contextlib.contextmanager
    def removing(self, tmp):
        """The block, with tmp removed if SIGTERM or SIGHUP ends the process meanwhile. A signal's
        handler is the process's, not this Guard's: it is installed only while the Guard has a temp
        file, where the handler is the default one (or another Guard's, which ours then hands the
        signal on to), and the one it replaced is put back when the last temp file is done, so that
        a process making many Guards (a batch, a library caller) keeps the handlers it had."""
        if not self._temps:
            for signum in self.SIGNALS:
                before = signal.getsignal(signum)
                if before in (signal.SIG_DFL, None) or isinstance(getattr(before, "__self__", None), Guard):
                    with contextlib.suppress(ValueError):  # not the main thread
                        signal.signal(signum, self._remove_temps)
                        self._previous[signum] = before
        self._temps.add(tmp)
        try:
            yield
        finally:
            self._temps.discard(tmp)
            if not self._temps:
                for signum, before in list(self._previous.items()):
                    if signal.getsignal(signum) == self._remove_temps:
                        with contextlib.suppress(ValueError):
                            signal.signal(signum, before or signal.SIG_DFL)
                    del self._previous[signum]

    def _remove_temps(self, signum, frame):
        for tmp in list(self._temps):
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        signal.signal(signum, self._previous.pop(signum, None) or signal.SIG_DFL)
        os.kill(os.getpid(), signum)  # again, to the handler before ours: the default ends the process


@contextlib.contextmanager
def destination(path, guard=None):
    """A binary stream for path ('-' or None: stdout). A regular file (the one a symbolic link
    names) appears, or is replaced keeping its mode and owner, only if the block succeeds; a device
    or pipe (/dev/null, a FIFO) is written in place. guard: the run's Guard (the files it reads are
    refused); None: one of the call's own, which refuses nothing."""
    guard = guard if guard is not None else Guard()
    if path in (None, "-"):
        stdout = getattr(sys.stdout, "buffer", None)
        if stdout is None or stdout.closed:
            raise RneaError("<stdout>", None, "standard output is closed (use -o FILE)")
        yield NamedStream(stdout, "<stdout>")
        NamedStream(stdout, "<stdout>").flush()
        return
    path = os.fspath(path)
    if not path:
        raise RneaError("-o", None, "the output file name is empty")
    target = _target(path)
    old = _existing(target)
    if old is not None and stat.S_ISDIR(old.st_mode):
        raise RneaError(path, None, "cannot write: is a directory")
    guard.refuse_input(path)
    _refuse_read_only(path, target, old)
    if old is not None and not stat.S_ISREG(old.st_mode):
        try:
            stream = open(target, "wb")
        except OSError as exc:
            raise RneaError(path, None, f"cannot write: {exc.strerror}") from None
        with _closing(stream):
            yield NamedStream(stream, path)
            NamedStream(stream, path).flush()
        return
    if old is not None and old.st_nlink > 1:
        raise RneaError(path, None, f"cannot write: it has {old.st_nlink - 1} more hard link(s), which a new file "
                                    "in its place would leave with the old content (remove it first, or write "
                                    "elsewhere)")
    folder = os.path.dirname(target)
    fd = _unnamed(folder) if guard.unnamed else None
    if fd is not None:
        yield from _write_unnamed(fd, path, target, old)
    else:
        yield from _write_temp(folder, path, target, old, guard)


def _target(path):
    """The file path names, as an absolute path through every symbolic link (a relative one read
    from its link's folder), so that the new file is made beside that file, on its file system,
    and renamed over it, not over the link. A dangling link names the file it would point to."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RneaError(path, None, f"cannot write: {exc.strerror}") from None
    except ValueError:
        pass  # (a NUL in the name: open() says so)
    return os.path.realpath(path)


def _existing(target):
    """Its stat info, or None where there is no such file (yet)."""
    try:
        return os.stat(target)
    except (OSError, ValueError):
        return None


def _refuse_read_only(path, target, old):
    """Refuse an output the shell's > would refuse, "Permission denied": a file, or the folder its
    new version is made in, that this process may not write. Root may write anything, so for root
    too a file or folder without a write bit for anyone is refused: its owner meant it to stay."""
    if old is not None and _read_only(target, old, os.W_OK):
        whom = target if os.path.islink(path) else "the file"
        raise RneaError(path, None, f"cannot write: Permission denied ({whom} is read-only)")
    if old is not None and not stat.S_ISREG(old.st_mode):
        return  # a device or pipe is written in place
    folder = os.path.dirname(target)
    there = _existing(folder)
    if there is not None and _read_only(folder, there, os.W_OK | os.X_OK):
        raise RneaError(path, None, f"cannot write: Permission denied (its folder {folder} is read-only)")


def _read_only(path, info, access):
    """Whether this process may not write path (stat info), or no one may (no write bit)."""
    effective = os.access in os.supports_effective_ids
    return not info.st_mode & 0o222 or not os.access(path, access, effective_ids=effective)


def make_folder(path):
    """The folder --output-dir names, made as `mkdir -p` would, but not in a read-only folder (as
    a file is not: root too)."""
    if not os.path.isdir(path):
        parent = os.path.dirname(os.path.realpath(path))
        while not os.path.isdir(parent):  # (the root is one)
            parent = os.path.dirname(parent)
        if _read_only(parent, os.stat(parent), os.W_OK | os.X_OK):
            raise RneaError(path, None, f"cannot make the folder: Permission denied ({parent} is read-only)")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise RneaError(path, None, f"cannot make the folder: {exc.strerror}") from None


def _mode():
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask  # as open() would make it


def _keep(file, old):
    """Give the new file (a descriptor, or a path) the mode of the one it replaces (stat info; None:
    there is none), and its owner and group as far as this process may (root: both; others: a
    group they are in)."""
    if old is None:
        return
    if hasattr(os, "chown"):
        for owner in (old.st_uid, -1):
            try:
                os.chown(file, owner, old.st_gid)
                break
            except OSError:
                continue
    os.chmod(file, stat.S_IMODE(old.st_mode))  # after chown, which clears set-user/group-ID


def _unnamed(folder):
    """A file descriptor of an unnamed file in folder (Linux O_TMPFILE), or None where there is none."""
    if not hasattr(os, "O_TMPFILE") or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(folder, os.O_TMPFILE | os.O_WRONLY, _mode())
    except OSError:
        return None  # a file system without O_TMPFILE support; or no such folder (said by _write_temp)


@contextlib.contextmanager
def _closing(stream):
    """Close the stream after the block; if the block failed, a failure to flush on closing does
    not hide its error (a full disk fails the write first, then the close)."""
    try:
        yield stream
    finally:
        try:
            stream.close()
        except OSError:
            if sys.exc_info()[0] is None:
                raise


def _write_unnamed(fd, path, target, old):
    with _closing(os.fdopen(fd, "wb")) as stream:
        yield NamedStream(stream, path)
        NamedStream(stream, path).flush()
        # complete: give it a name. link() refuses an existing name, so over one go through a
        # hidden name and a rename (atomic). A dir_fd makes Python call linkat(AT_SYMLINK_FOLLOW),
        # which links the file /proc/self/fd/N stands for, not the link itself
        folder, name = os.path.split(target)
        source = f"/proc/self/fd/{fd}"
        directory = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            _keep(fd, old)
            try:
                os.link(source, name, dst_dir_fd=directory, follow_symlinks=True)
                return
            except FileExistsError:
                pass
            tmp = f".{name}.{os.getpid()}.tmp"
            try:
                os.link(source, tmp, dst_dir_fd=directory, follow_symlinks=True)
                os.replace(tmp, name, src_dir_fd=directory, dst_dir_fd=directory)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=directory)
                raise
        except OSError as exc:
            raise RneaError(path, None, f"cannot write: {exc.strerror}") from None
        finally:
            os.close(directory)


def _write_temp(folder, path, target, old, guard):
    try:
        import tempfile  # only where there is no O_TMPFILE

        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    except OSError as exc:
        raise RneaError(path, None, f"cannot write: {exc.strerror}") from None
    with guard.removing(tmp):
        try:
            with _closing(os.fdopen(fd, "wb")) as stream:
                yield NamedStream(stream, path)
                NamedStream(stream, path).flush()
            try:
                os.chmod(tmp, _mode())  # (mkstemp's is 0600)
                _keep(tmp, old)
                os.replace(tmp, target)
            except OSError as exc:
                raise RneaError(path, None, f"cannot write: {exc.strerror}") from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
