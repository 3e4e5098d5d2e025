"""Trajectories in: CSV (streamed in blocks, parsed in C or by polars), YAML and JSON; q, qd, qdd in chunks.

CSV: a header row, then one sample per row. Columns `time` (optional) and, per movable joint,
`q_<joint>`, `qd_<joint>`, `qdd_<joint>`; other columns are ignored. YAML/JSON: columnar
(`time: [..]`, `q: {joint: [..]}`, `qd: {..}`, `qdd: {..}`) or a list of samples
(`- {time: .., q: {..}, qd: {..}, qdd: {..}}`). Missing qd/qdd are derived from q and time by
second-order finite differences (one-sided at the ends).
"""

import csv
import io
import json
import math
import os
import sys
from dataclasses import dataclass, field

import numpy as np

from .errors import TrajectoryError
from .jointfile import number, why_not_a_number, yaml_error
from .rnea import quaternion_matrix

try:
    from . import _csvfast  # the C fast path for blocks of plain numbers; optional (see setup.py)
except ImportError:
    _csvfast = None

QUANTITIES = ("q", "qd", "qdd")
PREFIXES = ("qdd", "qd", "q", "fext")  # a column is PREFIX_NAME; YAML/JSON nest it as PREFIX: {NAME: [..]}
EXTENSIONS = {".csv": "csv", ".yaml": "yaml", ".yml": "yaml", ".json": "json"}
BLOCK_BYTES = 1 << 23  # CSV bytes parsed per block: bigger blocks cost fewer GIL hand-offs, more memory
SMALL_BLOCK = 1 << 16  # blocks smaller than this that C leaves are parsed in Python: small files need no polars
# floating base: pose (position, unit quaternion x y z w), twist [w; v] in the base frame, its derivative
BASE_POSE = ("base_x", "base_y", "base_z", "base_qx", "base_qy", "base_qz", "base_qw")
BASE_TWIST = ("base_wx", "base_wy", "base_wz", "base_vx", "base_vy", "base_vz")
# external wrench on a link: [n; f], and optionally the point it acts at
WRENCH = ("tx", "ty", "tz", "fx", "fy", "fz")
POINT = ("px", "py", "pz")
QUATERNION_WARN, QUATERNION_ERROR = 1e-6, 1e-2


@dataclass
class Chunk:
    """Consecutive samples: time (N,) or None, and the arrays of the column groups, each (N, k):
    q, qd, qdd (in the coordinates' joint order), and when the trajectory has them base_pose,
    base_twist, base_dtwist, and per link 'fext:<link>' ([n; f]) and 'fext_at:<link>' (point)."""

    start: int  # index of the first sample in the whole trajectory
    time: np.ndarray | None
    data: dict

    def __len__(self):
        return len(self.data["q"])

    @property
    def q(self):
        return self.data["q"]

    @property
    def qd(self):
        return self.data.get("qd")

    @property
    def qdd(self):
        return self.data.get("qdd")


@dataclass
class Trajectory:
    """An opened trajectory: what it holds, and its samples as an iterator of Chunks."""

    label: str
    has_time: bool
    derived: tuple  # quantities computed by finite differences, e.g. ("qd", "qdd")
    notices: list = field(default_factory=list)
    chunks: object = None  # iterator of Chunk
    line: object = None  # sample index -> line number in the file, or None
    wrenched: tuple = ()  # links with external wrench columns

    def where(self, k):
        """Where sample k stands in the input, for messages: "line 12" or "sample 10"."""
        line = self.line(k) if self.line else None
        return f"line {line}" if line is not None else f"sample {k}"


def format_of(path, explicit=None):
    """'csv' | 'yaml' | 'json' from an explicit choice or the file extension (None: sniff)."""
    if explicit:
        return explicit
    if path == "-":
        return None
    fmt = EXTENSIONS.get(os.path.splitext(str(path))[1].lower())
    if fmt is None:
        raise TrajectoryError(path, None, "unknown trajectory format (use a .csv, .yaml, .yml or .json file, "
                                          "or --input-format)")
    return fmt


