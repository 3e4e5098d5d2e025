"""Parquet and Arrow IPC (Feather v2) trajectories, read by pyarrow a row group / record batch at a
time, small batches joined into blocks of BATCH_ROWS: the CSV's column names (or --columns).

Columns hold numbers: integers, floating point of any width, decimals, dictionaries of these; the
time column may also be an Arrow timestamp or duration, in the unit its type gives. Each value is
checked once converted to a double (a null is missing, NaN or infinity not finite), never before:
a dictionary's indices may be valid where the values they point to are null.
"""

import numpy as np

from ...errors import TrajectoryError, shown
from .base import Chunk, Trajectory, ignored
from .clock import Clock
from .layout import wrenched_links

BATCH_ROWS = 1 << 16


def open_table(path, label, fmt, layout, names):
    """A Trajectory over a Parquet or Arrow IPC file, or (fmt 'table') an in-memory pyarrow Table."""
    reader = _Reader(path, label, fmt)
    columns, time_col, extras = {}, None, []
    for name in reader.schema.names:
        key = names.key(name)
        if key is None:
            extras.append(name)
        elif key == "time" and time_col is not None or key in columns:
            raise TrajectoryError(label, f"column {shown(name)}", "duplicate column")
        elif key == "time":
            time_col = name
        else:
            columns[key] = name
    names.check_found(label, set(columns.values()) | ({time_col} if time_col else set()), reader.schema.names,
                      time_col is not None)
    chosen, derived = layout.choose(label, columns)
    for name in dict.fromkeys(columns[key] for g in chosen for key in layout.groups[g]):
        if not _numeric(reader.schema.field(name).type):
            raise TrajectoryError(label, f"column {shown(name)}", f"holds {reader.schema.field(name).type}, not "
                                                                  "numbers")
    clock = None if time_col is None else _clock(label, time_col, reader.schema.field(time_col).type, names.unit)
    traj = Trajectory(label, time_col is not None, tuple(chosen), derived, unit="row",
                      wrenched=wrenched_links(chosen), ignored=tuple(name.strip() for name in extras))
    if extras:
        traj.notices.append(ignored(extras))
    groups = {g: [columns[key] for key in layout.groups[g]] for g in chosen}
    traj.chunks = _chunks(reader, label, groups, time_col, clock, traj)
    return traj


def _values_type(kind):
    """The type of a column's values: a dictionary's, or its own."""
    import pyarrow as pa

    return kind.value_type if pa.types.is_dictionary(kind) else kind


def _numeric(kind):
    """Whether a column of this Arrow type holds numbers (a dictionary's values counted)."""
    import pyarrow as pa

    kind = _values_type(kind)
    return pa.types.is_floating(kind) or pa.types.is_integer(kind) or pa.types.is_decimal(kind)


def _clock(label, name, kind, unit):
    """The Clock of the time column: in --time-unit (default s), or in the unit of its timestamp or
    duration type (then --time-unit is refused, the type says it)."""
    import pyarrow as pa

    where = f"column {shown(name)}"
    if pa.types.is_timestamp(kind) or pa.types.is_duration(kind):
        if unit is not None and unit != kind.unit:
            raise TrajectoryError(label, where, f"--time-unit {unit}: the column is a {kind}, in {kind.unit} by its "
                                                "type")
        unit = kind.unit
    elif not _numeric(kind):
        raise TrajectoryError(label, where, f"holds {kind}, not numbers (nor a timestamp or duration)")
    return Clock(label, lambda k: f"row {k}", unit or "s")


class _Reader:
    """Record batches of a Parquet or Arrow IPC file, whichever it turns out to be, with errors as ours."""

    def __init__(self, path, label, fmt):
        import pyarrow as pa

        self.label, self.fmt = label, fmt
        if fmt == "table":
            self.file, self.schema = path, path.schema
            return
        try:
            if fmt == "parquet":
                import pyarrow.parquet as pq

                self.file = pq.ParquetFile(path, pre_buffer=False)  # read a row group at a time, not the file
                self.schema = self.file.schema_arrow
            else:
                source = pa.OSFile(str(path))
                try:
                    self.file = pa.ipc.open_file(source)
                except pa.ArrowInvalid:
                    self.file = pa.ipc.open_stream(pa.OSFile(str(path)))
                self.schema = self.file.schema
        except FileNotFoundError:
            raise TrajectoryError(label, None, "cannot read: No such file or directory") from None
        except (pa.ArrowException, OSError) as exc:
            raise TrajectoryError(label, None, f"not a readable {'Parquet' if fmt == 'parquet' else 'Arrow IPC'} "
                                               f"file: {_first_line(exc)}") from None

    def batches(self, columns):
        import pyarrow as pa

        try:
            if self.fmt == "table":
                yield from self.file.select(columns).to_batches(max_chunksize=BATCH_ROWS)
            elif self.fmt == "parquet":
                yield from self.file.iter_batches(batch_size=BATCH_ROWS, columns=columns)
            elif isinstance(self.file, pa.ipc.RecordBatchFileReader):
                for k in range(self.file.num_record_batches):
                    yield self.file.get_batch(k).select(columns)
            else:
                for batch in self.file:
                    yield batch.select(columns)
        except (pa.ArrowException, OSError) as exc:
            raise TrajectoryError(self.label, None, f"cannot read: {_first_line(exc)}") from None


