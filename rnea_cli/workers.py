"""Worker processes: many files at once (cli/batch.py) and a large bag read in parts (sources/bags.py).

Workers are forked while nothing has started polars' threads (a fork of a process whose polars
threads ran may hang); else they are started fresh (spawn, slower to start). Each ends with its
parent, however the parent ends, and ignores Ctrl-C (the parent stops it). A process that is itself
a worker (of this pool, or of another's multiprocessing: a Dask worker) starts none: its work runs
in it. Who hands work to workers says how many engine threads it runs (cli/batch.py: one). The parent hands out the jobs itself over one pipe per
worker, with no thread of its own, so that nothing of the pool is left to write once it is over.
"""

import os
import signal
import sys
import threading

from .errors import RneaError


def usable_cores():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def parallel(function, work, jobs, here=None, fork=False):
    """[function(*args) for args in work], in up to `jobs` worker processes; here when one job does.
    here: a call made in this process meanwhile, its result first (one worker fewer). fork: fork
    even after polars has run (for work that does not use polars: its threads are not in a fork). An
    exception of a job is raised here (the first that comes back); on one, on Ctrl-C, or when a
    worker dies, the other workers are stopped before they write anything."""
    import multiprocessing

    first = [] if here is None else [here]
    if jobs <= 1 or len(work) + len(first) <= 1 or multiprocessing.parent_process() is not None:
        return [call() for call in first] + [function(*args) for args in work]  # (a worker's work runs in it)

    forkable = hasattr(os, "fork") and (fork or "polars" not in sys.modules)
    context = multiprocessing.get_context("fork" if forkable else "spawn")
    main = threading.current_thread() is threading.main_thread()
    pipe = signal.signal(signal.SIGPIPE, signal.SIG_IGN) if main and hasattr(signal, "SIGPIPE") else None
    workers, results = [], [None] * len(work)
    try:
        for _ in range(min(jobs - len(first), len(work))):
            mine, theirs = context.Pipe()
            process = context.Process(target=_serve, args=(theirs, function, os.getpid()), daemon=True)
            process.start()
            theirs.close()
            workers.append((process, mine))
        jobs_left = iter(range(len(work)))
        busy = {}  # connection -> (process, job index)

        def give(process, connection):
            k = next(jobs_left, None)
            try:
                connection.send(None if k is None else (k, work[k]))
            except OSError:
                if k is not None:  # (a worker gone after its last job has nothing left to do)
                    raise _died(process) from None
            if k is not None:
                busy[connection] = (process, k)

        for process, connection in workers:
            give(process, connection)
        done_here = [call() for call in first]
        while busy:
            _collect(busy, results, give)
        return done_here + results
    except BaseException:
        for process, _ in workers:
            if process.is_alive():
                process.terminate()
        raise
    finally:
        for process, connection in workers:
            process.join(5)
            connection.close()
        if pipe is not None:
            signal.signal(signal.SIGPIPE, pipe)


def _collect(busy, results, give):
    """Wait for workers: store each result that came and give its worker the next job; raise the
    exception of a job, or that a worker died."""
    from multiprocessing.connection import wait

    by_sentinel = {process.sentinel: connection for connection, (process, _) in busy.items()}
    for ready in wait([*busy, *by_sentinel]):
        connection = by_sentinel.get(ready, ready)
        if connection not in busy:
            continue  # its answer was taken already, through its other handle
        process, _ = busy.pop(connection)
        try:
            k, (ok, value) = connection.recv()
        except (EOFError, OSError):
            raise _died(process) from None
        if not ok:
            raise value
        results[k] = value
        give(process, connection)


def _died(process):
    process.join(5)
    return RneaError(f"worker process {process.pid}", None, f"ended {_how(process.exitcode)} before its job was "
                                                            "done (out of memory?)")


def _how(code):
    if code is not None and code < 0:
        try:
            return f"by {signal.Signals(-code).name}"
        except ValueError:
            return f"by signal {-code}"
    return f"with status {code}"


def _serve(connection, function, parent):
    """A worker's life: jobs from the parent until it sends None, each answered with
    (index, (True, result)) or (index, (False, exception))."""
    _start(parent)
    while True:
        job = connection.recv()
        if job is None:
            return
        k, args = job
        try:
            answer = (True, function(*args))
        except Exception as exc:  # noqa: BLE001 (the parent raises it)
            answer = (False, exc)
        try:
            connection.send((k, answer))
        except Exception as exc:  # noqa: BLE001 (an exception or result that does not pickle)
            connection.send((k, (False, RuntimeError(f"{type(exc).__name__}: {exc}"))))


def _start(parent):
    """A worker ends with its parent, however the parent ends (Linux: SIGTERM on its death), so
    that no output is written after the command is over. Ctrl-C is the parent's to handle: it
    stops the workers, which say nothing (no traceback of an idle worker interrupted)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, 15)  # PR_SET_PDEATHSIG, SIGTERM
    except (OSError, AttributeError):
        pass  # not Linux: the parent's own handling stops the workers
    if os.getppid() != parent:  # the parent died before the call above
        os._exit(1)