class _Layout:
    """Which columns make which arrays. A key is (prefix, name), the CSV column `prefix_name`."""

    def __init__(self, coords, floating, links):
        self.groups = {qty: [(qty, name) for name in coords.joint_names] for qty in QUANTITIES}
        if floating:
            self.groups["base_pose"] = [("q", name) for name in BASE_POSE]
            self.groups["base_twist"] = [("qd", name) for name in BASE_TWIST]
            self.groups["base_dtwist"] = [("qdd", name) for name in BASE_TWIST]
        for link in links:
            self.groups[f"fext:{link}"] = [("fext", f"{link}_{c}") for c in WRENCH]
            self.groups[f"fext_at:{link}"] = [("fext", f"{link}_{c}") for c in POINT]
        owner = {}
        for group, keys in self.groups.items():
            for key in keys:
                if key in owner:  # e.g. a joint named base_x next to a floating base
                    raise TrajectoryError(coords.source, None, f"column {key[0]}_{key[1]} would belong both to "
                                                               f"{_group_name(owner[key])} and to {_group_name(group)}")
                owner[key] = group
        self.wanted = set(owner)

    def key(self, column):
        """(prefix, name) of a CSV column, or None when it is not one of ours."""
        for prefix in PREFIXES:  # longest first: qdd_x is qdd of x even if a joint is called d_x
            if column.startswith(prefix + "_") and (prefix, column[len(prefix) + 1:]) in self.wanted:
                return prefix, column[len(prefix) + 1:]
        return None

    def choose(self, label, present):
        """The groups to read, given the keys present; which quantities to derive. Errors for
        groups given in part, and for what cannot be done without."""
        def missing_of(group):
            return [name for prefix, name in self.groups[group] if (prefix, name) not in present]

        chosen = []
        for group, keys in self.groups.items():
            if not keys:  # q, qd, qdd of a robot without joints (a free body)
                chosen.append(group)
                continue
            missing = missing_of(group)
            if len(missing) == len(keys) and group != "q":
                continue
            if missing:
                if group in QUANTITIES:
                    raise TrajectoryError(label, None, f"missing {group} for joint{'s' if len(missing) > 1 else ''} "
                                                       f"{', '.join(missing)}")
                prefix = keys[0][0]
                raise TrajectoryError(label, None, f"missing column{'s' if len(missing) > 1 else ''} "
                                                   f"{', '.join(f'{prefix}_{m}' for m in missing)}")
            chosen.append(group)
        derived = tuple(q for q in ("qd", "qdd") if q not in chosen)
        if derived == ("qd",):
            raise TrajectoryError(label, None, "qdd is given but qd is not: give both, or neither to derive them")
        if "base_pose" in self.groups:
            if "base_pose" not in chosen:
                raise TrajectoryError(label, None, "a floating base needs the columns "
                                                   f"{', '.join(f'{p}_{n}' for p, n in self.groups['base_pose'])}")
            base = tuple(g for g in ("base_twist", "base_dtwist") if g not in chosen)
            if base == ("base_twist",):
                raise TrajectoryError(label, None, "the base twist's derivative (qdd_base_*) is given but the twist "
                                                   "(qd_base_*) is not: give both, or neither to derive them")
            derived += base
        return chosen, derived


def _group_name(group):
    return {"q": "a joint", "qd": "a joint", "qdd": "a joint"}.get(group, group.replace("_", " ").replace(":", " of "))