def numbers_of(column, dtype=np.float64):
    """A float64 (or int64) pyarrow array without nulls as a numpy view of its buffer (pyarrow's
    to_numpy would import pandas, 0.4 s, where it is installed)."""
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if len(column) == 0:
        return np.empty(0, dtype)
    return np.frombuffer(column.buffers()[1], dtype=dtype, count=len(column), offset=8 * column.offset)


def _first_line(exc):
    return str(exc).strip().split("\n")[0][:300]


def _chunks(reader, label, groups, time_col, clock, traj):
    wanted = list(dict.fromkeys([c for cols in groups.values() for c in cols] + ([time_col] if time_col else [])))
    start = 0
    for block in coalesced(reader.batches(wanted), BATCH_ROWS):
        n = block.num_rows
        values = {name: _doubles(block.column(name), label, start, name) for name in wanted if name != time_col}
        data = {g: np.column_stack([values[c] for c in cols]) if cols else np.empty((n, 0)) for g, cols in
                groups.items()}
        data = {g: np.asfortranarray(x) for g, x in data.items()}
        time = None if time_col is None else _seconds(block.column(time_col), clock, label, start, time_col)
        if start == 0 and clock is not None:
            clock.started(traj)
        yield Chunk(start, time, data)
        start += n
    if start == 0:
        raise TrajectoryError(label, None, "no rows")


def coalesced(batches, rows):
    """pyarrow Tables of consecutive record batches, each of `rows` rows or more (the last may hold
    fewer), so that a file of many small batches takes as long as one of few: its rows cost, not
    its batches. Empty batches are left out."""
    import pyarrow as pa

    held, count = [], 0
    for batch in batches:
        if batch.num_rows:
            held.append(batch)
            count += batch.num_rows
        if count >= rows:
            yield pa.Table.from_batches(held)
            held, count = [], 0
    if held:
        yield pa.Table.from_batches(held)


def _cast(column, kind, label, name):
    """The column cast to an Arrow type (a dictionary decoded), as one array; to float64, integers
    beyond 2^53 and decimals round to the nearest double, as a CSV reader reads them (a decimal
    through its text)."""
    import pyarrow as pa

    try:
        if pa.types.is_floating(kind) and pa.types.is_decimal(_values_type(column.type)):
            column = column.cast(pa.string())  # pyarrow's decimal to double is not correctly rounded; its parse is
        return column.cast(kind, safe=not pa.types.is_floating(kind)).combine_chunks()
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid) as exc:
        raise TrajectoryError(label, f"column {shown(name)}", f"holds {column.type}, which cannot be read as "
                                                              f"{kind}: {_first_line(exc)}") from None


def _present(array, label, start, name):
    """The array, an error naming the first null (missing) value."""
    import pyarrow.compute as pc

    if array.null_count:
        k = int(pc.index(pc.is_null(array), True).as_py())
        raise TrajectoryError(label, f"row {start + k}, column {shown(name)}", "missing (null)")
    return array


def _doubles(column, label, start, name):
    """(N,) float64 of a numeric column, checked once converted: present and finite."""
    import pyarrow as pa

    values = numbers_of(_present(_cast(column, pa.float64(), label, name), label, start, name))
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        k = int(bad[0])
        raise TrajectoryError(label, f"row {start + k}, column {shown(name)}", f"not finite: {float(values[k])!r}")
    return values


def _seconds(column, clock, label, start, name):
    """(N,) seconds from time 0 of the time column: integers (and timestamps, durations) counted
    exactly, the rest as doubles (see clock.py)."""
    import pyarrow as pa

    kind = _values_type(column.type)
    if not (pa.types.is_floating(kind) or pa.types.is_decimal(kind)):
        try:
            exact = column.cast(pa.int64()).combine_chunks()  # (an unsigned one beyond 2^63: as a double)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            exact = None
        if exact is not None:
            return clock.seconds(numbers_of(_present(exact, label, start, name), np.int64), start)
    return clock.seconds(_doubles(column, label, start, name), start)
