"""``windowkeeper store prune URL [--remove] [--named]`` on SQLite, PostgreSQL and Redis.

Each store holds what a gateway leaves (`windowkeeper.serve`): a thread the recognition index still leads to, one
it no longer does (its head record evicted by a gateway that did not delete thread data yet), one a client named
itself (``X-Windowkeeper-Thread``, never in the index), and a library user's own thread, which prune must never
touch. The dry run lists the orphan with its size and deletes nothing; ``--remove`` deletes exactly its rows.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

from typer.testing import CliRunner

from windowkeeper import Message
from windowkeeper.cli.app import app
from windowkeeper.integrations._threads import OFFLOAD_NAMESPACE, VIEW_NAMESPACE
from windowkeeper.serve.identity import INDEX_NAMESPACE, LINK_NAMESPACE, OPENER_PREFIX, internal_id, link_key
from windowkeeper.serve.threads import STATE_KEY, STATE_NAMESPACE
from windowkeeper.storage import SessionStore
from windowkeeper.storage.url import open_store

SCOPE = "0123456789abcdef"
KEPT = "t" + "a" * 20
ORPHAN = "t" + "b" * 20
NAMED = "my-own-thread"
USER_THREAD = "default"


def _message(thread: str, n: int) -> Message:
    return Message.text_message(f"{thread} message {n} " + "lorem " * 40, message_id=f"{thread}-{n}", timestamp=1.0)


async def _fill(store: SessionStore) -> None:
    session = f"{SCOPE}.-"
    await store.add_record(INDEX_NAMESPACE, session, "00112233aabbccdd", {"threads": {KEPT: [3, "d", 1.0, 0, "x"]}})
    await store.add_record(INDEX_NAMESPACE, session, OPENER_PREFIX + "0011", {"heads": {"00112233aabbccdd": 1.0}})
    for name in (KEPT, ORPHAN, NAMED):
        thread = internal_id(SCOPE, name)
        await store.append_messages(thread, [_message(thread, n) for n in range(3)])
        await store.add_record(STATE_NAMESPACE, thread, STATE_KEY, {"state": "{}"})
        await store.add_record(VIEW_NAMESPACE, thread, "v1", {"json": ["{}"]})
        await store.add_record(OFFLOAD_NAMESPACE, thread, "k1", {"message": {"role": "user", "content": "x"}})
        await store.add_record(LINK_NAMESPACE, thread, link_key(session, "00112233aabbccdd"), {})
    await store.append_messages(USER_THREAD, [_message(USER_THREAD, 0)])


async def _holds(store: SessionStore, name: str) -> int:
    """How many rows of every kind the store holds of gateway thread ``name`` (or of the library user's)."""
    thread = internal_id(SCOPE, name) if name != USER_THREAD else USER_THREAD
    rows = await store.count_messages(thread)
    for namespace in (STATE_NAMESPACE, VIEW_NAMESPACE, OFFLOAD_NAMESPACE, LINK_NAMESPACE):
        rows += len(await store.list_records(namespace, thread))
    return rows


def _prune(url: str, prefix: str, *flags: str) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(app, ["store", "prune", url, "--prefix", prefix, "--json", *flags])
    return result.exit_code, json.loads(result.stdout)


async def _check_backend(url: str, prefix: str) -> None:
    store = open_store(url, prefix=prefix)
    try:
        await _fill(store)
        before = {name: await _holds(store, name) for name in (KEPT, ORPHAN, NAMED, USER_THREAD)}
        assert before == {KEPT: 7, ORPHAN: 7, NAMED: 7, USER_THREAD: 1}

        code, doc = await asyncio.to_thread(_prune, url, prefix)  # the dry run: lists, deletes nothing
        assert code == 1, doc
        threads = doc["threads"]
        assert isinstance(threads, list)
        assert [t["name"] for t in threads] == [ORPHAN]
        assert threads[0]["rows"] == 7 and threads[0]["bytes"] > 3 * 200 and threads[0]["deleted"] is False
        assert await _holds(store, ORPHAN) == 7

        code, doc = await asyncio.to_thread(_prune, url, prefix, "--named")
        assert code == 1
        assert sorted(t["name"] for t in doc["threads"]) == sorted([ORPHAN, NAMED])  # type: ignore[union-attr]

        code, doc = await asyncio.to_thread(_prune, url, prefix, "--remove")
        assert code == 0, doc
        after = {name: await _holds(store, name) for name in (KEPT, ORPHAN, NAMED, USER_THREAD)}
        assert after == {KEPT: 7, ORPHAN: 0, NAMED: 7, USER_THREAD: 1}
        assert await store.get_record(INDEX_NAMESPACE, f"{SCOPE}.-", "00112233aabbccdd") is not None

        code, doc = await asyncio.to_thread(_prune, url, prefix)
        assert code == 0 and doc["threads"] == []
    finally:
        drop = getattr(store, "drop", None)
        if drop is not None:
            await drop()
        await store.close()


def _prefix() -> str:
    return f"wkprune_{uuid.uuid4().hex[:10]}"


def test_prune_on_sqlite(tmp_path: Path) -> None:
    asyncio.run(_check_backend(f"sqlite:///{tmp_path / 'grown.sqlite3'}", "wk"))


def test_prune_on_postgres(postgres_server: str) -> None:
    asyncio.run(_check_backend(postgres_server, _prefix()))


def test_prune_on_redis(redis_server: str) -> None:
    asyncio.run(_check_backend(redis_server, _prefix()))


def test_prune_refuses_a_missing_sqlite_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["store", "prune", str(tmp_path / "nope.sqlite3")])
    assert result.exit_code == 2
    assert "no such database file" in result.output
    assert not (tmp_path / "nope.sqlite3").exists()


def test_the_dry_run_says_how_to_delete(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'grown.sqlite3'}"

    async def fill() -> None:
        store = open_store(url)
        try:
            await _fill(store)
        finally:
            await store.close()

    asyncio.run(fill())
    result = CliRunner().invoke(app, ["store", "prune", url])
    assert result.exit_code == 1
    assert f"orphan: {internal_id(SCOPE, ORPHAN)} (7 rows," in result.output
    assert "--remove" in result.output
    assert NAMED not in result.output  # a thread a client named is kept unless --named
