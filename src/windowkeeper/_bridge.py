"""The one place where synchronous and asynchronous code meet.

Logic is written once, as coroutines; three crossings connect it to code on the other side:

- `run_sync`: a synchronous API (``graph.invoke``, ``manager.trim_context``, ``checkpointer.get_state``) runs its
  coroutine to completion on the calling thread's own long-lived loop, and refuses, with an error naming the async
  method to await, when it is called from inside a running loop: blocking there would stall every other task on
  that loop, and nesting loops is not possible. The loop is made once per thread and reused, because
  ``asyncio.run`` per call costs far more than the call itself on Python 3.11: besides making and closing a loop
  (and joining its executor), it formats the finished task, result included, when it puts back the SIGINT handler
  (``signal.getsignal`` builds an enum error message from the handler's repr), which made a sync call on a
  1M-token history several times its async form.
- `run_in_worker`: user code that is synchronous (a node function, a tool, a summarizer) runs in a worker thread, so
  the event loop keeps serving other threads of conversation while it works. The caller's context variables go
  along (``contextvars.copy_context``), so injected dependencies and request-scoped values stay visible. With
  ``daemon=True`` the thread is a daemon of its own: a call that never returns can be abandoned by a timeout
  without keeping the interpreter (or ``asyncio.run``'s executor shutdown) waiting for it.
- `LoopThread`: a private loop in a daemon thread for async drivers (psycopg, redis.asyncio) whose connections are
  tied to the loop that opened them, so one store can serve any number of caller loops.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import contextlib
import contextvars
import functools
import inspect
import os
import sys
import threading
import weakref
from collections.abc import Callable, Coroutine, Generator
from typing import Any, ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")


def is_async_callable(fn: object) -> bool:
    """Whether calling ``fn`` returns a coroutine: an ``async def``, a partial of one, or an object whose
    ``__call__`` is one. Everything else is treated as synchronous and run off the loop by its callers."""
    target: Any = fn
    while isinstance(target, functools.partial):
        target = target.func
    if inspect.iscoroutinefunction(target):
        return True
    call = getattr(target, "__call__", None)  # noqa: B004 - callable objects with an async __call__
    return call is not None and inspect.iscoroutinefunction(call)


def in_running_loop() -> bool:
    """Whether the calling thread is currently running an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def refuse_in_loop(caller: str, instead: str) -> None:
    """Raise `RuntimeError` when a blocking ``caller`` is used inside a running loop; ``instead`` is what to await."""
    if in_running_loop():
        raise RuntimeError(
            f"{caller} was called from inside a running event loop, where blocking would stall it; "
            f"use `{instead}` instead",
        )


def run_sync(work: Callable[[], Coroutine[Any, Any, T]], *, caller: str, instead: str) -> T:
    """Run the coroutine ``work()`` to completion from synchronous code.

    ``work`` is a factory rather than a coroutine so that nothing is created (and left un-awaited) when the call
    is refused. ``caller`` names the sync API (``"CompiledGraph.invoke()"``) and ``instead`` the awaitable
    replacement (``"await graph.ainvoke(...)"``) in the error raised inside a running loop.
    """
    refuse_in_loop(caller, instead)
    return drive(work)


