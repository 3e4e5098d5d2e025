"""Iterating in a background thread, so that reading and parsing overlap the computation."""

import queue
import threading


def prefetch(items, depth=2):
    """Iterate `items` in a background thread, up to `depth` ahead (reading and parsing release
    the GIL). Errors are raised in the caller, in order; closing the generator stops the thread."""
    box = queue.Queue(maxsize=depth)
    done = object()
    stop = threading.Event()

    def put(item):
        while not stop.is_set():
            try:
                box.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce():
        try:
            for item in items:
                if not put((item, None)):
                    return
        except BaseException as exc:  # handed to the consumer
            put((None, exc))
            return
        put((done, None))

    thread = threading.Thread(target=produce, name="rnea-reader", daemon=True)
    thread.start()
    try:
        while True:
            item, error = box.get()
            if error is not None:
                raise error
            if item is done:
                return
            yield item
    finally:
        stop.set()