def open_trajectory(path, coords, *, fmt=None, degrees=False, dt=None, floating=False, links=()):
    """Open a trajectory file ('-' is standard input) for `coords` (a Model or Coordinates);
    reading happens chunk by chunk. floating: read the base columns; links: links whose external
    wrench columns (fext_<link>_fx ...) may be present."""
    label = "<stdin>" if path == "-" else str(path)
    fmt = format_of(path, fmt)
    try:
        stream = sys.stdin.buffer if path == "-" else open(path, "rb")
    except OSError as exc:
        raise TrajectoryError(label, None, f"cannot read: {exc.strerror}") from None
    if fmt is None:
        if not hasattr(stream, "peek"):
            stream = io.BufferedReader(io.BytesIO(stream.read()))
        fmt = _sniff(stream.peek(4096)[:4096])
    layout = _Layout(coords, floating, links)
    if fmt == "csv":
        traj = _open_csv(stream, label, layout)
    else:
        traj = _open_document(stream, label, fmt, layout)
    if dt is not None and traj.has_time:
        raise TrajectoryError(label, None, "--dt is for a trajectory without a time column, and this one has one")
    chunks = traj.chunks
    if degrees:
        angular = np.array([j.is_angular for j in coords.joints])
        chunks = _to_radians(chunks, angular)
    if floating:
        chunks = _unit_quaternions(chunks, traj)
    missing = traj.derived
    if missing:
        what = _derivation(missing)
        if not traj.has_time:
            if dt is None:
                lacking = "no time column and no velocities" if "qd" in missing else "no time column"
                raise TrajectoryError(label, None, f"{lacking}: cannot derive {what[0]} (give --dt or the columns)")
            chunks = _with_time(chunks, dt)
            traj.has_time = True
        if "base_twist" in missing:
            chunks = _continuous_quaternions(chunks)
        chunks = _differentiate(chunks, traj, label)
        traj.notices.append(f"{what[1]} and time by second-order finite differences")
    elif dt is not None and not traj.has_time:
        chunks = _with_time(chunks, dt)
        traj.has_time = True

    traj.chunks = chunks
    return traj


def _derivation(derived):
    """(what is derived, what from what) for messages: ('qd and qdd', 'qd and qdd derived from q')."""
    joints = [x for x in derived if x in ("qd", "qdd")]
    base = {("base_twist", "base_dtwist"): ("the base twist and its derivative", "the base pose"),
            ("base_dtwist",): ("the base twist's derivative", "the twist")}.get(
        tuple(x for x in derived if x.startswith("base")))
    what = [" and ".join(joints)] if joints else []
    source = [f"{what[0]} derived from {'q' if 'qd' in joints else 'qd'}"] if joints else []
    if base:
        what.append(base[0])
        source.append(f"{base[0]} derived from {base[1]}")
    return ", ".join(what), "; ".join(source)


def prefetch(items, depth=2):
    """Iterate `items` in a background thread, up to `depth` ahead: reading and parsing (which
    release the GIL) overlap the computation. Errors are raised in the caller, in order."""
    import queue
    import threading

    box = queue.Queue(maxsize=depth)
    done = object()
    stop = threading.Event()

    def produce():
        try:
            for item in items:
                if stop.is_set():
                    return
                box.put((item, None))
        except BaseException as exc:  # handed to the consumer
            box.put((None, exc))
            return
        box.put((done, None))

    thread = threading.Thread(target=produce, name="rnea-reader", daemon=True)
    thread.start()
    try:
        while True:
            item, error = box.get()
            if error is not None:
                raise error
            if item is done:
                return
            yield item
    finally:
        stop.set()


def _unit_quaternions(chunks, traj):
    """Normalise base quaternions: a warning above QUATERNION_WARN off unit norm, an error above
    QUATERNION_ERROR."""
    warned = False
    for c in chunks:
        quat = c.data["base_pose"][:, 3:]
        norm = np.linalg.norm(quat, axis=1)
        off = np.abs(norm - 1.0)
        bad = np.flatnonzero(off > QUATERNION_ERROR)
        if bad.size:
            k = int(bad[0])
            raise TrajectoryError(traj.label, traj.where(c.start + k),
                                  f"base quaternion has norm {norm[k]:.6g}, not 1 (more than {QUATERNION_ERROR:g} off)")
        if not warned and off.size and off.max() > QUATERNION_WARN:
            k = int(off.argmax())
            traj.notices.append(f"warning: base quaternions normalised (norm {norm[k]:.9g} at {traj.where(c.start + k)})")
            warned = True
        c.data["base_pose"] = np.column_stack([c.data["base_pose"][:, :3], quat / norm[:, None]])
        yield c


