"""A private event loop in a daemon thread, owned by one server-backed store.

Async drivers (psycopg, redis.asyncio) tie a connection to the loop that opened it. A store, however, outlives
loops: a sync ``graph.invoke`` runs each call in a fresh loop, pytest gives each test its own, and a memory object
may be shared by both. Running all of a store's I/O on a loop it owns makes the store usable from any loop, and
from several at once, at the cost of one thread hop per call.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """Starts lazily; `run` awaits a coroutine on the owned loop from whatever loop the caller is in."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._guard:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def main() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=main, name=self._name, daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    @property
    def started(self) -> bool:
        return self._loop is not None

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        loop = self._ensure()
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            return await coro
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(coro, loop)
        if running is None:
            return future.result()
        return await asyncio.wrap_future(future)

    def run_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        """Block until ``coro`` finished on the owned loop (for shutdown paths outside any loop)."""
        loop = self._ensure()
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def stop(self) -> None:
        """Stop the loop and join the thread; later `run` calls start a new one."""
        with self._guard:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        if thread is threading.current_thread():
            loop.call_soon(loop.stop)
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


__all__ = ["LoopThread"]
