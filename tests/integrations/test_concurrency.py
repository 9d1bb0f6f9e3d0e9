"""Several writers on one session id, and concurrent fits on different threads of one `Window`."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import TokenBudgetContextManager, Window

from .session_child import batch, write

pytest.importorskip("agents")

BATCHES = 15


def _check_every_item_once_in_order(items: list[dict[str, Any]], writers: list[str]) -> None:
    seen: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for item in items:
        writer, k, part = item["content"].rsplit("-", 2)
        seen[writer].append((int(k), part))
    assert sorted(seen) == sorted(writers)
    for writer in writers:
        # exactly once each, in the writer's order, and the two items of one add_items call side by side
        assert seen[writer] == [(k, part) for k in range(BATCHES) for part in ("a", "b")], writer
    contents = [i["content"] for i in items]
    for i, content in enumerate(contents):
        if content.endswith("-a"):
            assert contents[i + 1] == content[:-1] + "b"


def test_eight_threads_four_tasks_and_four_processes_add_to_one_session(tmp_path: Path) -> None:
    from windowkeeper.integrations.openai_agents import WindowkeeperSession

    store = str(tmp_path / "shared.db")
    session = WindowkeeperSession("shared", store, manager_or_budget=4000)
    asyncio.run(session.add_items(batch("seed", 0)))  # the file exists before the processes open it

    def thread_writer(name: str) -> None:
        async def go() -> None:
            for k in range(BATCHES):
                await session.add_items(batch(name, k))

        asyncio.run(go())

    async def task_writers() -> None:
        async def one(name: str) -> None:
            for k in range(BATCHES):
                await session.add_items(batch(name, k))

        await asyncio.gather(*(one(f"task{n}") for n in range(4)))

    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.integrations.session_child", store, "shared", f"proc{n}", str(BATCHES)]
        )
        for n in range(4)
    ]
    threads = [threading.Thread(target=thread_writer, args=(f"thread{n}",)) for n in range(8)]
    threads.append(threading.Thread(target=lambda: asyncio.run(task_writers())))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for proc in procs:
        assert proc.wait(timeout=120) == 0

    items = asyncio.run(session.all_items())
    writers = [*(f"thread{n}" for n in range(8)), *(f"task{n}" for n in range(4)), *(f"proc{n}" for n in range(4))]
    _check_every_item_once_in_order(items[2:], writers)
    assert len(items) == 2 + 2 * BATCHES * len(writers)
    # a session object opened afterwards reads the same history, and both serve a view of it
    again = WindowkeeperSession("shared", store, manager_or_budget=4000)
    assert asyncio.run(again.all_items()) == items
    assert asyncio.run(again.get_items()) == asyncio.run(session.get_items())
    asyncio.run(again.aclose())
    asyncio.run(session.aclose())


def test_a_session_object_sees_what_another_process_added_and_popped(tmp_path: Path) -> None:
    from windowkeeper.integrations.openai_agents import WindowkeeperSession

    store = str(tmp_path / "two.db")

    async def go() -> None:
        mine = WindowkeeperSession("s", store, manager_or_budget=4000)
        other = WindowkeeperSession("s", store, manager_or_budget=4000)
        await mine.add_items(batch("me", 0))
        assert [i["content"] for i in await mine.all_items()] == ["me-0-a", "me-0-b"]
        await write(store, "s", "proc", 1)
        assert [i["content"] for i in await mine.all_items()] == ["me-0-a", "me-0-b", "proc-0-a", "proc-0-b"]
        assert (await other.pop_item())["content"] == "proc-0-b"
        assert [i["content"] for i in await mine.all_items()] == ["me-0-a", "me-0-b", "proc-0-a"]
        await other.clear_session()
        assert await mine.all_items() == [] and await mine.get_items() == []
        await mine.aclose()
        await other.aclose()

    asyncio.run(go())


def test_concurrent_fits_on_different_threads_return_their_own_metrics(tmp_path: Path) -> None:
    manager = TokenBudgetContextManager(3000, reserve_tokens=500)
    window: Window[Any, Any] = Window(manager, store=str(tmp_path / "w.db"))

    def conversation(n: int) -> list[dict[str, str]]:
        return [
            {"role": "user" if k % 2 == 0 else "assistant", "content": f"thread {n} message {k}"}
            for k in range(2 * n + 1)
        ]

    async def go() -> None:
        for _ in range(3):  # each round the threads' lists grow by two, so every call has its own numbers
            results = await asyncio.gather(*(window.afit(conversation(n), thread_id=f"t{n}") for n in range(1, 13)))
            for n, result in enumerate(results, start=1):
                assert result.metrics is not None
                assert result.metrics.messages_after == len(conversation(n)), n
                assert result.metrics == manager.metrics_for(f"{window._manager_key(f't{n}')}")

    asyncio.run(go())
    window.close()
