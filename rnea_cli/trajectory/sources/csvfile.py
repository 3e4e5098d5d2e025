"""CSV (and space-separated controller logs), read in blocks of whole lines and parsed by polars.

Each block is checked for shape before polars parses it: every line has exactly the header's
number of fields (delimiters outside quotes are counted), so no row can shift its columns,
whichever columns are read. polars then parses every value (correctly rounded). When polars
rejects a block, Python's csv module only *locates* the first bad line and cell for the message.
Blank lines are allowed at the end of the file only; a line may be at most MAX_LINE bytes.
"""

import csv
import re
from decimal import Decimal

import numpy as np

from ...errors import TrajectoryError, shown
from .base import Chunk, Trajectory, ignored
from .clock import Clock, from_ns
from .layout import wrenched_links

BLOCK_BYTES = 1 << 23  # bytes parsed per block
MAX_LINE = 1 << 20  # bytes of one line, the header included
BLANK = b" \t\r\n"
NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*([eE][+-]?[0-9]+)?|\.[0-9]+([eE][+-]?[0-9]+)?|inf|infinity|nan)",
                    re.IGNORECASE)  # what polars reads as a float


def open_csv(stream, label, layout, names):
    """A Trajectory over a CSV stream whose header maps onto `layout` through `names` (ColumnNames)."""
    header, sep = _header(stream, label)
    columns, time_col, extras = {}, None, []
    for k, name in enumerate(header):
        key = names.key(name)
        if key is None:
            extras.append(name)
        elif key == "time" and time_col is not None or key in columns:
            stream.close()
            raise TrajectoryError(label, f"line 1, column {k + 1}", f"duplicate column {shown(name)}")
        elif key == "time":
            time_col = k
        else:
            columns[key] = k
    names.check_found(label, {header[k] for k in columns.values()} | ({header[time_col]} if time_col is not None
                                                                         else set()), header, time_col is not None)
    chosen, derived = layout.choose(label, columns)
    traj = Trajectory(label, time_col is not None, tuple(chosen), derived, line=lambda k: k + 2, unit="row",
                      wrenched=wrenched_links(chosen), ignored=tuple(name.strip() for name in extras), stream=stream)
    if extras:
        traj.notices.append(ignored(extras))
    groups = {g: [columns[key] for key in layout.groups[g]] for g in chosen}
    clock = None if time_col is None else Clock(label, traj.where, names.unit or "s")
    reader = _BlockParser(label, header, sep, groups, time_col, clock)
    traj.chunks = reader.chunks(stream, traj)
    return traj


def _header(stream, label):
    """(column names, delimiter) from the first line; ' ' means runs of spaces or tabs."""
    line = _readline(stream, label)
    if not line:
        raise TrajectoryError(label, None, "empty file")
    if line.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise TrajectoryError(label, "line 1", "the file is UTF-16 text; rnea reads UTF-8")
    if len(line) > MAX_LINE:
        raise TrajectoryError(label, "line 1", f"longer than {MAX_LINE:,} bytes (is this a CSV file?)")
    body = line.removeprefix(b"\xef\xbb\xbf").removesuffix(b"\n").removesuffix(b"\r")
    if b"\r" in body:
        raise TrajectoryError(label, "line 1", "lines end in a carriage return alone (\\r); rnea reads lines that "
                                               "end in \\n or \\r\\n")
    if not body.strip():
        raise TrajectoryError(label, "line 1", "empty header")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise TrajectoryError(label, "line 1", "header is not UTF-8 text") from None
    counts = {sep: _outside_quotes(text).count(sep) for sep in (",", ";", "\t")}
    sep = max(counts, key=counts.get) if max(counts.values()) else (" " if text.strip().count(" ") else ",")
    if sep == " ":
        return text.split(), sep
    try:
        return next(csv.reader([text], delimiter=sep, strict=True)), sep
    except csv.Error as exc:
        raise TrajectoryError(label, "line 1", f"header is not CSV: {exc}") from None


