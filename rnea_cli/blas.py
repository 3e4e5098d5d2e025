"""BLAS on one thread while the engine runs: its threads gain nothing on the engine's products of
6-row matrices, slow it down on a busy machine, and split the products differently with the
length of the chunk, which would change the last bit of a result (threadpoolctl does it)."""

import contextlib

_controller = None  # threadpoolctl's view of the loaded BLAS libraries, found on first use


def one_thread():
    """A context in which BLAS uses one thread (nothing to do where it already does)."""
    global _controller
    if _controller is None:
        try:
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()
        except Exception:  # no threadpoolctl, or a BLAS it does not know: leave BLAS as it is
            _controller = False
    if not _controller or all(lib.num_threads == 1 for lib in _controller.select(user_api="blas").lib_controllers):
        return contextlib.nullcontext()
    return _controller.limit(limits=1, user_api="blas")