def _sniff(head):
    """'json', 'yaml' or 'csv' from the first bytes of standard input."""
    import re

    text = head.lstrip()
    if text[:1] in (b"{", b"["):
        return "json"
    first = text.split(b"\n", 1)[0].rstrip(b"\r")
    if first.startswith((b"#", b"---", b"- ")) or re.match(rb"^[\w\"']+\s*:(\s|$)", first):
        return "yaml"  # a comment, a document start, a list item, or a mapping key
    return "csv"


def _to_radians(chunks, angular):
    scale = np.where(angular, math.pi / 180.0, 1.0)
    for c in chunks:
        yield Chunk(c.start, c.time, {k: x * scale if k in QUANTITIES else x for k, x in c.data.items()})


def _with_time(chunks, dt):
    for c in chunks:
        yield Chunk(c.start, (c.start + np.arange(len(c))) * float(dt), c.data)


# -- CSV -----------------------------------------------------------------------------------------

def _open_csv(stream, label, layout):
    header_line = stream.readline()
    if not header_line.strip():
        raise TrajectoryError(label, None, "empty file" if not header_line else "line 1: empty header")
    try:
        names = next(csv.reader([header_line.decode("utf-8-sig")]))
    except UnicodeDecodeError:
        raise TrajectoryError(label, "line 1", "header is not UTF-8 text") from None
    names = [n.strip() for n in names]
    columns, time_col, extras = {}, None, []
    for k, name in enumerate(names):
        key = "time" if name == "time" else layout.key(name)
        if key is None:
            extras.append(name)
        elif key == "time" and time_col is not None or key in columns:
            raise TrajectoryError(label, f"line 1, column {k + 1}", f"duplicate column '{name}'")
        elif key == "time":
            time_col = k
        else:
            columns[key] = k
    chosen, derived = layout.choose(label, columns)
    traj = Trajectory(label, time_col is not None, derived, wrenched=_wrenched(chosen))
    if extras:
        traj.notices.append(f"ignored {len(extras)} column{'s' if len(extras) > 1 else ''} not of this robot: "
                            + ", ".join(extras[:8]) + (", ..." if len(extras) > 8 else ""))
    traj.line = lambda k: k + 2
    groups = {g: [columns[key] for key in layout.groups[g]] for g in chosen}
    traj.chunks = _csv_chunks(stream, label, names, time_col, groups)
    return traj


def _stack(columns, rows):
    """(rows, len(columns)) from 1-D columns, column-major: each column stays contiguous, which
    is the layout the engine works in (a row of (n, N) per joint); (rows, 0) for none."""
    return np.stack(columns).T if columns else np.empty((rows, 0))


def _wrenched(groups):
    return tuple(g.split(":", 1)[1] for g in groups if g.startswith("fext:"))


def _csv_blocks(stream):
    """Blocks of whole lines: about BLOCK_BYTES, then up to the end of the line. Blank lines at
    the very end of the file are dropped (elsewhere a blank line is an error): blank lines that
    end a block are held back and go in front of the next block, if there is one. No block is
    read ahead, so only one is held in memory here."""
    blank = b""
    while True:
        block = stream.read(BLOCK_BYTES)
        if not block:
            return
        if not block.endswith(b"\n"):
            block += stream.readline()
        if blank:
            block, blank = blank + block, b""
        end = _content_end(block)
        if end == 0:
            blank = block
            continue
        line_end = block.find(b"\n", end)
        if line_end < 0:  # the last line, without its newline
            yield block + b"\n"
        elif line_end + 1 == len(block):
            yield block
        else:
            yield block[:line_end + 1]
            blank = block[line_end + 1:]