def _outside_quotes(text):
    return re.sub(r'"[^"]*"', "", text)


def _readline(stream, label):
    try:
        return stream.readline(MAX_LINE + 1)
    except OSError as exc:
        raise TrajectoryError(label, None, f"cannot read: {exc.strerror or exc}") from None


class _BlockParser:
    """The Chunks of a CSV stream, a block at a time; the time column (its text, see clock.py)
    apart from the numbers."""

    def __init__(self, label, header, sep, groups, time_col, clock):
        self.label, self.header, self.sep, self.ncols = label, header, sep, len(header)
        self.spaces = sep == " "
        self.wanted = sorted({k for cols in groups.values() for k in cols})
        index = {k: j for j, k in enumerate(self.wanted)}
        self.spans = {g: _span([index[k] for k in cols]) for g, cols in groups.items()}
        self.time, self.clock = time_col, clock
        self.checked = sorted(set(self.wanted) | ({time_col} if time_col is not None else set()))  # for messages
        self.numeric = True  # every column has parsed as a number so far (the fast way)
        self.count = _ByteCounter()

    def chunks(self, stream, traj):
        start = 0
        with stream:
            for line, block, rows in _blocks(stream, self.label, self.count):
                values, time = self.parse(line, block, rows, start)
                # column-major views of the (N, len(wanted)) block: no copy when a group's columns sit
                # side by side in the file, as they usually do
                data = {g: values[:, span] if isinstance(span, slice) else np.asfortranarray(values[:, span])
                        for g, span in self.spans.items()}
                if start == 0 and self.clock is not None:
                    self.clock.started(traj)
                yield Chunk(start, time, data)
                start += rows
        if start == 0:
            raise TrajectoryError(self.label, None, "no data rows after the header")

    def parse(self, line, block, rows, start):
        """((N, len(wanted)) floats, column-major, and (N,) seconds or None) of a block of `rows`
        whole lines, the first of them sample `start`."""
        if self.spaces:  # runs of spaces and tabs are one delimiter; none at the ends of a line
            block = re.sub(rb"[ \t]+", b" ", re.sub(rb"[ \t\r]*\n[ \t]*", b"\n", block)).lstrip(b" ")
        sep = ord(self.sep)
        if b'"' not in block:
            shaped = self.count(block, sep) == rows * (self.ncols - 1)
        else:
            shaped = _quoted_shape_ok(np.frombuffer(block, np.uint8), sep, rows, self.ncols)
        parsed = self._polars(block, rows, start) if shaped else None
        if parsed is None:
            _locate(self.label, line, block, self.header, self.checked, self.sep, "polars could not read it")
        return parsed

    def _polars(self, block, rows, start):
        import polars as pl

        keys = [f"c{k}" for k in range(self.ncols)]
        wanted = [keys[k] for k in self.wanted]
        read = dict(has_header=False, new_columns=keys, separator=self.sep, quote_char='"')
        time = None if self.time is None else keys[self.time]
        if self.numeric:
            try:
                frame = pl.read_csv(block, schema={k: pl.String if k == time else pl.Float64 for k in keys}, **read)
                return self._finite(frame.select(wanted).to_numpy(order="fortran"), frame, time, rows, start)
            except pl.exceptions.PolarsError:
                self.numeric = False  # text in a column, or spaces around numbers: strings, then numbers
        try:
            frame = pl.read_csv(block, schema={k: pl.String for k in keys}, **read)
            numbers = frame.select(pl.col(k).str.strip_chars().cast(pl.Float64, strict=False) for k in wanted)
            return self._finite(numbers.to_numpy(order="fortran"), frame, time, rows, start)
        except pl.exceptions.PolarsError:
            return None

    def _finite(self, values, frame, time, rows, start):
        """(values, seconds) if there is a row per line and every value is finite (a null is NaN), else None."""
        if not self.wanted:
            values = np.empty((frame.height, 0))  # (polars gives no rows for no columns)
        if len(values) != rows or not np.isfinite(values).all():
            return None
        if time is None:
            return values, None
        seconds = _seconds(frame[time].str.strip_chars(), self.clock, start)
        return (values, seconds) if seconds is not None and np.isfinite(seconds).all() else None


