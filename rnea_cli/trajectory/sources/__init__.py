"""Trajectory sources: one reader per format behind one call, `open_source`.

Each reader maps its file onto the groups of a `layout.Layout` (q, qd, qdd, the floating base,
external wrenches, measured effort) and returns a `base.Trajectory` whose chunks it reads
lazily, in bounded memory. Deriving what is missing (finite differences, smoothing) is not a
reader's job: see `derive`.
"""

import os
import sys

from ...errors import TrajectoryError
from .base import Chunk, Trajectory
from .layout import PRESETS, ColumnNames, Layout

EXTENSIONS = {".csv": "csv", ".yaml": "yaml", ".yml": "yaml", ".json": "json", ".parquet": "parquet",
              ".arrow": "arrow", ".feather": "arrow", ".ipc": "arrow", ".bag": "bag", ".db3": "bag", ".mcap": "bag"}
FORMATS = ("csv", "yaml", "json", "parquet", "arrow", "bag")

__all__ = ["Chunk", "Trajectory", "open_source", "format_of", "FORMATS", "EXTENSIONS"]


def format_of(path, explicit=None):
    """The format of a trajectory path from an explicit choice, the extension, or a ROS 2 bag
    directory; None for standard input (sniffed)."""
    if explicit:
        return explicit
    if path == "-":
        return None
    if os.path.isdir(path):
        return "bag"
    fmt = EXTENSIONS.get(os.path.splitext(str(path))[1].lower())
    if fmt is None:
        raise TrajectoryError(path, None, "unknown trajectory format: use a .csv, .yaml, .json, .parquet, .arrow, "
                                          ".bag, .db3 or .mcap file, a ROS 2 bag folder, or --input-format")
    return fmt


def open_source(path, coords, *, fmt=None, floating=False, links=(), effort=False, columns=None, preset=None,
                time_unit=None, topic=None, message=None, publisher=None, workers=1):
    """Open a trajectory (a path, or '-' for standard input) for `coords` (a Model or
    Coordinates), its samples still unread. floating: read the base columns; links: links whose
    external wrench columns may be present; effort: read measured effort too (optional).
    columns / preset: role templates for tabular files; time_unit: of their time column;
    topic / message / publisher: which topic, which JointTrajectory message, which JointState
    publisher (a ROS 1 caller id or a header.frame_id) of a bag; workers: processes
    that may read a large bag (more than 1: as with multiprocessing, a script that asks for them
    guards its top level with `if __name__ == "__main__":`)."""
    label = "<stdin>" if path == "-" else str(path)
    fmt = format_of(path, fmt)
    layout = Layout(coords, floating, links, effort)
    if preset is not None:
        if columns is not None:
            raise TrajectoryError(label, None, "--preset and --columns: give one of them")
        columns, unit = PRESETS[preset]
        time_unit = time_unit or unit
    if fmt == "bag":
        if columns is not None:
            raise TrajectoryError(label, None, "--columns and --preset are for tables; a bag's joints go by name")
        if time_unit is not None:
            raise TrajectoryError(label, None, "--time-unit is for a table's time column; a bag's stamps are "
                                               "nanoseconds, read as such")
        if path == "-":
            raise TrajectoryError(label, None, "a ROS bag is opened by its path (its kind is in its name, and a "
                                               "folder may hold several files): give the bag's path")
        from .bags import open_bag

        return open_bag(path, label, coords, layout, topic=topic, message=message, publisher=publisher,
                        workers=workers)
    if topic is not None or message is not None or publisher is not None:
        raise TrajectoryError(label, None, "--topic, --message and --publisher are for ROS bags")
    def names():
        return ColumnNames(coords, layout, columns, time_unit, f"--preset {preset}" if preset else "--columns")

    if fmt in ("parquet", "arrow"):
        from .tables import open_table

        return open_table(_seekable_stdin(label) if path == "-" else path, label, fmt, layout, names())
    stream = _open_stream(path, label)
    if fmt is None:
        fmt, stream = _sniff(stream)
    if fmt == "csv":
        from .csvfile import open_csv

        return open_csv(stream, label, layout, names())
    if columns is not None:
        stream.close()
        raise TrajectoryError(label, None, "--columns and --preset are for CSV, Parquet and Arrow tables")
    from .documents import open_document

    return open_document(stream, label, fmt, layout, time_unit)


def _seekable_stdin(label):
    """A path to standard input when it is a file (`< run.parquet`): Parquet and Arrow files are
    read by seeking, which a pipe cannot do."""
    import stat

    try:
        regular = sys.stdin is not None and stat.S_ISREG(os.fstat(sys.stdin.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        regular = False
    if not regular or not os.path.exists("/dev/stdin"):
        raise TrajectoryError(label, None, "Parquet and Arrow files are read by seeking in them, which a pipe cannot "
                                           "do: give the file's path (or redirect it: < FILE)")
    return "/dev/stdin"


def _open_stream(path, label):
    if path == "-":
        stream = sys.stdin.buffer if sys.stdin is not None else None
        if stream is None or stream.closed:
            raise TrajectoryError(label, None, "standard input is closed")
        return stream
    try:
        if os.path.isdir(path):
            raise IsADirectoryError(21, "is a directory")
        return open(path, "rb")
    except OSError as exc:
        raise TrajectoryError(label, None, f"cannot read: {exc.strerror or exc}") from None


def _sniff(stream):
    """('json' | 'yaml' | 'csv', the stream to read) from the first bytes of a stream (standard
    input), a byte-order mark skipped."""
    import io
    import re

    if not hasattr(stream, "peek"):
        stream = io.BufferedReader(stream)
    try:
        head = stream.peek(4096)[:4096]
    except (OSError, ValueError) as exc:
        raise TrajectoryError("<stdin>", None, f"cannot read: {exc}") from None
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if text[:1] in (b"{", b"["):
        return "json", stream
    first = text.split(b"\n", 1)[0].rstrip(b"\r")
    if first.startswith((b"#", b"---", b"- ")) or re.match(rb"^[\w\"']+\s*:(\s|$)", first):
        return "yaml", stream  # a comment, a document start, a list item, or a mapping key
    return "csv", stream
