"""The store's own connections killed between calls (``pg_terminate_backend``, Redis ``CLIENT KILL``): no read
and no version-checked write fails, nothing reaches stderr; an unguarded update that would run twice fails typed."""

from __future__ import annotations

import asyncio
import logging
import sys
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
    # an application that logs warnings to stderr sees no driver noise either
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    level, root.level = root.level, logging.WARNING
    root.addHandler(handler)
    try:
        killed, failed_reads, failed_writes = await _rounds(store, lambda: _kill_postgres(postgres_server, prefix))
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
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
        # an update without an expected version is not retried (a lost reply would make it bump twice): it fails
        # typed, or, with a driver that finds the killed idle connection before sending on it (redis-py 8 checks a
        # pooled connection on checkout), it is sent once on a new one; never applied twice
        before = await store.get_record("ns", "s", "k")
        assert before is not None and before.doc == {"v": ROUNDS - 1}
        _kill_redis(redis_server, prefix)
        try:
            await store.update_record("ns", "s", "k", {"v": "unguarded"})
        except StorageError as exc:
            assert "Redis error" in str(exc)
            assert (await store.get_record("ns", "s", "k")).doc == {"v": ROUNDS - 1}  # type: ignore[union-attr]
        else:
            after = await store.get_record("ns", "s", "k")
            assert after is not None and (after.doc, after.version) == ({"v": "unguarded"}, before.version + 1)
    finally:
        await store.drop()
        await store.close()
    assert killed >= ROUNDS
    assert (failed_reads, failed_writes) == (0, 0)
    assert capfd.readouterr().err == ""


SYNC_SCRIPT = """
import sys
from windowkeeper import Message
from windowkeeper.context import MessageContextManager
from windowkeeper.graph import END, Agent, PostgresCheckpointer, RedisCheckpointer, StateGraph
from windowkeeper.llm import ScriptedClient

kind, url, prefix = sys.argv[1:4]
client = ScriptedClient(default=lambda req: "seen " + ",".join(m.text() for m in req.messages if m.role == "user"))
graph = StateGraph(context_manager=MessageContextManager(max_messages=2))
graph.add_node("MAIN", Agent(client=client, trim_context=True))
graph.add_edge("MAIN", END)
graph.set_entry_point("MAIN")
checkpointer = (PostgresCheckpointer if kind == "postgres" else RedisCheckpointer)(url, prefix=prefix)
app = graph.compile(checkpointer=checkpointer)
for turn in range(3):
    result = app.invoke({"messages": [Message.text_message(f"t{turn}", message_id=f"u{turn}")]}, {"thread_id": "p"})
print(result["messages"][-1].text())
"""


@pytest.mark.parametrize("kind", ["postgres", "redis"])
def test_sync_invoke_that_never_closes_its_checkpointer_exits_quietly(
    kind: str, request: pytest.FixtureRequest
) -> None:
    """The store's loop resources are released at exit: no "Task was destroyed but it is pending", no unclosed
    connection, with every warning shown (``-W always``)."""
    import subprocess

    url = str(request.getfixturevalue(f"{kind}_server"))
    prefix = f"wky_{uuid.uuid4().hex[:10]}"
    try:
        proc = subprocess.run(
            [sys.executable, "-W", "always", "-X", "tracemalloc", "-c", SYNC_SCRIPT, kind, url, prefix],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        opener = PostgresStore if kind == "postgres" else RedisStore
        store: SessionStore = opener(url, prefix=prefix)
        asyncio.run(_drop_and_close(store))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "seen t1,t2"
    assert proc.stderr == ""


async def _drop_and_close(store: SessionStore) -> None:
    await store.drop()  # type: ignore[attr-defined]
    await store.close()
