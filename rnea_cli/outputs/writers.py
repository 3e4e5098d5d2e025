"""Tables out: CSV (streamed, formatted by polars), JSON, YAML, Parquet and Arrow IPC.

Every float is written in its shortest round-trip form, so it reads back bit for bit. A file
is written whole or not at all: on Linux into an unnamed file (O_TMPFILE) that is linked into
place only once complete, so that no signal, not even SIGKILL, leaves a partial file behind;
elsewhere into a hidden temp file that a handler removes on SIGTERM, SIGHUP and SIGINT. The file
replaced is the one a symbolic link names (the link stays), and it keeps its mode and owner.
"""

import contextlib
import errno
import io
import json
import os
import signal
import stat
import sys

import numpy as np

from ..errors import RneaError

IN_FLIGHT_BYTES = 1 << 25  # of blocks handed to the writer thread and not yet written
FORMATS = ("csv", "json", "yaml", "parquet", "arrow")
EXTENSIONS = {".csv": "csv", ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".parquet": "parquet",
              ".arrow": "arrow", ".feather": "arrow", ".ipc": "arrow"}


def output_format(path, explicit=None):
    if explicit:
        return explicit
    if path in (None, "-"):
        return "csv"
    return EXTENSIONS.get(os.path.splitext(str(path))[1].lower(), "csv")


class _Checked:
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


INPUTS = set()  # (device, inode) of the files this run reads: never an output


def protect(path):
    """Mark a file this run reads, so that `destination` refuses to write over it."""
    try:
        if path not in (None, "-"):
            info = os.stat(path)
            INPUTS.add((info.st_dev, info.st_ino))
    except (OSError, TypeError, ValueError):
        pass  # not a file (yet): its reader says what is wrong