def _seconds(text, clock, start):
    """Seconds from time 0 of time cells (a polars String Series), NaN where one is not a number;
    None when the first of the file is not. A clock time's cells are read as decimals, exactly,
    and counted in nanoseconds from the first (see clock.py)."""
    import polars as pl

    floats = text.cast(pl.Float64, strict=False)
    if clock.origin is None:
        first = floats[0]
        if first is None or not np.isfinite(first):
            return None
        exact = _decimals(text[:1], clock)[0]
        clock.start(first if exact is None else exact, start)
    if not isinstance(clock.origin, Decimal):  # kept as written, or a first value no decimal holds
        return clock.seconds(floats.to_numpy(), start)
    origin = pl.Series([int(clock.origin.scaleb(clock.places))], dtype=pl.Int128)  # in nanoseconds
    offsets = (_decimals(text, clock).to_physical() - origin).cast(pl.Int64, strict=False)
    seconds = from_ns(offsets.to_numpy())  # (NaN where not a decimal within int64 nanoseconds of time 0)
    loose = np.flatnonzero(offsets.is_null().to_numpy())
    if loose.size:  # numbers no decimal holds (1e40): as doubles, which the plausible-time check refuses
        seconds[loose] = (floats.to_numpy()[loose] - float(clock.origin)) / clock.per_second
    return seconds


def _decimals(text, clock):
    """Time cells as decimals to the nanosecond (of the clock's unit), null where not one."""
    import polars as pl

    return text.cast(pl.Decimal(38, clock.places), strict=False)


def _quoted_shape_ok(a, sep, rows, ncols):
    """Every line of a block with quotes (its bytes a) has ncols - 1 delimiters outside quotes, and
    no quote is open at a line's end (a quoted cell may not run on to the next line)."""
    inside = np.logical_xor.accumulate(a == ord('"'))  # a doubled quote "" toggles twice
    ends = np.flatnonzero((a == 10) & ~inside)
    if len(ends) != rows:
        return False
    delimiters = np.flatnonzero((a == sep) & ~inside)
    per_line = np.diff(np.searchsorted(delimiters, ends), prepend=0)
    return bool((per_line == ncols - 1).all())


def _span(positions):
    """A slice for consecutive ascending positions (a view of the columns), else the list."""
    if positions and positions == list(range(positions[0], positions[0] + len(positions))):
        return slice(positions[0], positions[0] + len(positions))
    return positions if positions else slice(0, 0)


class _ByteCounter:
    """How often a byte occurs in a block, counted by numpy (several times faster than bytes.count,
    and without the GIL) into one boolean array kept from block to block: a new one for every
    count page-faults 8 MB in each time (reading and counting a 400 MB file alone: 0.3 CPU-s more)."""

    def __init__(self):
        self.scratch = np.empty(0, bool)

    def __call__(self, block, byte):
        a = np.frombuffer(block, np.uint8)
        if len(self.scratch) < len(a):
            self.scratch = np.empty(len(a), bool)
        return int(np.count_nonzero(np.equal(a, byte, out=self.scratch[:len(a)])))


