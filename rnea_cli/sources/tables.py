"""Parquet and Arrow IPC (Feather v2) trajectories, read by pyarrow a row group / record batch at a
time: the CSV's column names (or --columns), numeric columns only, no nulls."""

import numpy as np

from ..errors import TrajectoryError, shown
from .base import Chunk, Trajectory, ignored
from .layout import wrenched_links

BATCH_ROWS = 1 << 16


def open_table(path, label, fmt, layout, names):
    """A Trajectory over a Parquet or Arrow IPC file, or (fmt 'table') an in-memory pyarrow Table."""
    import pyarrow as pa

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
    names.check_found(label, set(columns.values()) | ({time_col} if time_col else set()), reader.schema.names)
    chosen, derived = layout.choose(label, columns)
    wanted = [columns[key] for g in chosen for key in layout.groups[g]] + ([time_col] if time_col else [])
    for name in dict.fromkeys(wanted):
        kind = reader.schema.field(name).type
        kind = kind.value_type if pa.types.is_dictionary(kind) else kind  # dictionary-encoded numbers are numbers
        if not (pa.types.is_floating(kind) or pa.types.is_integer(kind) or pa.types.is_decimal(kind)):
            raise TrajectoryError(label, f"column {shown(name)}", f"holds {kind}, not numbers")
    traj = Trajectory(label, time_col is not None, tuple(chosen), derived, unit="row",
                      wrenched=wrenched_links(chosen))
    if extras:
        traj.notices.append(ignored(extras))
    groups = {g: [columns[key] for key in layout.groups[g]] for g in chosen}
    traj.chunks = _chunks(reader, label, groups, time_col, names.scale)
    return traj


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
                source = pa.OSFile(path)
                try:
                    self.file = pa.ipc.open_file(source)
                except pa.ArrowInvalid:
                    self.file = pa.ipc.open_stream(pa.OSFile(path))
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


def numbers_of(column):
    """A float64 pyarrow array without nulls as a numpy view of its buffer (pyarrow's to_numpy
    would import pandas, 0.4 s, where it is installed)."""
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        return np.concatenate([numbers_of(part) for part in column.chunks]) if column.num_chunks else np.empty(0)
    return np.frombuffer(column.buffers()[1], dtype=np.float64, count=len(column), offset=8 * column.offset)


def arrow_of(values):
    """A pyarrow float64 array over a numpy array's memory (pa.array would import pandas)."""
    import pyarrow as pa

    values = np.ascontiguousarray(values, dtype=np.float64)
    return pa.Array.from_buffers(pa.float64(), len(values), [None, pa.py_buffer(values)])


def _first_line(exc):
    return str(exc).strip().split("\n")[0][:300]


def _chunks(reader, label, groups, time_col, time_scale):
    import pyarrow as pa
    import pyarrow.compute as pc

    wanted = list(dict.fromkeys([c for cols in groups.values() for c in cols] + ([time_col] if time_col else [])))
    start = 0
    for batch in reader.batches(wanted):
        values = {}
        for name in wanted:
            column = batch.column(name)  # (a dictionary-encoded one is decoded by the cast below)
            if column.null_count:
                k = int(pc.index(pc.is_null(column), True).as_py())
                raise TrajectoryError(label, f"row {start + k}, column {shown(name)}", "missing (null)")
            # integers beyond 2^53 round to the nearest double, as a CSV reader reads them
            array = numbers_of(column.cast(pa.float64(), safe=not pa.types.is_integer(column.type)))
            bad = np.flatnonzero(~np.isfinite(array))
            if bad.size:
                raise TrajectoryError(label, f"row {start + int(bad[0])}, column {shown(name)}",
                                      f"not finite: {float(array[bad[0]])!r}")
            values[name] = array
        n = batch.num_rows
        data = {g: np.column_stack([values[c] for c in cols]) if cols else np.empty((n, 0)) for g, cols in
                groups.items()}
        data = {g: np.asfortranarray(x) for g, x in data.items()}
        time = None if time_col is None else values[time_col] * time_scale if time_scale != 1.0 else values[time_col]
        if n:
            yield Chunk(start, time, data)
        start += n
    if start == 0:
        raise TrajectoryError(label, None, "no rows")
