"""Close server stores still open when the interpreter exits, while their loop threads still run.

A server store keeps its connections on a private loop in a daemon thread. A program that never closes the store
(a script calling ``graph.invoke`` with a `PostgresCheckpointer`, then ending) used to leave that loop to die
with the interpreter: psycopg_pool's worker tasks were destroyed pending ("Task was destroyed but it is
pending!" on stderr) and Redis connections were never closed. ``atexit`` runs before daemon threads stop, so each
store still open is closed there, on its own loop, the way `close()` would.
"""

from __future__ import annotations

import atexit
import logging
import os
import weakref
from typing import Protocol

logger = logging.getLogger(__name__)


class _Closable(Protocol):
    def _close_at_exit(self) -> None: ...


_OPEN: weakref.WeakSet[_Closable] = weakref.WeakSet()
_PID = os.getpid()


def close_at_exit(store: _Closable) -> None:
    """Have ``store._close_at_exit()`` run at interpreter exit unless the store is garbage or closed before."""
    _OPEN.add(store)


def closed(store: _Closable) -> None:
    _OPEN.discard(store)


@atexit.register
def _close_open_stores() -> None:
    for store in list(_OPEN):
        try:
            store._close_at_exit()
        except Exception as exc:  # exiting anyway: report, never raise from atexit
            logger.debug("closing %r at exit failed: %s", store, exc)


__all__ = ["close_at_exit", "closed"]
