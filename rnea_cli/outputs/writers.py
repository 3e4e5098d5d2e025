"""Tables out: CSV (streamed, formatted by polars), JSON, YAML, Parquet and Arrow IPC, one writer
class per format behind one interface: write(block), close(), and a context manager that closes on
success and drops what is not yet written on an error. `table_writer` picks the format's.

Every float is written in its shortest round-trip form, so it reads back bit for bit. Where the
bytes go is the caller's: a destination (destinations.py) makes a file whole or absent.
"""

import io
import json
import os

import numpy as np

from ..errors import RneaError

IN_FLIGHT_BYTES = 1 << 25  # of blocks handed to the writer thread and not yet written
FORMATS = ("csv", "json", "yaml", "parquet", "arrow")
EXTENSIONS = {".csv": "csv", ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".parquet": "parquet",
              ".arrow": "arrow", ".feather": "arrow", ".ipc": "arrow"}


def output_format(path, explicit=None):
    """The format asked for, else the one path's extension names (CSV for stdout, or any other)."""
    if explicit:
        return explicit
    if path in (None, "-"):
        return "csv"
    return EXTENSIONS.get(os.path.splitext(str(path))[1].lower(), "csv")


def table_writer(stream, fmt, names, keys, background=False):
    """The writer of format fmt (one of FORMATS) into a binary stream. names[k] is column k's name
    (CSV, Parquet, Arrow), keys[k] its path in a JSON/YAML document, e.g. ("time",) or ("tau",
    "shoulder"). background: write the blocks in a thread while the caller computes the next (the
    streamed formats; a document is written whole when closed)."""
    return WRITERS[fmt](stream, names, keys, background)


class TableWriter:
    """Writes named float columns, a block of rows at a time (the interface of every format)."""

    def __init__(self, stream, names, keys, background=False):  # noqa: ARG002 (background: a streamed format's)
        self.stream, self.names, self.keys = stream, names, keys

    def write(self, block):
        """block: (N, len(names)) floats."""
        raise NotImplementedError

    def close(self):
        """Write what is left (a footer, a whole document)."""
        raise NotImplementedError

    def _drop(self):
        """After an error: write nothing more."""

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

    def _empty(self):
        return np.empty((0, len(self.names)))


class _Streamed(TableWriter):
    """A format written block by block as they come, in a writer thread if asked (at most
    IN_FLIGHT_BYTES of blocks waiting for it); subclasses write a block (`_write`) and the end (`_end`)."""

    def __init__(self, stream, names, keys, background=False):
        super().__init__(stream, names, keys)
        self._pending, self._pool = [], None
        if background:  # written in a thread while the next block is computed
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(1, thread_name_prefix="rnea-writer")

    def write(self, block):
        if self._pool is None:
            self._write(block)
            return
        # blocks in flight: bounded memory; a failed write raises here at once
        while self._pending and (self._pending[0][0].done() or
                                 sum(n for _, n in self._pending) + block.nbytes > IN_FLIGHT_BYTES):
            self._pending.pop(0)[0].result()
        self._pending.append((self._pool.submit(self._write, block), block.nbytes))

    def close(self):
        try:
            for job, _ in self._pending:
                job.result()
        finally:
            self._stop()
        self._end()

    def _drop(self):
        self._stop()

    def _stop(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


class CsvWriter(_Streamed):
    """CSV formatted by polars: shortest round-trip digits, one notation for every value of a file
    whatever its blocks; the header written with the first rows, so that a bad input prints nothing."""

    def __init__(self, stream, names, keys, background=False):
        super().__init__(stream, names, keys, background)
        self._header = True

    def _write(self, block):
        import polars as pl

        if self._header:
            self._header = False
            self.stream.write((",".join(_csv_name(n) for n in self.names) + "\n").encode())
        if len(block):  # formatted into memory, then written through the stream that names the output
            text = io.BytesIO()
            pl.DataFrame({f"c{k}": block[:, k] for k in range(block.shape[1])}).write_csv(text, include_header=False)
            self.stream.write(text.getbuffer())

    def _end(self):
        self._write(self._empty())


def _csv_name(name):
    """A header cell: quoted when it holds a delimiter, quote or line break."""
    return '"' + name.replace('"', '""') + '"' if any(c in name for c in ',"\r\n') else name


class _ArrowFile(_Streamed):
    """A file pyarrow writes, a table per block (Parquet, Arrow IPC); subclasses open pyarrow's
    writer (`_open`). Dropped after an error, it writes no footer (`_drop`)."""

    def __init__(self, stream, names, keys, background=False):
        super().__init__(stream, names, keys, background)
        self._arrow = self._sink = None

    def _write(self, block):
        import pyarrow as pa

        table = pa.Table.from_arrays([arrow_of(block[:, k]) for k in range(block.shape[1])], names=list(self.names))
        try:
            if self._arrow is None:
                self._sink = _Sink(getattr(self.stream, "stream", self.stream))
                self._arrow = self._open(self._sink, table.schema)
            self._arrow.write_table(table)
        except OSError as exc:
            raise self._error(exc) from None

    def _end(self):
        if self._arrow is None:
            self._write(self._empty())
        try:
            self._arrow.close()
        except OSError as exc:
            raise self._error(exc) from None

    def _error(self, exc):
        return RneaError(getattr(self.stream, "label", "output"), None, f"cannot write: {exc}")

    def _drop(self):
        """No more output than was already on its way, and no footer: a Parquet writer freed writes
        one, which would make a cut-off table on stdout read as whole (or, into a closed file at
        garbage collection, print "Exception ignored")."""
        try:
            super()._drop()
        finally:
            if self._arrow is not None:
                self._sink.dropped = True
                self._arrow = None


class ParquetWriter(_ArrowFile):
    def _open(self, sink, schema):
        import pyarrow.parquet as pq

        # no dictionary pages: computed doubles hardly repeat, and trying them cost 3-4x the
        # writing time and a larger file (benchmarks/README.md)
        return pq.ParquetWriter(sink, schema, use_dictionary=False)


class ArrowWriter(_ArrowFile):
    def _open(self, sink, schema):
        import pyarrow as pa

        return pa.ipc.new_file(sink, schema)


def arrow_of(values):
    """A pyarrow float64 array over a numpy array's memory (pa.array would import pandas)."""
    import pyarrow as pa

    values = np.ascontiguousarray(values, dtype=np.float64)
    return pa.Array.from_buffers(pa.float64(), len(values), [None, pa.py_buffer(values)])


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


class _Document(TableWriter):
    """A JSON or YAML document {key: column}, nested by the keys' paths, written whole when closed;
    subclasses give its text (`_text`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.blocks = []

    def write(self, block):
        self.blocks.append(np.array(block, dtype=float))

    def close(self):
        data = np.concatenate(self.blocks) if self.blocks else self._empty()
        doc = {}
        for k, key in enumerate(self.keys):
            node = doc
            for part in key[:-1]:
                node = node.setdefault(part, {})
            node[key[-1]] = data[:, k].tolist()
        self.stream.write(self._text(doc).encode())


class JsonWriter(_Document):
    def _text(self, doc):
        return json.dumps(doc) + "\n"


class YamlWriter(_Document):
    def _text(self, doc):
        import yaml

        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        return yaml.dump(doc, Dumper=dumper, sort_keys=False, default_flow_style=None, width=100)


WRITERS = {"csv": CsvWriter, "json": JsonWriter, "yaml": YamlWriter, "parquet": ParquetWriter, "arrow": ArrowWriter}