def _content_end(block, spaces=b" \t\r\n"):
    """len(block.rstrip(spaces)), without copying the block when its end is not all blank."""
    tail = block[-64:].rstrip(spaces)
    return len(block) - 64 + len(tail) if tail and len(block) > 64 else len(block.rstrip(spaces))


def _csv_chunks(stream, label, names, time_col, groups):
    wanted = sorted({k for cols in groups.values() for k in cols} | ({time_col} if time_col is not None else set()))
    index = {k: j for j, k in enumerate(wanted)}
    spans = {g: _span([index[k] for k in cols]) for g, cols in groups.items()}
    start = 0
    try:
        with stream:
            for block in _csv_blocks(stream):
                line = start + 2  # of the block's first row: every row is one line
                values = _parse_block_plain(block, names, wanted)
                if values is None and len(block) < SMALL_BLOCK:
                    values = _parse_block(label, line, block, names, wanted)
                elif values is None:
                    values = _parse_block_fast(label, line, block, names, wanted)
                # column-major views of the block's (N, len(wanted)) array: no copies when a group's
                # columns sit side by side in the file, as they usually do
                data = {g: values[:, span] if isinstance(span, slice) else np.asfortranarray(values[:, span])
                        for g, span in spans.items()}
                yield Chunk(start, values[:, index[time_col]] if time_col is not None else None, data)
                start += len(values)
    finally:
        if _csvfast is not None:  # let go of its buffers kept for reuse: up to 4 blocks' worth
            _csvfast.drop_spares()
    if start == 0:
        raise TrajectoryError(label, None, "no data rows after the header")


def _span(positions):
    """A slice for consecutive ascending positions (a view of the columns), else the list."""
    if positions and positions == list(range(positions[0], positions[0] + len(positions))):
        return slice(positions[0], positions[0] + len(positions))
    return positions if positions else slice(0, 0)


def _parse_block_plain(block, names, wanted):
    """(N, len(wanted)) floats of a block of plain numbers, column-major, parsed in C (one pass,
    without the GIL); None if the block is anything else, or the extension is not built."""
    if _csvfast is None or not wanted:
        return None
    parsed = _csvfast.parse(block, len(names), tuple(wanted))
    if parsed is None:
        return None
    rows, data = parsed
    return np.frombuffer(data).reshape(len(wanted), rows).T


def _parse_block_fast(label, line, block, names, wanted):
    """(N, len(wanted)) floats of a large block, column-major, parsed by polars (multi-threaded,
    correctly rounded); any doubt is settled by `_parse_block`, which names the bad line and column.
    A handful of calls per block, so that this thread seldom waits for the GIL."""
    import polars as pl

    last = len(names) - 1  # read too: a row with fewer fields leaves it null
    keys = [f"c{k}" for k in range(len(names))]
    try:
        frame = pl.read_csv(block, has_header=False, new_columns=keys, columns=sorted(set(wanted) | {last}),
                            infer_schema=False, schema_overrides={keys[k]: pl.Float64 for k in wanted})
        values = frame.select([keys[k] for k in wanted]).to_numpy(order="fortran")
        # a null (a blank line, an empty cell) comes out as nan; fewer rows than lines: a quoted
        # cell spans lines. Lines are counted only where there are quotes: without, each line is
        # a row (polars makes a blank line a row of nulls), and counting costs 3.6 ms a block
        ok = bool(np.isfinite(values).all()) and (b'"' not in block or len(values) == block.count(b"\n"))
        # nulls in the last column: a row with too few fields, or merely empty last cells. polars
        # refuses rows with too many fields, so with no quotes the comma count settles it
        short = (last not in wanted and frame.get_column(keys[last]).null_count() > 0
                 and not (b'"' not in block and block.count(b",") == len(values) * last))
    except pl.exceptions.PolarsError:
        ok = short = False
    if not ok or short:
        checked = _parse_block(label, line, block, names, wanted)
        if not ok:
            return checked
    return values


