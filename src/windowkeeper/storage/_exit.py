"""Close server stores still open when the interpreter exits, while their loop threads still run.

A server store keeps its connections on a private loop in a daemon thread. A program that never closes the store
(a script calling ``graph.invoke`` with a `PostgresCheckpointer`, then ending) used to leave that loop to die
with the interpreter: psycopg_pool's worker tasks were destroyed pending ("Task was destroyed but it is
pending!" on stderr) and Redis connections were never closed. ``atexit`` runs before daemon threads stop, so each
store still open is closed there, on its own loop, the way `close()` would.

The stores are held strongly until closed. A store whose owner dropped it (a `Window` that opened one from a URL,
let go without ``close()``) is not finished when the object is: its loop thread keeps running, and the pool's
tasks and connections live on in it. Held weakly, such a store was collected with no one left to close its pool,
and its worker tasks were destroyed pending at exit all the same. Holding it costs the object itself, next to
the thread and connections that outlive it anyway.
"""

from __future__ import annotations

import atexit
import logging
import threading
from typing import Protocol

logger = logging.getLogger(__name__)


class _Closable(Protocol):
    def _close_at_exit(self) -> None: ...


_OPEN: dict[int, _Closable] = {}
"""Stores not closed yet, by ``id()`` (a store need not be hashable)."""
_GUARD = threading.Lock()


def close_at_exit(store: _Closable) -> None:
    """Have ``store._close_at_exit()`` run at interpreter exit unless the store is closed before."""
    with _GUARD:
        _OPEN[id(store)] = store


def closed(store: _Closable) -> None:
    with _GUARD:
        if _OPEN.get(id(store)) is store:
            del _OPEN[id(store)]


@atexit.register
def _close_open_stores() -> None:
    with _GUARD:
        stores = list(_OPEN.values())
        _OPEN.clear()
    for store in stores:
        try:
            store._close_at_exit()
        except Exception as exc:  # exiting anyway: report, never raise from atexit
            logger.debug("closing %r at exit failed: %s", store, exc)


__all__ = ["close_at_exit", "closed"]