def _blocks(stream, label, count, line=2):
    """(number of its first line, block) for blocks of about BLOCK_BYTES of whole lines, each
    ending in a newline. Blank lines at the end of the file are dropped; elsewhere they are an
    error. Blank lines are counted, never kept, so memory stays bounded whatever the file holds."""
    blank_from = None  # the first of blank lines seen at the end of what was read
    while True:
        try:
            block = stream.read(BLOCK_BYTES)
            if block and not block.endswith(b"\n"):
                tail = len(block) - block.rfind(b"\n") - 1
                rest = stream.readline(max(MAX_LINE + 1 - tail, 1))
                block += rest
                if not block.endswith(b"\n") and tail + len(rest) > MAX_LINE:
                    long_line = line + block.count(b"\n")
                    raise TrajectoryError(label, f"line {long_line}", f"longer than {MAX_LINE:,} bytes")
        except OSError as exc:
            raise TrajectoryError(label, None, f"cannot read: {exc.strerror or exc}") from None
        if not block:
            return
        if not block.endswith(b"\n"):
            block += b"\n"  # the last line, without its newline
        end = _content_end(block)
        if end and blank_from is not None:
            raise TrajectoryError(label, f"line {blank_from}", "blank line (blank lines may only end the file)")
        if end == 0:
            blank_from = line if blank_from is None else blank_from
            line += block.count(b"\n")
            continue
        line_end = block.index(b"\n", end - 1) + 1  # the end of the last line with content
        content = block[:line_end] if line_end < len(block) else block
        long_line = _long_line(content)
        if long_line is not None:
            where = line + content.count(b"\n", 0, long_line)
            raise TrajectoryError(label, f"line {where}", f"longer than {MAX_LINE:,} bytes")
        rows = count(content, 10)
        yield line, content, rows
        line += rows
        if line_end < len(block):
            blank_from = line
            line += block.count(b"\n", line_end)


def _long_line(block):
    """Where the first line longer than MAX_LINE starts in a block of whole lines, or None. Such a
    line covers a whole aligned window of MAX_LINE / 2 bytes with no newline in it; in any other
    window bytes.find (memchr) meets a newline within a line's length, so a block costs a few finds."""
    window = MAX_LINE // 2
    for start in range(0, len(block) - window + 1, window):
        if block.find(b"\n", start, start + window) == -1:
            begin = block.rfind(b"\n", 0, start) + 1
            end = block.find(b"\n", start + window)
            if (end if end >= 0 else len(block)) - begin > MAX_LINE:
                return begin
    return None


def _content_end(block):
    """len(block.rstrip(BLANK)), without copying a block whose end is not blank."""
    tail = block[-64:].rstrip(BLANK)
    return len(block) - 64 + len(tail) if tail and len(block) > 64 else len(block.rstrip(BLANK))


def _locate(label, line, block, header, wanted, sep, why):
    """Raise the error of the first bad line or cell of a block that polars rejected."""
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = line + block.count(b"\n", 0, exc.start)
        raise TrajectoryError(label, f"line {bad}", "not UTF-8 text") from None
    lines = text.split("\n")[:-1]
    for offset, raw in enumerate(lines):
        where = f"line {line + offset}"
        raw = raw.removesuffix("\r")
        if not raw.strip():
            raise TrajectoryError(label, where, "blank line (blank lines may only end the file)")
        if sep == " ":
            fields = raw.split(" ")
        else:
            if _outside_quotes(raw).count('"'):
                raise TrajectoryError(label, where, "a quoted cell runs on past the end of the line (a missing "
                                                    "closing quote?)")
            try:  # a \r in a text cell is text (polars' view), not the end of a line (csv's)
                fields = next(csv.reader([raw.replace("\r", " ")], delimiter=sep, strict=True))
            except csv.Error as exc:
                raise TrajectoryError(label, where, f"not CSV: {exc}") from None
        if len(fields) != len(header):
            raise TrajectoryError(label, where, f"{len(fields)} field{'s' if len(fields) != 1 else ''}, expected "
                                                f"{len(header)} (as in the header)")
        for k in wanted:
            cell = fields[k].strip()
            column = f"{where}, column {k + 1} ({shown(header[k])[1:-1]})"
            if not NUMBER.fullmatch(cell):
                raise TrajectoryError(label, column, "empty cell" if not cell else f"not a number: {shown(cell)}")
            if cell.lower().lstrip("+-") in ("nan", "inf", "infinity") or abs(float(cell)) == float("inf"):
                raise TrajectoryError(label, column, f"not finite: {shown(cell)}")
    raise TrajectoryError(label, f"lines {line}-{line + len(lines) - 1}", why)
