"""Tables out: CSV (streamed), JSON, YAML; files are written whole or not at all (temp file + rename).

Every float is written in its shortest round-trip form, so it reads back bit for bit.
"""

import contextlib
import csv
import io
import json
import os
import sys
import tempfile

import numpy as np

from .errors import RneaError
from .trajectory import EXTENSIONS

SMALL_BLOCK = 20_000  # values; smaller blocks are formatted in Python, without importing polars
IN_FLIGHT_BYTES = 1 << 25  # of blocks handed to the writer thread and not yet written


def output_format(path, explicit=None):
    if explicit:
        return explicit
    if path in (None, "-"):
        return "csv"
    return EXTENSIONS.get(os.path.splitext(str(path))[1].lower(), "csv")


@contextlib.contextmanager
def destination(path):
    """A binary stream for path ('-' or None: stdout). A regular file appears only if the block
    succeeds (temp file, then rename); a device or pipe (/dev/null, a FIFO) is written in place."""
    if path in (None, "-"):
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isfile(path):
        try:
            stream = open(path, "wb")
        except OSError as exc:
            raise RneaError(path, None, f"cannot write: {exc.strerror}") from None
        with stream:
            yield stream
        return
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as exc:
        raise RneaError(path, None, f"cannot write: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as stream:
            yield stream
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as open() would have made it, not mkstemp's 0600
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class TableWriter:
    """Writes named float columns; `keys[k]` is the path of column k in a JSON/YAML document,
    e.g. ("time",) or ("tau", "shoulder"); CSV uses `names[k]` as its header. As a context manager
    it closes on success, and on an error drops the blocks not yet written."""

    def __init__(self, stream, fmt, names, keys, background=False):
        self.stream, self.fmt, self.names, self.keys = stream, fmt, names, keys
        self.blocks = []
        self._pool = None
        self._pending = []
        self._polars = False  # polars has written a block
        if background and fmt == "csv":  # format and write in a thread while the next block is computed
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(1, thread_name_prefix="rnea-writer")
        if fmt == "csv":
            self._header = io.StringIO()
            csv.writer(self._header, lineterminator="\n").writerow(names)

    def write(self, block):
        """block: (N, len(names)) floats."""
        if self.fmt != "csv":
            self.blocks.append(np.array(block, dtype=float))
            return
        if self._pool is not None:
            # blocks in flight: enough that the first one's import of polars (0.15-0.3 s) does not
            # hold up the computation, few enough to bound memory; a failed write raises here at once
            while self._pending and (self._pending[0][0].done() or
                                     sum(n for _, n in self._pending) + block.nbytes > IN_FLIGHT_BYTES):
                self._pending.pop(0)[0].result()
            self._pending.append((self._pool.submit(self._write_csv, block), block.nbytes))
            return
        self._write_csv(block)

    def _write_csv(self, block):
        if self._header is not None:  # written with the first rows, so a bad input prints nothing
            self.stream.write(self._header.getvalue().encode())
            self._header = None
        if len(block) == 0:
            return
        # repr: the shortest digits that read back to the same double. Once polars has written a
        # block it writes the rest too, as its notation differs (repr's 1e-05 is its 0.00001): a file
        # whose first block is large (every file of more than one input block) has one notation
        if block.size < SMALL_BLOCK and not self._polars:
            self.stream.write("".join(",".join(map(repr, row)) + "\n" for row in block.tolist()).encode())
            return
        import polars as pl  # the same digits (ryu), in a thread of its own

        self._polars = True
        frame = pl.DataFrame({f"c{k}": block[:, k] for k in range(block.shape[1])})
        frame.write_csv(self.stream, include_header=False)

    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace):
        if kind is None:
            self.close()
        elif self._pool is not None:  # an error: no more output than was already on its way
            self._pool.shutdown(wait=True, cancel_futures=True)

    def close(self):
        if self.fmt == "csv":
            self.write(np.empty((0, len(self.names))))
            for job, _ in self._pending:
                job.result()
            if self._pool is not None:
                self._pool.shutdown()
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
