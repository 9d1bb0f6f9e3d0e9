"""Backend-specific behaviour the shared conformance specs cannot reach: corrupt rows, schema versions,
use from several event loops, and the checkpointers' sync API."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from windowkeeper import AgentState, Message
from windowkeeper.errors import StorageError
from windowkeeper.graph.checkpointer import (
    Checkpointer,
    InMemoryCheckpointer,
    PostgresCheckpointer,
    RedisCheckpointer,
    SQLiteCheckpointer,
)
from windowkeeper.storage import SQLiteStore
from windowkeeper.storage.postgres import PostgresStore
from windowkeeper.storage.redis import RedisStore


def _msg(mid: str) -> Message:
    return Message.text_message(f"text {mid}", message_id=mid, timestamp=1.0)


def _prefix() -> str:
    return f"wkt_{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def pg_store(postgres_server: str) -> AsyncIterator[PostgresStore]:
    store = PostgresStore(postgres_server, prefix=_prefix())
    try:
        yield store
    finally:
        await store.drop()
        await store.close()


@pytest.fixture
async def redis_store(redis_server: str) -> AsyncIterator[RedisStore]:
    store = RedisStore(redis_server, prefix=_prefix())
    try:
        yield store
    finally:
        await store.drop()
        await store.close()


# -- corrupt data surfaces as StorageError naming where it is ---------------------------------------------------


async def test_sqlite_corrupt_rows_name_thread_and_key(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "c.db", prefix="wk")
    await store.append_messages("t-bad", [_msg("a"), _msg("b")])
    await store.put_state("t-bad", {"ok": True})
    await store.add_record("ns", "s", "rec-bad", {"ok": True})
    with sqlite3.connect(tmp_path / "c.db") as raw:
        raw.execute('UPDATE wk_messages SET body = \'{"role": "wizard"}\' WHERE message_key = \'"b"\'')
        raw.execute("UPDATE wk_states SET body = '[1, 2]'")
        raw.execute("UPDATE wk_records SET body = 'not json'")
    with pytest.raises(StorageError, match=r"thread 't-bad': stored message #1"):
        await store.load_messages("t-bad")
    with pytest.raises(StorageError, match=r"t-bad.*expected a JSON object"):
        await store.get_state("t-bad")
    with pytest.raises(StorageError, match=r"rec-bad.*not valid JSON"):
        await store.list_records("ns", "s")
    await store.close()


async def test_postgres_corrupt_row_names_thread(pg_store: PostgresStore) -> None:
    await pg_store.append_messages("pg-bad", [_msg("a")])

    async def corrupt(conn: object) -> None:
        body = '{"role": "user", "content": [{"type": "hologram"}]}'
        await conn.execute(f"UPDATE {pg_store.prefix}_messages SET body = %s", (body,))  # type: ignore[attr-defined]

    await pg_store._run(corrupt, write=True)
    with pytest.raises(StorageError, match=r"thread 'pg-bad': stored message #0.*block type"):
        await pg_store.load_messages("pg-bad")


async def test_redis_corrupt_entry_names_thread(redis_store: RedisStore) -> None:
    await redis_store.append_messages("rd:bad", [_msg("a")])
    _, log, state = redis_store._thread_keys("rd:bad")

    async def corrupt() -> None:
        await redis_store._redis().rpush(log, "{truncated")  # type: ignore[misc]
        await redis_store._redis().set(state, '"just a string"')

    await redis_store._do(corrupt)
    with pytest.raises(StorageError, match=r"thread 'rd:bad': stored message #1"):
        await redis_store.load_messages("rd:bad")
    with pytest.raises(StorageError, match=r"rd:bad.*expected a JSON object"):
        await redis_store.get_state("rd:bad")


# -- schema versions ---------------------------------------------------------------------------------------------


async def test_sqlite_schema_version_is_recorded_and_newer_files_refused(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    store = SQLiteStore(path, prefix="wk")
    await store.put_state("t", {"x": 1})
    await store.close()
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT version FROM wk_schema").fetchall() == [(2,)]  # 2: log lengths kept by triggers
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        raw.execute("UPDATE wk_schema SET version = 99")
    newer = SQLiteStore(path, prefix="wk")
    with pytest.raises(StorageError, match="schema version 99"):
        await newer.get_state("t")
    await newer.close()


async def test_sqlite_log_lengths_survive_the_upgrade_and_edits_outside_windowkeeper(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    store = SQLiteStore(path, prefix="wk")
    await store.append_messages("a", [Message(role="user", content=[], message_id=f"m{i}") for i in range(5)])
    await store.append_messages("b", [Message(role="user", content=[], message_id="x")])
    await store.close()
    with sqlite3.connect(path) as raw:  # back to a version 1 file: no length table, no triggers
        for trigger in ("added", "removed", "moved"):
            raw.execute(f"DROP TRIGGER wk_messages_{trigger}")
        raw.execute("DROP TABLE wk_message_counts")
        raw.execute("UPDATE wk_schema SET version = 1")
    store = SQLiteStore(path, prefix="wk")
    assert [await store.count_messages(t) for t in ("a", "b", "c")] == [5, 1, 0]
    await store.append_messages("a", [Message(role="user", content=[], message_id="m0")])  # logged: ignored
    assert await store.count_messages("a") == 5
    await store.close()
    with sqlite3.connect(path) as raw:  # another program deletes and moves rows
        raw.execute("DELETE FROM wk_messages WHERE thread_id = 'a' AND message_key = '\"m1\"'")
        raw.execute("UPDATE wk_messages SET thread_id = 'c' WHERE thread_id = 'b'")
    store = SQLiteStore(path, prefix="wk")
    assert [await store.count_messages(t) for t in ("a", "b", "c")] == [4, 0, 1]
    await store.delete_thread("a")
    assert await store.count_messages("a") == 0
    await store.close()


async def test_postgres_tables_created_on_first_use(pg_store: PostgresStore) -> None:
    await pg_store.put_state("t", {"x": 1})

    async def tables(conn: object) -> list[str]:
        cur = await conn.execute(  # type: ignore[attr-defined]
            "SELECT tablename FROM pg_tables WHERE tablename LIKE %s ORDER BY tablename",
            (f"{pg_store.prefix}_%",),
        )
        return [row[0] for row in await cur.fetchall()]

    names = await pg_store._run(tables)
    assert names == sorted(f"{pg_store.prefix}_{t}" for t in ("messages", "records", "schema", "sessions", "states"))


# -- one store, many event loops ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["postgres", "redis"])
def test_server_store_survives_successive_event_loops(kind: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue(f"{kind}_server")
    cp = PostgresCheckpointer(url, prefix=_prefix()) if kind == "postgres" else RedisCheckpointer(url, prefix=_prefix())
    try:
        for i in range(3):  # each sync call runs in a fresh loop, as a sync graph.invoke would
            state = AgentState(context=[_msg(f"m{i}")])
            cp.put("loops", state, state.context)
        assert [m.message_id for m in cp.get_messages("loops")] == ["m0", "m1", "m2"]
        restored = cp.get_state("loops")
        assert restored is not None and [m.message_id for m in restored.context] == ["m2"]

        async def from_another_loop() -> int:
            return len(await cp.aget_messages("loops"))

        assert asyncio.run(from_another_loop()) == 3
    finally:
        store = cp.store
        assert isinstance(store, (PostgresStore, RedisStore))
        asyncio.run(store.drop())
        cp.close()


# -- checkpointer API ------------------------------------------------------------------------------------------


def test_sync_checkpointer_round_trip(tmp_path: Path) -> None:
    cp = SQLiteCheckpointer(tmp_path / "sync.db")
    state = AgentState(context=[_msg("a"), _msg("b")], context_summary="sum")
    cp.put("t", state, state.context)
    cp.put("t", state, [*state.context, _msg("c")])
    restored = cp.get_state("t")
    assert restored is not None and restored.context_summary == "sum"
    assert [m.message_id for m in cp.get_messages("t")] == ["a", "b", "c"]
    cp.delete("t")
    assert cp.get_state("t") is None and cp.get_messages("t") == []
    cp.close()


async def test_sync_methods_refuse_a_running_loop() -> None:
    cp = InMemoryCheckpointer()
    for call, name in [
        (lambda: cp.put("t", AgentState()), "aput"),
        (lambda: cp.get_state("t"), "aget_state"),
        (lambda: cp.get_messages("t"), "aget_messages"),
        (lambda: cp.delete("t"), "adelete"),
    ]:
        with pytest.raises(RuntimeError, match=rf"await checkpointer\.{name}\("):
            call()
    await cp.aclose()


async def test_checkpointer_rejects_non_state_and_wrong_class() -> None:
    cp = InMemoryCheckpointer()
    with pytest.raises(ValueError, match="AgentState"):
        await cp.aput("t", {"context": []})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="state_cls"):
        await cp.aget_state("t", dict)  # type: ignore[type-var]


async def test_shared_store_is_not_closed_by_a_non_owning_checkpointer(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "shared.db")
    cp = Checkpointer(store, owns_store=False)
    await cp.aput("t", AgentState(), [_msg("x")])
    await cp.aclose()
    assert [m.message_id for m in await store.load_messages("t")] == ["x"]  # still usable
    await store.close()
    with pytest.raises(StorageError, match="closed"):
        await store.load_messages("t")
