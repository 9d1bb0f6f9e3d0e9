"""The store's own connections killed between calls (``pg_terminate_backend``, Redis ``CLIENT KILL``): no read
and no version-checked write fails, nothing reaches stderr; an unguarded update that would run twice fails typed."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from windowkeeper import Message
from windowkeeper.errors import StorageError
from windowkeeper.storage import SessionStore
from windowkeeper.storage.postgres import PostgresStore
from windowkeeper.storage.redis import RedisStore

ROUNDS = 5


def _kill_postgres(url: str, prefix: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s",
            (f"windowkeeper-{prefix}",),
        ).fetchone()
    assert row is not None
    return int(row[0])


def _kill_redis(url: str, prefix: str) -> int:
    import redis

    with redis.Redis.from_url(url) as admin:
        mine = [c for c in admin.client_list() if c.get("name") == f"windowkeeper-{prefix}"]
        for client in mine:
            admin.client_kill_filter(_id=client["id"])
    return len(mine)


async def _rounds(store: SessionStore, kill: object) -> tuple[int, int, int]:
    """``(connections killed, failed reads, failed version-checked writes)`` over `ROUNDS` kill rounds."""
    await store.append_messages("t", [Message.text_message("a", message_id="a", timestamp=1.0)])
    record = await store.add_record("ns", "s", "k", {"v": 0})
    killed = failed_reads = failed_writes = 0
    for round_no in range(ROUNDS):
        await asyncio.gather(*(store.load_messages("t") for _ in range(6)))  # several pooled connections
        killed += kill()  # type: ignore[operator]
        for _ in range(3):
            try:
                assert [m.message_id for m in await store.load_messages("t")] == ["a"]
                got = await store.get_record("ns", "s", "k")
                assert got is not None and got.version == record.version
            except StorageError:
                failed_reads += 1
            try:
                record = await store.update_record("ns", "s", "k", {"v": round_no}, expected_version=record.version)
                await store.append_messages("t", [Message.text_message("a", message_id="a", timestamp=1.0)])
                await store.put_state("t", {"round": round_no})
            except StorageError:
                failed_writes += 1
    return killed, failed_reads, failed_writes


async def test_postgres_survives_terminated_backends(postgres_server: str, capfd: pytest.CaptureFixture[str]) -> None:
    prefix = f"wkr_{uuid.uuid4().hex[:10]}"
    store = PostgresStore(postgres_server, prefix=prefix)
    try:
        killed, failed_reads, failed_writes = await _rounds(store, lambda: _kill_postgres(postgres_server, prefix))
    finally:
        await store.drop()
        await store.close()
    assert killed >= 2 * ROUNDS
    assert (failed_reads, failed_writes) == (0, 0)
    assert capfd.readouterr().err == ""


async def test_redis_survives_killed_clients(redis_server: str, capfd: pytest.CaptureFixture[str]) -> None:
    prefix = f"wkr_{uuid.uuid4().hex[:10]}"
    store = RedisStore(redis_server, prefix=prefix)
    try:
        killed, failed_reads, failed_writes = await _rounds(store, lambda: _kill_redis(redis_server, prefix))
        # an update without an expected version is not retried (a lost reply would make it bump twice)
        _kill_redis(redis_server, prefix)
        with pytest.raises(StorageError, match="Redis error"):
            await store.update_record("ns", "s", "k", {"v": "unguarded"})
        assert (await store.get_record("ns", "s", "k")).doc == {"v": ROUNDS - 1}  # type: ignore[union-attr]
    finally:
        await store.drop()
        await store.close()
    assert killed >= ROUNDS
    assert (failed_reads, failed_writes) == (0, 0)
    assert capfd.readouterr().err == ""
