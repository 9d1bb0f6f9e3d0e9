"""`bulk_allocation`: the cyclic garbage collector paused while a large batch of objects is built.

Reading thousands of messages back (a restarted process's first checkpoint read) allocates millions of
containers that all stay alive. Each few hundred allocations trigger a young-generation collection that walks
them again, and as the heap grows the full collections follow: measured on a 10k-message read, collection was
more than half the CPU time. Pausing the collector for the batch defers that work to one collection afterwards;
it does not skip any (garbage made meanwhile is collected when the collector runs again).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0
_resume = False


@contextmanager
def bulk_allocation() -> Iterator[None]:
    """Pause automatic collection for the block (nested and concurrent uses: until the last one ends); a collector
    the program itself disabled stays disabled."""
    global _holders, _resume
    with _lock:
        if _holders == 0:
            _resume = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _resume:
                gc.enable()


__all__ = ["bulk_allocation"]
