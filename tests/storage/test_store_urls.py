"""Store URLs are parsed by the drivers' own parsers; ?prefix= and driver options reach every constructor."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import pytest

from windowkeeper import ConfigurationError, Message
from windowkeeper.graph.checkpointer import PostgresCheckpointer, RedisCheckpointer, SQLiteCheckpointer
from windowkeeper.memory import PostgresMemory, RedisMemory, SQLiteMemory
from windowkeeper.storage import SQLiteStore
from windowkeeper.storage.url import (
    open_store,
    postgres_target,
    redis_target,
    resolve_prefix,
    safe_url,
    split_prefix,
    sqlite_target,
    with_prefix,
)


def _prefix() -> str:
    return f"wkurl_{uuid.uuid4().hex[:10]}"


def test_split_prefix_keeps_other_parameters_byte_for_byte() -> None:
    url = "postgresql://u@h/db?options=-c%20statement_timeout%3D5000&prefix=abc&sslmode=disable"
    assert split_prefix(url) == ("postgresql://u@h/db?options=-c%20statement_timeout%3D5000&sslmode=disable", "abc")
    assert split_prefix("redis://h:6379/0") == ("redis://h:6379/0", None)
    assert split_prefix(with_prefix("redis://h/0?socket_timeout=3", "p1")) == ("redis://h/0?socket_timeout=3", "p1")


def test_prefix_argument_and_url_must_agree() -> None:
    assert resolve_prefix(None, None, url="x") == "wk"
    assert resolve_prefix("a", None, url="x") == "a"
    assert resolve_prefix(None, "b", url="x") == "b"
    assert resolve_prefix("a", "a", url="x") == "a"
    with pytest.raises(ConfigurationError, match="contradicts"):
        resolve_prefix("a", "b", url="redis://h/0?prefix=a")


def test_postgres_urls_go_through_psycopg() -> None:
    pytest.importorskip("psycopg")
    assert postgres_target("postgresql+psycopg://u@h:5432/db?prefix=x&sslmode=disable") == (
        "postgresql://u@h:5432/db?sslmode=disable",
        "x",
    )
    assert postgres_target("postgres://u@h/db")[0] == "postgresql://u@h/db"
    assert postgres_target("host=h dbname=db user=u") == ("host=h dbname=db user=u", None)
    with pytest.raises(ConfigurationError, match="nosuchoption") as info:
        postgres_target("postgresql://u:secret@h/db?nosuchoption=1")
    assert "secret" not in str(info.value)
    with pytest.raises(ConfigurationError, match="not a PostgreSQL URL"):
        postgres_target("mysql://u@h/db")


def test_redis_urls_go_through_redis_py() -> None:
    pytest.importorskip("redis")
    assert redis_target("redis://127.0.0.1:6379/0?prefix=x&socket_timeout=3") == (
        "redis://127.0.0.1:6379/0?socket_timeout=3",
        "x",
    )
    with pytest.raises(ConfigurationError, match="invalid Redis URL"):
        redis_target("redis://127.0.0.1:6379/0?socket_timeout=soon")
    with pytest.raises(ConfigurationError, match="invalid Redis URL"):
        redis_target("http://127.0.0.1:6379/0")


def test_safe_url_hides_the_password() -> None:
    assert safe_url("postgresql://bob:hunter2@h/db") == "postgresql://bob:***@h/db"
    assert safe_url("redis://h:6379/0") == "redis://h:6379/0"


def test_sqlite_urls(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    url = f"sqlite:////{str(db).lstrip('/')}"
    assert sqlite_target(f"{url}?prefix=p1") == (str(db), "p1", False)
    assert sqlite_target(str(db)) == (str(db), None, False)
    path, prefix, uri = sqlite_target(f"{url}?mode=ro&prefix=p1")
    assert uri and path == f"file:{db}?mode=ro" and prefix == "p1"
    with pytest.raises(ConfigurationError, match="names no database file"):
        sqlite_target("sqlite:///")


async def test_sqlite_prefix_and_read_only_mode(tmp_path: Path) -> None:
    db = tmp_path / "ro.db"
    url = f"sqlite:////{str(db).lstrip('/')}"
    writer = SQLiteCheckpointer(f"{url}?prefix=ck")
    await writer.store.append_messages("t1", [Message.text_message("hello", message_id="m1")])
    await writer.store.close()
    tables = {r[0] for r in sqlite3.connect(db).execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "ck_messages" in tables and "wk_messages" not in tables
    reader = SQLiteStore(f"{url}?mode=ro&prefix=ck")
    assert [m.message_id for m in await reader.load_messages("t1")] == ["m1"]
    with pytest.raises(Exception, match=r"readonly|read-only"):
        await reader.append_messages("t1", [Message.text_message("no", message_id="m2")])
    await reader.close()
    memory = SQLiteMemory(f"{url}?prefix=mem")
    assert memory.store.prefix == "mem"
    await memory.store.close()


async def test_redis_memory_and_checkpointer_take_prefix_from_url(redis_server: str) -> None:
    prefix = _prefix()
    memory = RedisMemory(f"{redis_server}?prefix={prefix}")
    assert memory.store.prefix == prefix
    checkpointer = RedisCheckpointer(f"{redis_server}?prefix={prefix}&socket_timeout=5")
    assert checkpointer.store.prefix == prefix
    await checkpointer.store.append_messages("t", [Message.text_message("hi", message_id="m1")])
    again = open_store(f"{redis_server}?prefix={prefix}")
    assert [m.message_id for m in await again.load_messages("t")] == ["m1"]
    other = open_store(f"{redis_server}?prefix={prefix}x")
    assert await other.load_messages("t") == []
    for store in (memory.store, checkpointer.store, again, other):
        await store.close()


async def test_postgres_memory_and_checkpointer_take_prefix_from_url(postgres_server: str) -> None:
    prefix = _prefix()
    sqlalchemy = postgres_server.replace("postgresql://", "postgresql+psycopg://", 1)
    memory = PostgresMemory(f"{sqlalchemy}?prefix={prefix}&application_name=wk-test")
    assert memory.store.prefix == prefix
    checkpointer = PostgresCheckpointer(f"{postgres_server}?prefix={prefix}&connect_timeout=5")
    assert checkpointer.store.prefix == prefix
    store = checkpointer.store
    await store.append_messages("t", [Message.text_message("hi", message_id="m1")])
    assert [m.message_id for m in await memory.store.load_messages("t")] == ["m1"]
    await store.drop()
    for opened in (memory.store, store):
        await opened.close()


async def test_postgres_reads_run_in_parallel_on_pooled_connections(postgres_server: str) -> None:
    """One connection behind a lock ran these one after another (4 x 0.4 s); the pool runs them side by side."""
    import asyncio
    import time

    from psycopg_pool import AsyncConnectionPool

    from windowkeeper.storage.postgres import PostgresStore

    store = PostgresStore(f"{postgres_server}?prefix={_prefix()}", max_connections=4)

    async def nap(conn: object) -> int:
        cur = await conn.execute("SELECT pg_sleep(0.4), 1")  # type: ignore[attr-defined]
        row = await cur.fetchone()
        return int(row[1])

    await store.load_messages("warm-up")
    started = time.perf_counter()
    assert await asyncio.gather(*(store._run(nap) for _ in range(4))) == [1, 1, 1, 1]
    assert time.perf_counter() - started < 1.2
    assert isinstance(store._pool, AsyncConnectionPool)
    await store.drop()
    await store.close()
