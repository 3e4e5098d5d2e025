"""Worker processes: many files at once (cli/batch.py) and a large bag read in parts (sources/bags.py).

Workers are forked while nothing has started polars' threads (a fork of a process whose polars
threads ran may hang); else they are started fresh (spawn, slower to start). Each ends with its
parent, however the parent ends, and runs the engine on one thread: the parallel work is theirs.
"""

import os
import sys


def usable_cores():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def parallel(function, work, jobs, here=None):
    """[function(*args) for args in work], in `jobs` worker processes; here when one job does.
    here: a call made in this process meanwhile, its result first (one worker fewer). An
    exception in a worker is raised here (the first in the order of `work`); on one, or on
    Ctrl-C, the other workers are stopped before they write anything."""
    first = [] if here is None else [here]
    if jobs <= 1 or len(work) + len(first) <= 1:
        return [call() for call in first] + [function(*args) for args in work]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    method = "fork" if hasattr(os, "fork") and "polars" not in sys.modules else "spawn"
    pool = ProcessPoolExecutor(min(jobs - len(first), len(work)), mp_context=multiprocessing.get_context(method),
                               initializer=_start, initargs=(os.getpid(),))
    try:
        futures = [pool.submit(function, *args) for args in work]
        results = [call() for call in first] + [future.result() for future in futures]
    except BaseException:
        for process in list(getattr(pool, "_processes", {}).values()):
            process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return results


def one_thread():
    os.environ["RNEA_THREADS"] = "1"  # the engine on one thread; results are the same bits


def _start(parent):
    """A worker ends with its parent, however the parent ends (Linux: SIGTERM on its death), so
    that no output is written after the command is over. Ctrl-C is the parent's to handle: it
    stops the workers, which say nothing (no traceback of an idle worker interrupted)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    one_thread()
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, 15)  # PR_SET_PDEATHSIG, SIGTERM
    except (OSError, AttributeError):
        pass  # not Linux: the parent's own handling stops the pool
    if os.getppid() != parent:  # the parent died before the call above
        os._exit(1)
