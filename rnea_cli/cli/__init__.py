"""The `rnea` command: parses arguments, wires a source, the pipeline, a writer and a report.

Data goes to stdout, reports and diagnostics to stderr. Exit status: 0 done (within limits),
1 a limit exceeded (check, payload, scale, compare --max-rms), 2 bad input, 70 a bug of ours,
130 interrupted (Ctrl-C), 141 the reader of stdout went away.
"""

import gc
import os
import signal
import sys

from .group import Group, _say, handled, main  # noqa: F401  (the package's names)

from . import answers, check, excite, identify, pictures, tables  # noqa: E402,F401  (the commands register themselves)


def run():
    """Console-script entry point: restore SIGPIPE so `rnea ... | head` ends quietly."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    # the engine's 6x6 products gain nothing from BLAS threads, which would spin beside the
    # reader and writer threads; set before numpy is imported, unless the user chose
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # numpy's floating-point warnings (with source paths) would come before the one-line error that
    # names the input: every value that reaches an output is checked for being finite instead
    import warnings

    warnings.filterwarnings("ignore", category=RuntimeWarning)
    try:
        main()
    except KeyboardInterrupt:  # between commands' own handling, e.g. while importing
        _say("rnea: interrupted")
        sys.exit(130)
    finally:  # the objects die with the process: no final collection over them
        gc.freeze()


if __name__ == "__main__":
    run()