def _parse_block(label, line, block, names, wanted):
    """(N, len(wanted)) floats of a block, column-major, parsed in Python; the first bad row or
    cell is an error naming its line and column."""
    # lines end at \n only, as for polars (not at \f, \v, \x85, ...); a \r is a space (or part of \r\n)
    text = block.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", " ").split("\n")
    if text[-1] == "":
        text.pop()
    values = {k: [] for k in wanted}
    rows = csv.reader(text + [""])  # an empty last line: a quote left open on the block's last line takes it
    for offset, row in enumerate(_rows_of_one_line(rows, label, line)):
        if offset == len(text):  # that empty line, untaken
            break
        where = f"line {line + offset}"
        if len(row) != len(names):
            raise TrajectoryError(label, where, f"{len(row)} field{'s' if len(row) != 1 else ''}, "
                                                f"expected {len(names)} (as in the header)")
        for k in wanted:
            cell = row[k].strip()
            try:
                value = float(cell)
            except ValueError:
                value = None
            if value is None or "_" in cell:
                what = "empty cell" if not cell else f"not a number: '{cell}'"
                raise TrajectoryError(label, f"{where}, column {k + 1} ({names[k]})", what)
            if not math.isfinite(value):
                raise TrajectoryError(label, f"{where}, column {k + 1} ({names[k]})", f"not finite: '{cell}'")
            values[k].append(value)
    return np.array([values[k] for k in wanted], dtype=float).reshape(len(wanted), -1).T


def _rows_of_one_line(rows, label, line):
    """The rows of a csv.reader over a block's lines; a quoted cell that runs on to the next
    line (most likely a missing closing quote, which would swallow the rows after it) is an error."""
    runs_on = "a quoted cell runs on past the end of the line (a missing closing quote?)"
    count = 0  # rows read, each one line: the next row starts on line `line + count`
    try:
        for row in rows:
            if rows.line_num != count + 1:
                raise TrajectoryError(label, f"line {line + count}", runs_on)
            yield row
            count += 1
    except csv.Error as exc:  # e.g. a field past csv's size limit: an open quote took the lines after it
        raise TrajectoryError(label, f"line {line + count}",
                              runs_on if rows.line_num > count + 1 else f"not CSV: {exc}") from None


# -- YAML / JSON ---------------------------------------------------------------------------------

def _load_document(stream, label, fmt):
    with stream:
        data = stream.read()
    if not data.strip():
        raise TrajectoryError(label, None, "empty file")
    if fmt == "json":
        try:
            return json.loads(data)
        except json.JSONDecodeError as exc:
            raise TrajectoryError(label, f"line {exc.lineno}, column {exc.colno}", f"invalid JSON: {exc.msg}") from None
        except UnicodeDecodeError:
            raise TrajectoryError(label, None, "not UTF-8 text") from None
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(data, Loader=loader)
    except yaml.YAMLError as exc:
        raise yaml_error(label, exc, TrajectoryError) from None


def _samples_to_columns(doc, label):
    """A list of samples -> the columnar form: {time: [..], prefix: {name: [..]}}."""
    columns = {}
    times = []
    for k, sample in enumerate(doc):
        if not isinstance(sample, dict):
            raise TrajectoryError(label, f"sample {k}", "expected a mapping with time, q, qd, qdd")
        for key, value in sample.items():
            if key == "time":
                times.append(value)
            elif key in PREFIXES:
                if not isinstance(value, dict):
                    raise TrajectoryError(label, f"sample {k}: {key}", "expected a mapping from name to a number")
                block = columns.setdefault(key, {})
                for name, x in value.items():
                    block.setdefault(name, [None] * k).append(x)
            else:
                columns.setdefault(key, None)
        for block in columns.values():
            for values in (block or {}).values():
                values.extend([None] * (k + 1 - len(values)))
    if times:
        if len(times) != len(doc):
            raise TrajectoryError(label, None, "time is given in some samples and not in others")
        columns["time"] = times
    return columns


