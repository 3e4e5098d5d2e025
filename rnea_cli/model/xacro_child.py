"""The forked child a xacro expansion runs in (xacro_expand.py), and what it may use.

The child may map at most MEMORY bytes more than its parent had, use RNEA_XACRO_TIMEOUT seconds of
CPU (20 by default; and one more of wall time, after which the parent kills it), and is confined by the kernel where it
can be (sandbox.py): no file written, no program run, no TCP connection, files read only in the
robot's folder tree and the packages found, the environment only the variables allowed. Its
outcome, ('ok', URDF bytes) or ('error', ((file, line), message)), comes back pickled over a pipe;
a child that dies says why in the parent's words (CPU time, memory, killed).
"""

import os
import pickle
import signal
import struct

from ..errors import URDFError, shown

MEMORY = 2 << 30


def _timeout():
    """Seconds of CPU (and one more of wall time) the child may take: RNEA_XACRO_TIMEOUT, else 20."""
    text = os.environ.get("RNEA_XACRO_TIMEOUT", "20")
    try:
        seconds = float(text)
    except ValueError:
        seconds = None
    if seconds is None or not 0 < seconds <= 86400:  # (NaN too)
        raise URDFError("RNEA_XACRO_TIMEOUT", None, f"expected seconds, above 0 and at most 86400: {shown(text)}")
    return seconds


def expand_in_child(path, environment, expand):
    """The outcome of expand(confine) in a forked child, confine(files) the call that confines it
    once the files it may read are known (environment: the variables it keeps)."""
    timeout = _timeout()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: limits, expand, send the outcome, end without cleanup
        try:
            os.close(read)
            import resource

            limit = _address_space() + MEMORY  # what the parent had mapped already, and MEMORY more
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            cpu = max(int(timeout), 1)
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            outcome = expand(confine=lambda files: _confine(write, files, environment))
        except BaseException as exc:  # MemoryError and the like, outside xacro
            outcome = ("error", ((path, None), f"xacro failed: {type(exc).__name__}"))
        data = pickle.dumps(outcome)
        with os.fdopen(write, "wb") as out:
            out.write(struct.pack("<Q", len(data)) + data)
        os._exit(0)
    os.close(write)
    return _from_child(pid, read, path, timeout)


def _confine(keep, files, environment):
    """This child as the kernel can confine it (sandbox.py), reading only the files the xacro file
    may read, its environment only the variables allowed: what it needs is imported first."""
    import glob  # noqa: F401  (what expanding imports on its way, imported while it can be read)
    import xml.dom.expatbuilder  # noqa: F401
    import xml.parsers.expat  # noqa: F401

    import xacro.substitution_args  # noqa: F401
    import yaml  # noqa: F401

    from . import sandbox

    for name in set(os.environ) - environment:
        del os.environ[name]
    sandbox.confine(keep, files.roots)


def _address_space():
    """Bytes of address space this process has mapped (Linux), else 0."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _from_child(pid, read, path, timeout):
    import select
    import time

    deadline, chunks = time.monotonic() + timeout + 1, []
    with os.fdopen(read, "rb", buffering=0) as stream:
        while True:
            left = deadline - time.monotonic()
            ready = select.select([stream], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return "error", ((path, None), f"xacro took longer than {timeout + 1:g} s (a runaway macro?)")
            part = stream.read(1 << 20)
            if not part:
                break
            chunks.append(part)
    _, status = os.waitpid(pid, 0)
    data = b"".join(chunks)
    if len(data) < 8 or len(data) != 8 + struct.unpack("<Q", data[:8])[0]:
        why = {signal.SIGXCPU: f"took more than {timeout:g} s of CPU (a runaway macro?)",
               signal.SIGKILL: "was killed"}.get(os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                                                 f"needed more than {MEMORY >> 30} GiB of memory, or crashed")
        return "error", ((path, None), f"xacro {why}")
    return pickle.loads(data[8:])