def refuse_input(path):
    """An error if path is (or links to, or is a hard link of) a file this run reads."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return
    if (info.st_dev, info.st_ino) in INPUTS:
        raise RneaError(path, None, "is an input of this run (the robot, a trajectory or a YAML file): the output "
                                    "must go elsewhere")


@contextlib.contextmanager
def destination(path):
    """A binary stream for path ('-' or None: stdout). A regular file (the one a symbolic link
    names) appears, or is replaced keeping its mode and owner, only if the block succeeds; a device
    or pipe (/dev/null, a FIFO) is written in place."""
    if path in (None, "-"):
        stdout = getattr(sys.stdout, "buffer", None)
        if stdout is None or stdout.closed:
            raise RneaError("<stdout>", None, "standard output is closed (use -o FILE)")
        yield _Checked(stdout, "<stdout>")
        _Checked(stdout, "<stdout>").flush()
        return
    path = os.fspath(path)
    if not path:
        raise RneaError("-o", None, "the output file name is empty")
    target = _target(path)
    old = _existing(target)
    if old is not None and stat.S_ISDIR(old.st_mode):
        raise RneaError(path, None, "cannot write: is a directory")
    refuse_input(path)
    _refuse_read_only(path, target, old)
    if old is not None and not stat.S_ISREG(old.st_mode):
        try:
            stream = open(target, "wb")
        except OSError as exc:
            raise RneaError(path, None, f"cannot write: {exc.strerror}") from None
        with _closing(stream):
            yield _Checked(stream, path)
            _Checked(stream, path).flush()
        return
    if old is not None and old.st_nlink > 1:
        raise RneaError(path, None, f"cannot write: it has {old.st_nlink - 1} more hard link(s), which a new file "
                                    "in its place would leave with the old content (remove it first, or write "
                                    "elsewhere)")
    folder = os.path.dirname(target)
    fd = _unnamed(folder)
    if fd is not None:
        yield from _write_unnamed(fd, path, target, old)
    else:
        yield from _write_temp(folder, path, target, old)


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
        yield _Checked(stream, path)
        _Checked(stream, path).flush()
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


_TEMPS = set()  # temp files to remove if a signal ends the process (where there is no O_TMPFILE)


def _remove_temps(signum, frame):
    for tmp in list(_TEMPS):
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _write_temp(folder, path, target, old):
    try:
        import tempfile  # only where there is no O_TMPFILE

        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    except OSError as exc:
        raise RneaError(path, None, f"cannot write: {exc.strerror}") from None
    _TEMPS.add(tmp)
    for signum in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)):
        if signum is not None and signal.getsignal(signum) in (signal.SIG_DFL, None):
            with contextlib.suppress(ValueError):  # not the main thread
                signal.signal(signum, _remove_temps)
    try:
        with _closing(os.fdopen(fd, "wb")) as stream:
            yield _Checked(stream, path)
            _Checked(stream, path).flush()
        try:
            os.chmod(tmp, _mode())  # (mkstemp's is 0600)
            _keep(tmp, old)
            os.replace(tmp, target)
        except OSError as exc:
            raise RneaError(path, None, f"cannot write: {exc.strerror}") from None
    finally:
        _TEMPS.discard(tmp)
        with contextlib.suppress(OSError):
            os.unlink(tmp)


class _Sink:
    """The stream a Parquet or Arrow writer writes into, which takes nothing once dropped (and is
    not the writer's to close)."""

    def __init__(self, stream):
        self.stream, self.dropped, self.written, self.closed = stream, False, 0, False

    def write(self, data):
        if not self.dropped:
            self.stream.write(data)
            self.written += len(data)
        return len(data)

    def tell(self):
        return self.written

    def flush(self):
        if not self.dropped and hasattr(self.stream, "flush"):
            self.stream.flush()

    def close(self):
        self.closed = True


class TableWriter:
    """Writes named float columns; `keys[k]` is the path of column k in a JSON/YAML document,
    e.g. ("time",) or ("tau", "shoulder"); CSV, Parquet and Arrow use `names[k]`. As a context
    manager it closes on success, and on an error drops the blocks not yet written."""

    def __init__(self, stream, fmt, names, keys, background=False):
        self.stream, self.fmt, self.names, self.keys = stream, fmt, names, keys
        self.blocks, self._pending, self._pool, self._arrow = [], [], None, None
        if background and fmt in ("csv", "parquet", "arrow"):  # written in a thread while the next block is computed
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(1, thread_name_prefix="rnea-writer")
        self._header = fmt == "csv"

    def write(self, block):
        """block: (N, len(names)) floats."""
        if self.fmt in ("json", "yaml"):
            self.blocks.append(np.array(block, dtype=float))
            return
        write = self._write_csv if self.fmt == "csv" else self._write_arrow
        if self._pool is None:
            write(block)
            return
        # blocks in flight: bounded memory; a failed write raises here at once
        while self._pending and (self._pending[0][0].done() or
                                 sum(n for _, n in self._pending) + block.nbytes > IN_FLIGHT_BYTES):
            self._pending.pop(0)[0].result()
        self._pending.append((self._pool.submit(write, block), block.nbytes))

    def _write_csv(self, block):
        import polars as pl  # shortest round-trip digits, one notation for every value of a file

        if self._header:  # written with the first rows, so a bad input prints nothing
            self._header = False
            self.stream.write((",".join(_csv_name(n) for n in self.names) + "\n").encode())
        if len(block):  # formatted into memory, then written through the stream that names the output
            text = io.BytesIO()
            pl.DataFrame({f"c{k}": block[:, k] for k in range(block.shape[1])}).write_csv(text, include_header=False)
            self.stream.write(text.getbuffer())

    def _write_arrow(self, block):
        import pyarrow as pa

        from ..trajectory.sources.tables import arrow_of

        table = pa.Table.from_arrays([arrow_of(block[:, k]) for k in range(block.shape[1])], names=list(self.names))
        try:
            if self._arrow is None:
                self._sink = _Sink(getattr(self.stream, "stream", self.stream))
                if self.fmt == "parquet":
                    import pyarrow.parquet as pq

                    # no dictionary pages: computed doubles hardly repeat, and trying them cost 3-4x
                    # the writing time and a larger file (benchmarks/README.md)
                    self._arrow = pq.ParquetWriter(self._sink, table.schema, use_dictionary=False)
                else:
                    self._arrow = pa.ipc.new_file(self._sink, table.schema)
            self._arrow.write_table(table)
        except OSError as exc:
            raise RneaError(getattr(self.stream, "label", "output"), None, f"cannot write: {exc}") from None

    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace):
        if kind is None:
            try:
                self.close()
                return
            except BaseException:  # a failed write, or Ctrl-C while the last blocks are written
                self._drop()
                raise
        self._drop()

    def _drop(self):
        """After an error: no more output than was already on its way, and no footer: a Parquet
        writer freed writes one, which would make a cut-off table on stdout read as whole (or, into
        a closed file at garbage collection, print "Exception ignored")."""
        try:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
        finally:
            if self._arrow is not None:
                self._sink.dropped = True
                self._arrow = None

    def close(self):
        try:
            for job, _ in self._pending:
                job.result()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
        if self.fmt == "csv":
            self._write_csv(np.empty((0, len(self.names))))
            return
        if self.fmt in ("parquet", "arrow"):
            if self._arrow is None:
                self._write_arrow(np.empty((0, len(self.names))))
            try:
                self._arrow.close()
            except OSError as exc:
                raise RneaError(getattr(self.stream, "label", "output"), None, f"cannot write: {exc}") from None
            return
        data = np.concatenate(self.blocks) if self.blocks else np.empty((0, len(self.names)))
        doc = {}
        for k, key in enumerate(self.keys):
            node = doc
            for part in key[:-1]:
                node = node.setdefault(part, {})
            node[key[-1]] = data[:, k].tolist()
        if self.fmt == "json":
            text = json.dumps(doc) + "\n"
        else:
            import yaml

            dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
            text = yaml.dump(doc, Dumper=dumper, sort_keys=False, default_flow_style=None, width=100)
        self.stream.write(text.encode())


def _csv_name(name):
    """A header cell: quoted when it holds a delimiter, quote or line break."""
    return '"' + name.replace('"', '""') + '"' if any(c in name for c in ',"\r\n') else name
