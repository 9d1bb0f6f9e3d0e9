"""`SQLiteStore.batch`: the calls of one task in one transaction, each keeping its own all-or-nothing effect, with
other tasks and threads waiting for the batch as they wait for any write (and never deadlocking on it)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from windowkeeper import Message
from windowkeeper.storage import ConflictError, SQLiteStore
from windowkeeper.storage.memory import InMemoryStore


def _msg(mid: str) -> Message:
    return Message.text_message(f"text {mid}", message_id=mid, timestamp=1.0)


def _rows(path: Path, table: str) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


async def test_a_batch_is_one_transaction_another_connection_sees_only_when_it_ends(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path, prefix="wk")
    await store.put_state("t", {"n": 0})  # opens the file: the batch below then begins on the loop's thread
    async with store.batch():
        await store.append_messages("t", [_msg("a"), _msg("b")])
        await store.add_record("ns", "s", "k", {"v": 1})
        await store.put_state("t", {"n": 1})
        # the batch's own calls read what it wrote; another connection does not see it yet
        assert [m.message_id for m in await store.load_messages("t")] == ["a", "b"]
        assert _rows(path, "wk_messages") == 0
    assert _rows(path, "wk_messages") == 2
    assert await store.get_state("t") == {"n": 1}
    await store.close()


async def test_a_call_that_fails_inside_a_batch_writes_nothing_and_the_others_are_kept(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    record = await store.add_record("ns", "s", "k", {"v": 1})
    with pytest.raises(ConflictError):
        async with store.batch():
            await store.append_messages("t", [_msg("a")])
            with pytest.raises(ConflictError):
                await store.update_record("ns", "s", "k", {"v": 2}, expected_version=record.version + 5)
            await store.update_record("ns", "s", "k", {"v": 3}, expected_version=record.version)
            await store.add_record("ns", "s", "k", {"v": 4})  # exists: raises, and the batch ends with it
    # every call that returned is kept, as each would be on its own; the failed ones left nothing
    assert [m.message_id for m in await store.load_messages("t")] == ["a"]
    stored = await store.get_record("ns", "s", "k")
    assert stored is not None and stored.doc == {"v": 3} and stored.version == record.version + 1
    await store.close()


async def test_other_tasks_and_threads_wait_for_a_batch_and_lose_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    await store.put_state("warm", {})

    async def batched(n: int) -> None:
        async with store.batch():
            await store.append_messages("t", [_msg(f"b{n}")])
            await asyncio.sleep(0)  # let the other tasks queue up on the lock meanwhile
            await store.add_record("ns", "s", f"b{n}", {"n": n})

    async def single(n: int) -> None:
        await store.append_messages("t", [_msg(f"s{n}")])

    def from_a_thread() -> None:
        for n in range(5):
            asyncio.run(store.add_record("ns", "s", f"th{n}", {"n": n}))

    worker = threading.Thread(target=from_a_thread)
    worker.start()
    # more waiting tasks than the default executor has workers: a batch must never need a worker to go on
    await asyncio.wait_for(asyncio.gather(*(batched(n) for n in range(12)), *(single(n) for n in range(12))), 60)
    worker.join(60)
    ids = {m.message_id for m in await store.load_messages("t")}
    assert ids == {f"b{n}" for n in range(12)} | {f"s{n}" for n in range(12)}
    keys = {r.key for r in await store.list_records("ns", "s")}
    assert keys == {f"b{n}" for n in range(12)} | {f"th{n}" for n in range(5)}
    await store.close()


async def test_a_batch_cancelled_while_waiting_gives_the_lock_back(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    await store.put_state("warm", {})
    entered = asyncio.Event()
    release = asyncio.Event()

    async def holder() -> None:
        async with store.batch():
            entered.set()
            await release.wait()

    async def waiter() -> None:
        async with store.batch():
            await store.put_state("t", {"never": True})

    held = asyncio.create_task(holder())
    await entered.wait()
    waiting = asyncio.create_task(waiter())
    await asyncio.sleep(0.05)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    release.set()
    await held
    await asyncio.wait_for(store.put_state("t", {"after": True}), 10)  # the lock is free again
    assert await store.get_state("t") == {"after": True}
    await store.close()


async def test_the_default_batch_runs_each_call_as_it_comes() -> None:
    store = InMemoryStore()
    async with store.batch():
        await store.append_messages("t", [_msg("a")])
    assert [m.message_id for m in await store.load_messages("t")] == ["a"]
