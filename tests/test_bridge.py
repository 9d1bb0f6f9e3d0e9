"""The sync/async bridge: one long-lived loop per thread, with asyncio.run's semantics per call."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import threading
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any

import pytest

from windowkeeper._bridge import adrive, drive, run_checked, run_sync, run_sync_anywhere

REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("REQUEST", default="none")


def _sync(work: object) -> object:
    return run_sync(work, caller="f()", instead="await af()")  # type: ignore[arg-type]


def test_calls_on_one_thread_share_one_loop_so_loop_bound_objects_survive() -> None:
    async def make() -> asyncio.Future[str]:
        return asyncio.get_running_loop().create_future()

    future = run_sync(make, caller="f()", instead="await af()")

    async def settle() -> str:
        future.set_result("kept")
        return await future  # only possible on the loop that made it

    assert run_sync(settle, caller="f()", instead="await af()") == "kept"


def test_a_thread_gets_its_own_loop_closed_when_the_thread_ends() -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    async def mine() -> None:
        loops.append(asyncio.get_running_loop())

    run_sync(mine, caller="f()", instead="await af()")
    worker = threading.Thread(target=lambda: run_sync(mine, caller="f()", instead="await af()"))
    worker.start()
    worker.join()
    gc.collect()
    assert loops[0] is not loops[1]
    assert loops[1].is_closed()
    assert not loops[0].is_closed()


async def test_refused_inside_a_running_loop_with_the_awaitable_to_use() -> None:
    made: list[int] = []

    async def work() -> int:
        made.append(1)
        return 1

    with pytest.raises(RuntimeError, match=r"f\(\) was called from inside a running event loop.*`await af\(\)`"):
        run_sync(work, caller="f()", instead="await af()")
    assert made == []  # nothing created, nothing left un-awaited


def test_tasks_a_call_leaves_behind_are_cancelled_before_it_returns() -> None:
    events: list[str] = []

    async def forever() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            events.append("cancelled")

    async def work() -> str:
        asyncio.get_running_loop().create_task(forever())
        await asyncio.sleep(0)
        return "done"

    assert run_sync(work, caller="f()", instead="await af()") == "done"
    assert events == ["cancelled"]


def test_callbacks_a_finished_call_scheduled_run_before_it_returns() -> None:
    ran: list[str] = []

    async def work() -> None:
        asyncio.get_running_loop().call_soon(ran.append, "callback")

    run_sync(work, caller="f()", instead="await af()")
    assert ran == ["callback"]


RUNNERS: dict[str, Callable[[Callable[[], Coroutine[Any, Any, str]]], str]] = {
    "task": lambda work: run_sync(work, caller="f()", instead="await af()"),
    "direct": lambda work: run_sync(work, caller="f()", instead="await af()", direct=True),
    "loopless": lambda work: run_checked(work(), loopless=True),
}


@pytest.mark.parametrize("mode", sorted(RUNNERS))
def test_the_call_sees_a_copy_of_the_callers_context(mode: str) -> None:
    async def work() -> str:
        seen = REQUEST.get()
        REQUEST.set("inside")
        return seen

    token = REQUEST.set("outside")
    try:
        assert RUNNERS[mode](work) == "outside"
        assert REQUEST.get() == "outside"
    finally:
        REQUEST.reset(token)


def test_the_call_runs_as_a_task_so_timeouts_and_suspending_work_behave() -> None:
    async def work() -> tuple[bool, bool, int]:
        loop = asyncio.get_running_loop()
        running = loop.is_running()
        async with asyncio.timeout(5):
            value = await asyncio.to_thread(lambda: 41)
        return asyncio.current_task() is not None, running, value + 1

    assert run_sync(work, caller="f()", instead="await af()") == (True, True, 42)


def test_an_error_propagates_and_the_next_call_works() -> None:
    async def fail() -> None:
        raise ValueError("bad value 7")

    async def fine() -> str:
        await asyncio.sleep(0)
        return "ok"

    with pytest.raises(ValueError, match="bad value 7"):
        run_sync(fail, caller="f()", instead="await af()")
    assert run_sync(fine, caller="f()", instead="await af()") == "ok"


def test_async_generators_of_a_call_are_finalized_on_the_loop() -> None:
    closed: list[str] = []

    async def numbers() -> object:
        try:
            yield 1
            yield 2
        finally:
            closed.append("closed")

    async def first() -> int:
        agen = numbers()
        value = await agen.__anext__()  # type: ignore[attr-defined]
        del agen
        return int(value)

    assert run_sync(first, caller="f()", instead="await af()") == 1
    gc.collect()

    async def later() -> None:
        await asyncio.sleep(0)

    run_sync(later, caller="f()", instead="await af()")  # the loop runs the finalizer it was handed
    assert closed == ["closed"]


async def test_run_sync_anywhere_inside_a_running_loop_runs_on_a_worker_loop() -> None:
    outer = asyncio.get_running_loop()

    async def work() -> bool:
        return asyncio.get_running_loop() is not outer

    assert run_sync_anywhere(work) is True


def test_async_generators_left_on_a_threads_loop_are_closed_when_the_thread_ends() -> None:
    closed: list[str] = []
    kept: list[object] = []  # holds the generator, as an SDK client cache holds its guard

    async def guard() -> object:
        try:
            yield None
        finally:
            closed.append("closed")

    async def open_client() -> None:
        agen = guard()
        await agen.__anext__()  # type: ignore[attr-defined]
        kept.append(agen)

    worker = threading.Thread(target=lambda: run_sync(open_client, caller="f()", instead="await af()"))
    worker.start()
    worker.join()
    gc.collect()
    assert closed == ["closed"]


# -- direct stepping and generator cores ---------------------------------------------------------------------------


def test_a_direct_call_that_never_waits_runs_without_a_task_and_sees_the_loop() -> None:
    async def work() -> tuple[bool, bool]:
        return asyncio.current_task() is None, asyncio.get_running_loop() is not None

    assert run_sync(work, caller="f()", instead="await af()", direct=True) == (True, True)


def test_a_direct_call_that_waits_finishes_as_a_task_on_the_same_loop() -> None:
    seen: list[object] = []

    async def work() -> int:
        loop = asyncio.get_running_loop()
        seen.append(asyncio.current_task())
        value = await asyncio.to_thread(lambda: 20)
        seen.append(asyncio.current_task())
        await asyncio.sleep(0)  # a bare yield is passed through as well
        assert asyncio.get_running_loop() is loop
        return value + 1

    assert run_sync(work, caller="f()", instead="await af()", direct=True) == 21
    assert seen[0] is None and isinstance(seen[1], asyncio.Task)


def test_a_direct_call_keeps_asyncio_run_semantics() -> None:
    events: list[str] = []

    async def forever() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            events.append("cancelled")

    async def work() -> str:
        seen = REQUEST.get()
        REQUEST.set("inside")
        asyncio.get_running_loop().create_task(forever())
        asyncio.get_running_loop().call_soon(events.append, "callback")
        return seen

    async def fail() -> None:
        await asyncio.sleep(0)
        raise ValueError("bad value 8")

    token = REQUEST.set("outside")
    try:
        assert run_sync(work, caller="f()", instead="await af()", direct=True) == "outside"
        assert REQUEST.get() == "outside"  # the call ran in a copy of the caller's context
    finally:
        REQUEST.reset(token)
    assert sorted(events) == ["callback", "cancelled"]  # scheduled callbacks ran, the leftover task was cancelled
    with pytest.raises(ValueError, match="bad value 8"):
        run_sync(fail, caller="f()", instead="await af()", direct=True)


def test_a_loopless_call_that_waits_finishes_as_a_task() -> None:
    async def waits() -> int:
        await asyncio.sleep(0)  # a bare yield: the rest runs as a task on this thread's loop
        value = await asyncio.to_thread(lambda: 20)
        assert isinstance(asyncio.current_task(), asyncio.Task)
        return value + 1

    assert run_checked(waits(), loopless=True) == 21

    async def fails() -> None:
        raise ValueError("bad value 9")

    with pytest.raises(ValueError, match="bad value 9"):
        run_checked(fails(), loopless=True)


def test_only_the_in_memory_store_class_itself_is_read_without_a_loop() -> None:
    from windowkeeper.graph.checkpointer import Checkpointer, InMemoryCheckpointer
    from windowkeeper.storage.memory import InMemoryStore

    class Slower(InMemoryStore):
        async def get_state(self, thread_id: str) -> dict[str, Any] | None:
            await asyncio.sleep(0.001)  # needs the running loop: must not be stepped loopless
            return await super().get_state(thread_id)

    assert InMemoryCheckpointer().steps_without_loop
    slower = Checkpointer(Slower())
    assert not slower.steps_without_loop
    assert slower.get_state("t") is None


async def test_a_direct_call_is_refused_inside_a_running_loop() -> None:
    made: list[int] = []

    async def work() -> int:
        made.append(1)
        return 1

    with pytest.raises(RuntimeError, match=r"f\(\) was called from inside a running event loop"):
        run_sync(work, caller="f()", instead="await af()", direct=True)
    assert made == []


def _core(log: list[str], fail: bool = False) -> Generator[Awaitable[Any], Any, str]:
    log.append("cpu")
    try:
        value = yield _io(fail)
    except LookupError as exc:
        value = f"handled {exc.args[0]}"
    log.append(value)
    return f"done: {value}"


async def _io(fail: bool) -> str:
    await asyncio.sleep(0)
    if fail:
        raise LookupError("missing")
    return "io"


def _pure() -> Generator[Awaitable[Any], Any, int]:
    return 7
    yield  # a generator core that needs no I/O


def test_drive_runs_pure_steps_directly_and_awaitables_on_the_loop() -> None:
    log: list[str] = []
    assert drive(_core(log), caller="f()", instead="await af()") == "done: io"
    assert drive(_core(log, fail=True), caller="f()", instead="await af()") == "done: handled missing"
    assert log == ["cpu", "io", "cpu", "handled missing"]
    assert drive(_pure(), caller="f()", instead="await af()") == 7


async def test_adrive_runs_the_same_core_and_drive_refuses_inside_a_loop() -> None:
    log: list[str] = []
    assert await adrive(_core(log)) == "done: io"
    assert await adrive(_pure()) == 7
    core = _core(log)
    with pytest.raises(RuntimeError, match=r"f\(\) was called from inside a running event loop.*`await af\(\)`"):
        drive(core, caller="f()", instead="await af()")
    assert core.gi_frame is None  # the core was closed, and the awaitable it yielded with it (no warning)
    assert drive(_pure(), caller="f()", instead="await af()") == 7  # a core that never yields needs no loop