def run_sync_anywhere(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine ``work()`` to completion from synchronous code, even inside a running loop.

    For hooks a host calls synchronously from its own async code (the OpenAI Agents SDK's input filter): there
    the coroutine runs on a loop in a worker thread and the calling loop waits for it, which is the price of
    a sync hook. Everywhere else `run_sync`, which refuses inside a loop, is the right crossing.
    """
    if not in_running_loop():
        return drive(work)
    # a thread of its own per call (a pooled one could be the thread this hook is, indirectly, called from), so a
    # loop of its own that asyncio.run closes fully, clients bound to it included (no SIGINT handler off the main
    # thread, so none of the cost `drive` avoids)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="windowkeeper-sync") as pool:
        return pool.submit(lambda: asyncio.run(work())).result()


def drive(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``work()`` run to completion on this thread's own loop (made on first use, reused by every later call).

    Like ``asyncio.run``, the coroutine runs as a task in a copy of the caller's context, and tasks it leaves
    behind are cancelled before the call returns, so no call sees another's leftovers. Unlike it, the loop (and its
    executor's threads, and loop-bound clients such as an SDK's connection pool) outlive the call. Must not be
    called from a thread whose loop is running (`run_sync` checks).
    """
    owned = _thread_loop.owned
    if owned is None or not owned.usable():
        owned = _thread_loop.owned = _OwnedLoop()
    loop = owned.loop
    owned.tasks.made = 0
    task = loop.create_task(work())
    try:
        _first_step(loop)
        if task.done():
            if loop._ready:  # type: ignore[attr-defined]  # callbacks the step scheduled run now, not next call
                loop.stop()
                loop.run_forever()
            return task.result()
        return loop.run_until_complete(task)
    finally:
        # only a task the call made (or the call's own, interrupted) can be left: all_tasks walks every task
        if owned.tasks.made > 1 or not task.done():
            _cancel_leftovers(loop)


def _first_step(loop: asyncio.AbstractEventLoop) -> None:
    """Run the step the new task scheduled, in which most calls finish.

    On the standard loop the one ready handle is run here directly, with the loop marked running (as the loop
    itself would, the task entered as current, async generators registered with the loop): a loop pass (poll
    the selector, check timers, look for the done-callback in a second pass) costs more than a small call's
    own work, and a sync call must cost what its async form costs. Any other loop, or a loop with other work
    ready, gets one ordinary pass.
    """
    ready = getattr(loop, "_ready", None)
    if type(ready) is not collections.deque or len(ready) != 1 or not isinstance(loop, asyncio.BaseEventLoop):
        loop.stop()
        loop.run_forever()
        return
    handle = ready.popleft()
    hooks = sys.get_asyncgen_hooks()
    sys.set_asyncgen_hooks(
        firstiter=loop._asyncgen_firstiter_hook,  # type: ignore[attr-defined]
        finalizer=loop._asyncgen_finalizer_hook,  # type: ignore[attr-defined]
    )
    loop._thread_id = threading.get_ident()  # type: ignore[attr-defined]  # what is_running() reads
    asyncio.events._set_running_loop(loop)
    try:
        handle._run()
    finally:
        asyncio.events._set_running_loop(None)
        loop._thread_id = None  # type: ignore[attr-defined]
        sys.set_asyncgen_hooks(*hooks)


def _cancel_leftovers(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what a call left running on ``loop`` and let it finish (what ``asyncio.run`` does at its end)."""
    pending = asyncio.all_tasks(loop)
    if not pending:
        return
    for task in pending:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    for task in pending:
        if not task.cancelled() and task.exception() is not None:
            loop.call_exception_handler(
                {
                    "message": "unhandled exception in a task left behind by a sync call",
                    "exception": task.exception(),
                    "task": task,
                },
            )


class _TaskCount:
    """The loop's task factory: counts the tasks made, so `drive` knows when one may have been left behind.

    An object of its own rather than a method of `_OwnedLoop`: the loop holds its factory, and a factory holding
    the owner would keep the owner alive as long as anyone holds the loop, so the loop would never be closed.
    """

    __slots__ = ("made",)

    def __init__(self) -> None:
        self.made = 0

    def __call__(
        self,
        loop: asyncio.AbstractEventLoop,
        coro: Generator[Any, None, T] | Coroutine[Any, Any, T],
        /,
        context: contextvars.Context | None = None,
    ) -> asyncio.Future[T]:
        self.made += 1
        return asyncio.Task(coro, loop=loop, context=context)


class _OwnedLoop:
    """One thread's loop for `drive`; closed when its thread's locals go (thread exit) or at interpreter exit."""

    __slots__ = ("__weakref__", "loop", "pid", "tasks")

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        self.tasks = _TaskCount()
        self.loop.set_task_factory(self.tasks)
        _all_owned.add(self)

    def usable(self) -> bool:
        # a forked child inherits the parent's selector and self-pipe: it gets a loop of its own
        if self.pid != os.getpid():
            self.close()
            return False
        return not self.loop.is_closed()

    def shutdown(self) -> None:
        """Close async generators and the executor, then the loop (at interpreter exit, from the main thread)."""
        loop = self.loop
        if loop.is_closed() or loop.is_running() or self.pid != os.getpid():
            return
        try:
            _cancel_leftovers(loop)
            loop.run_until_complete(loop.shutdown_default_executor())
        except RuntimeError:  # another loop runs in this thread: leave the fuller shutdown, still close
            pass
        finally:
            self.close()

    def close(self) -> None:
        """Close the loop; in the process that made it, async generators left on it (an SDK client's guard, see
        `windowkeeper.llm._sdk`) are closed first, so the connections they hold are not leaked."""
        loop = self.loop
        if loop.is_closed() or loop.is_running():
            return
        if self.pid == os.getpid() and not in_running_loop():
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
                for _ in range(3):  # closing transports schedules their connection_lost callbacks: let them run
                    loop.run_until_complete(asyncio.sleep(0))
        loop.close()

    def __del__(self) -> None:
        self.close()


class _ThreadLoop(threading.local):
    owned: _OwnedLoop | None = None


_thread_loop = _ThreadLoop()
_all_owned: weakref.WeakSet[_OwnedLoop] = weakref.WeakSet()


@atexit.register
def _shutdown_owned_loops() -> None:
    for owned in list(_all_owned):
        owned.shutdown()


async def run_in_worker(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)`` in a worker thread of the default executor, with the caller's context variables.

    For user code that returns: the executor's threads are reused, so a call costs a thread hop, not a thread.
    """
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    call = functools.partial(context.run, fn, *args, **kwargs)
    return await loop.run_in_executor(None, call)


async def run_in_daemon(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)`` in a new daemon thread, with the caller's context variables.

    For user code that may never return (a summarizer stuck on a socket): when the awaiting side gives up
    (``asyncio.wait_for`` timing out, a cancelled task) the thread is abandoned, its eventual result dropped, and
    neither the loop's shutdown nor the interpreter's exit waits for it.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(outcome: Callable[[], None]) -> None:
        if not future.done():
            outcome()

    def main() -> None:
        try:
            value = context.run(fn, *args, **kwargs)
        except BaseException as exc:  # handed to the awaiting side, which decides
            error = exc
            _call_soon(loop, settle, lambda: future.set_exception(error))
        else:
            _call_soon(loop, settle, lambda: future.set_result(value))

    name = f"windowkeeper-worker-{getattr(fn, '__qualname__', type(fn).__name__)}"
    threading.Thread(target=main, name=name, daemon=True).start()
    return await future


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> None:
    """Schedule ``fn`` on ``loop`` from another thread; a loop closed meanwhile means nobody waits any more."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(fn, *args)


class LoopThread:
    """A private event loop in a daemon thread; `run` awaits a coroutine on it from whatever loop the caller is in.

    Starts lazily, on the first `run`; `stop` ends it and a later `run` starts a new one.
    """

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
        running = asyncio.get_running_loop()
        if running is loop:
            return await coro
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(coro, loop)
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


__all__ = [
    "LoopThread",
    "drive",
    "in_running_loop",
    "is_async_callable",
    "refuse_in_loop",
    "run_in_daemon",
    "run_in_worker",
    "run_sync",
    "run_sync_anywhere",
]
