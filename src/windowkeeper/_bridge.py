"""The one place where synchronous and asynchronous code meet.

Logic is written once, either as coroutines or as a generator core (a plain generator that yields an awaitable
wherever it needs real I/O); these crossings connect it to code on the other side:

- `drive` / `adrive`: the sync and async drivers of a generator core. Its pure-CPU steps run directly on the
  calling thread, so a sync call that does no I/O touches no event loop at all; only the awaitables it yields run
  on one (`run_sync`'s) or are awaited (`adrive`).
- `run_sync`: a synchronous API (``graph.invoke``, ``manager.trim_context``, ``checkpointer.get_state``) runs its
  coroutine to completion on the calling thread's own long-lived loop, and refuses, with an error naming the async
  method to await, when it is called from inside a running loop: blocking there would stall every other task on
  that loop, and nesting loops is not possible. The loop is made once per thread and reused, because
  ``asyncio.run`` per call costs far more than the call itself on Python 3.11: besides making and closing a loop
  (and joining its executor), it formats the finished task, result included, when it puts back the SIGINT handler
  (``signal.getsignal`` builds an enum error message from the handler's repr), which made a sync call on a
  1M-token history several times its async form. The task's first step runs at once, without a loop pass, and a
  library coroutine that needs no task (``direct=True``) is stepped without one until it first waits.
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
import concurrent.futures
import contextlib
import contextvars
import functools
import inspect
import os
import sys
import threading
import weakref
from abc import ABC, abstractmethod
from asyncio.events import _get_running_loop, _set_running_loop
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, ClassVar, ParamSpec, Self, TypeVar

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
    return _get_running_loop() is not None


def refuse_in_loop(caller: str, instead: str) -> None:
    """Raise `RuntimeError` when a blocking ``caller`` is used inside a running loop; ``instead`` is what to await."""
    if _get_running_loop() is not None:
        raise refusal(caller, instead)


def run_sync(work: Callable[[], Coroutine[Any, Any, T]], *, caller: str, instead: str, direct: bool = False) -> T:
    """Run the coroutine ``work()`` to completion from synchronous code.

    ``work`` is a factory rather than a coroutine so that nothing is created (and left un-awaited) when the call
    is refused. ``caller`` names the sync API (``"CompiledGraph.invoke()"``) and ``instead`` the awaitable
    replacement (``"await graph.ainvoke(...)"``) in the error raised inside a running loop.

    ``direct=True`` is for library coroutines that need no task of their own until they first suspend (no
    ``asyncio.timeout``, task groups, anyio or other code that reads ``asyncio.current_task()`` before its first
    real wait, no async generators): they are stepped on this thread without one, so a call that never waits
    (an in-memory checkpointer read) costs what its async form costs; if it does wait, the rest runs as a task.
    """
    if _get_running_loop() is not None:
        raise refusal(caller, instead)
    return _run(work(), direct)


def run_checked(coro: Coroutine[Any, Any, T], *, direct: bool = False, loopless: bool = False) -> T:
    """`run_sync` of ``coro`` itself, for a caller that has checked that no loop runs here (`in_running_loop`):
    a sync read that costs a few microseconds in all names its refusal only when it makes one (`refusal`).

    ``loopless=True`` is for library coroutines that also never look for the running loop before they first
    suspend (no futures, sleeps, executors or loop lookups: an in-memory store's reads). They are stepped as the
    direct ones are, without marking a loop as running (half of what a direct step costs); should one suspend
    after all, the rest runs as a task on this thread's loop."""
    if loopless:
        context = contextvars.copy_context()
        try:
            pending = context.run(coro.send, None)
        except StopIteration as done:
            result: T = done.value
            return result
        return _run(_rest(coro, pending), False, context)  # suspended after all: the rest as a task
    return _run(coro, direct)


def run_sync_anywhere(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine ``work()`` to completion from synchronous code, even inside a running loop.

    For hooks a host calls synchronously from its own async code (the OpenAI Agents SDK's input filter): there
    the coroutine runs on a loop in a worker thread and the calling loop waits for it, which is the price of
    a sync hook. Everywhere else `run_sync`, which refuses inside a loop, is the right crossing.
    """
    if _get_running_loop() is None:
        return _run(work(), False)
    # a thread of its own per call (a pooled one could be the thread this hook is, indirectly, called from), so a
    # loop of its own that asyncio.run closes fully, clients bound to it included (no SIGINT handler off the main
    # thread, so none of the cost `_run` avoids)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="windowkeeper-sync") as pool:
        return pool.submit(lambda: asyncio.run(work())).result()


def drive(core: Generator[Awaitable[Any], Any, T], *, caller: str, instead: str) -> T:
    """Run a generator core to completion from synchronous code.

    A core is logic written once as a plain generator that yields an awaitable wherever it needs real I/O (a
    summarizer call, a store read) and is sent that awaitable's result (or has its exception thrown in). Its
    pure-CPU steps run here directly, with no event loop involved, so a sync call that does no I/O costs exactly
    what the async form (`adrive`) costs; each awaitable runs to completion on this thread's loop (`run_sync`).
    Inside a running loop, the first awaitable is refused (closed, with the core) with the error naming
    ``instead``.
    """
    try:
        step = core.send(None)
        while True:
            if _get_running_loop() is not None:
                _close_awaitable(step)
                core.close()
                raise refusal(caller, instead)
            try:
                value = _run(_awaited(step), False)
            except BaseException as exc:  # the core decides; what it does not handle propagates
                step = core.throw(exc)
            else:
                step = core.send(value)
    except StopIteration as done:
        result: T = done.value
        return result


async def adrive(core: Generator[Awaitable[Any], Any, T]) -> T:
    """The async driver of a generator core (see `drive`): each awaitable it yields is awaited here."""
    try:
        step = core.send(None)
        while True:
            try:
                value = await step
            except BaseException as exc:
                step = core.throw(exc)
            else:
                step = core.send(value)
    except StopIteration as done:
        result: T = done.value
        return result


async def _awaited(step: Awaitable[T]) -> T:
    return await step


def _close_awaitable(step: object) -> None:
    close = getattr(step, "close", None)
    if inspect.iscoroutine(step) and close is not None:
        close()


def refusal(caller: str, instead: str) -> RuntimeError:
    """The error a blocking ``caller`` raises inside a running loop (``instead``: what to await)."""
    return RuntimeError(
        f"{caller} was called from inside a running event loop, where blocking would stall it; use `{instead}` instead",
    )


def _run(coro: Coroutine[Any, Any, T], direct: bool, context: contextvars.Context | None = None) -> T:
    """``coro`` run to completion on this thread's own loop (made on first use, reused by every later call).

    Like ``asyncio.run``, the coroutine runs as a task in a copy of the caller's context, and tasks it leaves
    behind are cancelled before the call returns, so no call sees another's leftovers. Unlike it, the loop (and its
    executor's threads, and loop-bound clients such as an SDK's connection pool) outlive the call. The caller has
    checked that no loop runs in this thread. With ``direct`` the coroutine's steps up to its first suspension run
    without a task (see `run_sync`). ``context`` is the copy a loopless step already ran in (`run_checked`).
    """
    owned = _thread_loop.owned
    if owned is None or owned.generation != _fork_generation or owned.loop.is_closed():
        if owned is not None:
            owned.close()
        owned = _thread_loop.owned = _OwnedLoop()
    loop = owned.loop
    tasks = owned.tasks
    tasks.made = 0
    if context is None:
        context = contextvars.copy_context()
    task: asyncio.Task[T] | None = None
    try:
        if direct:
            _set_running_loop(loop)
            try:
                pending = context.run(coro.send, None)
            except StopIteration as done:
                finished = True
                result: T = done.value
            else:
                finished = False
            finally:
                _set_running_loop(None)
            if finished:
                if loop._ready:  # type: ignore[attr-defined]  # callbacks it scheduled run now, not next call
                    _run_ready(loop)
                return result
            task = asyncio.Task(_rest(coro, pending), loop=loop, context=context)
            return loop.run_until_complete(task)
        task = owned.eager_task(coro, context)
        if task.done():
            if loop._ready:  # type: ignore[attr-defined]
                _run_ready(loop)
            return task.result()
        return loop.run_until_complete(task)
    finally:
        # only a task the call made (or the call's own, interrupted) can be left: all_tasks walks every task
        if tasks.made or (task is not None and not task.done()):
            _cancel_leftovers(loop)


def _run_ready(loop: asyncio.AbstractEventLoop) -> None:
    loop.stop()
    loop.run_forever()


async def _rest(coro: Coroutine[Any, Any, T], pending: Any) -> T:
    """The rest of a coroutine stepped without a task until it suspended on ``pending``, run as a task."""
    result: T = await _Resumed(coro, pending)
    return result


class _Resumed:
    """Awaitable continuing ``coro`` from its suspension on ``pending``: what it yields goes to the task driving
    this, what that task sends or throws goes to ``coro``."""

    __slots__ = ("coro", "pending")

    def __init__(self, coro: Coroutine[Any, Any, Any], pending: Any) -> None:
        self.coro, self.pending = coro, pending

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, pending = self.coro, self.pending
        self.pending = None
        while True:
            try:
                value = yield pending
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                try:
                    pending = coro.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    pending = coro.send(value)
                except StopIteration as done:
                    return done.value


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
    """The loop's task factory: counts the tasks made, so `_run` knows when one may have been left behind.

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
    """One thread's loop for `run_sync`; closed when its thread's locals go (thread exit) or at interpreter exit."""

    __slots__ = ("__weakref__", "generation", "hooks", "ident", "loop", "pid", "slots", "step", "tasks")

    def __init__(self) -> None:
        self.loop = loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        self.generation = _fork_generation
        self.ident = threading.get_ident()
        self.tasks = _TaskCount()
        self.step: Callable[[], object] | None = None
        loop.set_task_factory(self.tasks)
        # the standard loop's instance namespace (see eager_task) and its async generator hooks, looked up once
        standard = isinstance(loop, asyncio.BaseEventLoop) and hasattr(loop, "__dict__")
        self.slots: dict[str, Any] | None = loop.__dict__ if standard else None
        self.hooks = (
            (loop._asyncgen_firstiter_hook, loop._asyncgen_finalizer_hook)  # type: ignore[attr-defined]
            if standard
            else None
        )
        _all_owned.add(self)

    def eager_task(self, coro: Coroutine[Any, Any, T], context: contextvars.Context) -> asyncio.Task[T]:
        """A task for ``coro`` whose first step has run (most calls finish in it).

        On the standard loop the step the new task schedules is taken as it is scheduled and run here directly,
        with the loop marked running (as the loop itself would, the task entered as current, async generators
        registered with the loop): a handle, a loop pass (poll the selector, check timers, look for the
        done-callback in a second pass) cost more than a small call's own work, and a sync call must cost what
        its async form costs. Any other loop gets an ordinary task and pass.
        """
        loop, slots, hooks = self.loop, self.slots, self.hooks
        if slots is None or hooks is None or loop._ready:  # type: ignore[attr-defined]
            task = loop.create_task(coro, context=context)
            _run_ready(loop)
            return task
        slots["call_soon"] = self._take_step  # the task's constructor schedules its first step through this
        try:
            task = asyncio.Task(coro, loop=loop, context=context)
        finally:
            del slots["call_soon"]
        step, self.step = self.step, None
        assert step is not None
        previous = sys.get_asyncgen_hooks()
        sys.set_asyncgen_hooks(*hooks)
        slots["_thread_id"] = self.ident  # what is_running() reads
        _set_running_loop(loop)
        try:
            context.run(step)
        finally:
            _set_running_loop(None)
            slots["_thread_id"] = None
            sys.set_asyncgen_hooks(*previous)
        return task

    def _take_step(
        self, callback: Callable[..., object], *args: Any, context: contextvars.Context | None = None
    ) -> None:
        self.step = functools.partial(callback, *args) if args else callback

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
_fork_generation = 0
"""Bumped in a forked child: a loop made before the fork shares the parent's selector and self-pipe, so the
child's threads get loops of their own (a counter compared per call, where ``os.getpid()`` was a system call)."""


def _forked() -> None:
    global _fork_generation
    _fork_generation += 1


os.register_at_fork(after_in_child=_forked)


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


class Closing(ABC):
    """`close` and ``with``/``async with`` for a class that writes only ``async def aclose()``.

    What such an object holds (an SDK client's connections) lives on an event loop, so the one real way to release
    it is the coroutine; sync callers get it through `run_sync`, which refuses inside a running loop and names the
    ``await`` to use there.
    """

    closing_name: ClassVar[str] = "obj"
    """What the refusal inside a running loop calls the object (``await client.aclose()``)."""

    @abstractmethod
    async def aclose(self) -> None:
        """Release what the object holds, on the running loop."""

    def close(self) -> None:
        """`aclose` from sync code (its resources on this thread's own loop); RuntimeError inside a running loop."""
        name = type(self).__name__
        run_sync(self.aclose, caller=f"{name}.close()", instead=f"await {self.closing_name}.aclose()")

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = [
    "Closing",
    "LoopThread",
    "adrive",
    "drive",
    "in_running_loop",
    "is_async_callable",
    "refuse_in_loop",
    "run_in_daemon",
    "run_in_worker",
    "run_sync",
    "run_sync_anywhere",
]
