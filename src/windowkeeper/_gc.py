"""`bulk_allocation`: the cyclic garbage collector paused while a large batch of lasting objects is built.

Reading thousands of messages back (a restarted process's first checkpoint read) allocates hundreds of thousands
of containers that all stay alive: the view is kept, by the caller and by the checkpointer's memory of it. Each
few hundred allocations trigger a young-generation collection that walks them again, and as the heap grows the
full collections follow: measured on a 10k-message read, collection was more than half the CPU time. So the
collector is paused for the batch.

When it ends, what the batch built is moved straight to the oldest generation (`gc.freeze` then `gc.unfreeze`,
which the gc module documents as putting the frozen objects back into the oldest generation). Left young, every
object of the view would be walked by the next young collection (~3 us a message at 10k) and by the middle
generation's after it (~5 us), only to be found alive and promoted anyway. Nothing is skipped that could free
memory: objects without reference cycles are freed by their reference counts wherever they sit, and the rare
cyclic garbage made meanwhile (by this batch or another thread) waits for the next full collection instead of a
young one. A program that froze objects itself (`gc.get_freeze_count()` above zero, e.g. before forking workers)
is left as it is: unfreezing would hand its frozen objects back to the collector, so its batch's objects stay
young and are walked as before.
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
    """Pause automatic collection for the block (nested and concurrent uses: until the last one ends), then move
    what survived it to the oldest generation (see the module note); a collector the program itself disabled
    stays disabled, and then nothing is moved."""
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
                if gc.get_freeze_count() == 0:
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()


__all__ = ["bulk_allocation"]