def _numbers(values, label, path):
    if not isinstance(values, list):
        raise TrajectoryError(label, path, f"expected a list of numbers, got {type(values).__name__}")
    out = np.empty(len(values))
    for k, x in enumerate(values):
        value = number(x)
        if value is None:
            raise TrajectoryError(label, f"{path}[{k}]", why_not_a_number(x))
        out[k] = value
    return out


def _open_document(stream, label, fmt, layout):
    doc = _load_document(stream, label, fmt)
    if isinstance(doc, list):
        doc = _samples_to_columns(doc, label)
    if not isinstance(doc, dict) or "q" not in doc:
        raise TrajectoryError(label, None, "expected a mapping with time (optional), q, qd, qdd, "
                                           "or a list of such samples")
    extras, present = [], {}
    for prefix, block in doc.items():
        if prefix == "time":
            continue
        if prefix not in PREFIXES:
            extras.append(prefix)
            continue
        if not isinstance(block, dict):
            raise TrajectoryError(label, prefix, "expected a mapping from name to a list of numbers")
        for name, values in block.items():
            if (prefix, name) in layout.wanted:
                present[(prefix, name)] = _numbers(values, label, f"{prefix}.{name}")
            else:
                extras.append(f"{prefix}.{name}")
    chosen, derived = layout.choose(label, present)
    time = _numbers(doc["time"], label, "time") if "time" in doc else None
    used = [present[key] for g in chosen for key in layout.groups[g]]
    lengths = {len(v) for v in used} | ({len(time)} if time is not None else set())
    if len(lengths) > 1:
        raise TrajectoryError(label, None, f"lists of different lengths ({', '.join(map(str, sorted(lengths)))})")
    N = lengths.pop() if lengths else 0
    if N == 0:
        raise TrajectoryError(label, None, "no samples")
    traj = Trajectory(label, time is not None, derived, wrenched=_wrenched(chosen))
    if extras:
        traj.notices.append(f"ignored {len(extras)} entr{'ies' if len(extras) > 1 else 'y'} not of this robot: "
                            + ", ".join(map(str, extras[:8])) + (", ..." if len(extras) > 8 else ""))
    data = {g: _stack([present[key] for key in layout.groups[g]], N) for g in chosen}
    traj.chunks = iter([Chunk(0, time, data)])
    return traj


# -- finite differences --------------------------------------------------------------------------

def derivative(t, f):
    """df/dt at every t (axis 0), second order on a non-uniform grid: 3-point Lagrange, one-sided at the ends."""
    h = np.diff(t)[:, None] if f.ndim == 2 else np.diff(t)
    h1, h2 = h[:-1], h[1:]
    d = np.empty_like(f)
    # interior: f'_i = -h2/(h1(h1+h2)) f_{i-1} + (h2-h1)/(h1 h2) f_i + h1/(h2(h1+h2)) f_{i+1}
    d[1:-1] = (-h2 / (h1 * (h1 + h2)) * f[:-2] + (h2 - h1) / (h1 * h2) * f[1:-1]
               + h1 / (h2 * (h1 + h2)) * f[2:])
    # ends: the derivative of the quadratic through the first / last three points
    a, b = h[0], h[1]
    d[0] = -(2 * a + b) / (a * (a + b)) * f[0] + (a + b) / (a * b) * f[1] - a / (b * (a + b)) * f[2]
    a, b = h[-2], h[-1]
    d[-1] = b / (a * (a + b)) * f[-3] - (a + b) / (a * b) * f[-2] + (2 * b + a) / (b * (a + b)) * f[-1]
    return d


def _differentiate(chunks, traj, label):
    """Fill what traj.derived names (qd from q, qdd from qd, the base twist from the pose, its
    derivative from the twist) across chunk boundaries, keeping 4 samples of overlap."""
    tail = None  # the last samples of the previous chunk, still to be finished
    first = True
    for c in chunks:
        _check_time(c, label, traj.where)
        if tail is not None:
            if c.time[0] <= tail.time[-1]:
                raise TrajectoryError(label, traj.where(c.start), f"time {float(c.time[0])!r} is not after the "
                                                                 f"previous time {float(tail.time[-1])!r}")
            c = _concat(tail, c)
        if len(c) < 5:
            tail = c
            continue
        done = _derive(c, traj.derived)
        keep = 0 if first else 2  # rows before `keep` were already emitted
        yield _slice(done, keep, len(c) - 2)
        tail = _slice(c, len(c) - 4, len(c))
        first = False
    if tail is None:
        raise TrajectoryError(label, None, "no samples")
    if len(tail) < 3:
        raise TrajectoryError(label, None, f"{len(tail)} sample{'s' if len(tail) > 1 else ''}: at least 3 are "
                                           f"needed to derive {_derivation(traj.derived)[0]}")
    yield _slice(_derive(tail, traj.derived), 0 if first else 2, len(tail))


def _check_time(c, label, where):
    bad = np.flatnonzero(np.diff(c.time) <= 0)
    if bad.size:
        k = bad[0] + 1
        raise TrajectoryError(label, where(c.start + k), f"time {float(c.time[k])!r} is not after the "
                                                         f"previous time {float(c.time[k - 1])!r} (time must "
                                                         "increase to derive velocities)")


def _derive(c, derived):
    t, data = c.time, dict(c.data)
    if "qd" in derived:
        data["qd"] = derivative(t, c.q)
    if "qdd" in derived:
        data["qdd"] = derivative(t, data["qd"])
    if "base_twist" in derived:
        data["base_twist"] = base_twist(t, data["base_pose"])
    if "base_dtwist" in derived:
        data["base_dtwist"] = derivative(t, data["base_twist"])
    return Chunk(c.start, t, data)


def base_twist(t, pose):
    """(N, 6) [w; v] of the base in its own frame, from (N, 7) poses (x, y, z, qx, qy, qz, qw) at
    times t: w = 2 vec(conj(Q) dQ/dt), v = R^T dp/dt, the derivatives by `derivative`. The
    quaternions must not change sign between samples (see `_continuous_quaternions`)."""
    Q = pose[:, 3:]
    dQ, dp = derivative(t, Q), derivative(t, pose[:, :3])
    u, w = Q[:, :3], Q[:, 3:]
    omega = 2 * (w * dQ[:, :3] - dQ[:, 3:] * u - np.cross(u, dQ[:, :3]))
    v = np.einsum("abk,ka->kb", quaternion_matrix(Q), dp)
    return np.concatenate([omega, v], axis=1)


def _continuous_quaternions(chunks):
    """Base quaternions with the sign of the one before (q and -q are the same orientation), so
    that they can be differentiated."""
    last = None
    for c in chunks:
        Q = c.data["base_pose"][:, 3:]
        before = np.concatenate([Q[:1] if last is None else last, Q[:-1]])
        flips = np.cumsum(np.einsum("ka,ka->k", Q, before) < 0) % 2  # sign changes so far in this chunk
        if flips.any():
            pose = c.data["base_pose"].copy()
            pose[:, 3:] *= np.where(flips, -1.0, 1.0)[:, None]
            c.data["base_pose"] = pose
        last = c.data["base_pose"][-1:, 3:]
        yield c


def _concat(a, b):
    return Chunk(a.start, np.concatenate([a.time, b.time]),
                 {k: np.concatenate([x, b.data[k]]) for k, x in a.data.items()})


def _slice(c, i, j):
    return Chunk(c.start + i, None if c.time is None else c.time[i:j], {k: x[i:j] for k, x in c.data.items()})
