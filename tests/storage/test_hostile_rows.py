"""Hostile rows and docs, edited straight into SQLite, PostgreSQL and Redis: every read and write of the edited
session fails with a `StorageError` naming backend, prefix, session and key (never a builtin error), no seq is
ever handed out twice, other sessions never notice, and ``store check --remove`` gives the session back."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import Message
from windowkeeper.errors import StorageError
from windowkeeper.memory import InMemoryMemory
from windowkeeper.memory.stored import check_doc
from windowkeeper.storage import SessionStore, open_store
from windowkeeper.storage.check import check_store
from windowkeeper.storage.url import with_prefix

NS = "memory"


class Editor:
    """Writes raw values into a backend's rows the way an operator with database access could."""

    def __init__(self, kind: str, store: Any, target: str) -> None:
        self.kind, self.store, self.target = kind, store, target
        self.prefix: str = store.prefix
        self.store_docs: dict[str, dict[str, Any]] = {}

    def _sql(self, statement: str, args: tuple[Any, ...]) -> None:
        if self.kind == "sqlite":
            with sqlite3.connect(self.target) as conn:
                conn.execute(statement.replace("%s", "?"), args)
            conn.close()
        else:
            import psycopg

            with psycopg.connect(self.target, autocommit=True) as pg:
                pg.execute(statement, args)

    def _redis(self) -> Any:
        import redis

        return redis.Redis.from_url(self.target, decode_responses=True)

    def record(self, sid: str, key: str, column: str, value: Any) -> None:
        if self.kind != "redis":
            self._sql(
                f"UPDATE {self.prefix}_records SET {column} = %s WHERE namespace = %s AND session_id = %s AND key = %s",
                (value, NS, sid, key),
            )
            return
        body_k, ver_k, order_k, _ = self.store._session_keys(NS, sid)
        with self._redis() as client:
            if column == "body":
                client.hset(body_k, key, value)
            elif column == "version":
                client.hset(ver_k, key, value)
            else:
                client.zadd(order_k, {key: value})

    def drop_part(self, sid: str, key: str) -> None:
        """Delete the version of a record (Redis: its ver hash field; SQL: not possible, the body is emptied)."""
        if self.kind != "redis":
            self.record(sid, key, "body", "")
            return
        with self._redis() as client:
            client.hdel(self.store._session_keys(NS, sid)[1], key)

    def counter(self, sid: str, value: Any) -> None:
        if self.kind != "redis":
            self._sql(
                f"UPDATE {self.prefix}_sessions SET last_seq = %s WHERE namespace = %s AND session_id = %s",
                (value, NS, sid),
            )
            return
        with self._redis() as client:
            client.set(self.store._session_keys(NS, sid)[3], value)

    def copy_record(self, from_sid: str, to_sid: str, key: str) -> None:
        """A row of another session copied in under the same key (looks legitimate: it must read back)."""
        if self.kind != "redis":
            self._sql(
                f"INSERT INTO {self.prefix}_records (namespace, session_id, key, seq, version, body) "
                f"SELECT namespace, %s, 'e:copied', seq + 1000, version, body FROM {self.prefix}_records "
                "WHERE namespace = %s AND session_id = %s AND key = %s",
                (to_sid, NS, from_sid, key),
            )
            return
        src, dst = self.store._session_keys(NS, from_sid), self.store._session_keys(NS, to_sid)
        with self._redis() as client:
            client.hset(dst[0], "e:copied", client.hget(src[0], key))
            client.hset(dst[1], "e:copied", client.hget(src[1], key))
            client.zadd(dst[2], {"e:copied": 1000 + int(client.zscore(src[2], key))})

    def message(self, thread: str, position: int, body: str) -> None:
        if self.kind != "redis":
            self._sql(
                f"UPDATE {self.prefix}_messages SET body = %s WHERE seq = (SELECT seq FROM {self.prefix}_messages "
                "WHERE thread_id = %s ORDER BY seq LIMIT 1 OFFSET %s)",
                (body, thread, position),
            )
            return
        with self._redis() as client:
            client.lset(self.store._thread_keys(thread)[1], position, body)


@dataclass
class Probe:
    name: str
    edit: Callable[[Editor, str], None]
    backends: tuple[str, ...] = ("sqlite", "postgres", "redis")
    breaks: bool = True
    """Whether the edited session must refuse to read (False: the edit is legitimate-looking data)."""


def _doc_edit(key: str, change: Callable[[dict[str, Any]], None]) -> Callable[[Editor, str], None]:
    def edit(editor: Editor, sid: str) -> None:
        doc = editor.store_docs[key]
        doc = json.loads(json.dumps(doc))
        change(doc)
        editor.record(sid, key, "body", json.dumps(doc))

    return edit


def _set(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        target = doc
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return change


def _drop(path: tuple[str, ...]) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        target = doc
        for part in path[:-1]:
            target = target[part]
        del target[path[-1]]

    return change


ALL = ("sqlite", "postgres", "redis")
TEXT_COUNTERS = ("sqlite", "redis")  # PostgreSQL's BIGINT columns refuse text and fractions themselves
PROBES = [
    Probe("version is text", lambda e, s: e.record(s, "e:1", "version", "abc"), TEXT_COUNTERS),
    Probe("version is 1e300", lambda e, s: e.record(s, "e:1", "version", 1e300), TEXT_COUNTERS),
    Probe("version is 2.5", lambda e, s: e.record(s, "e:1", "version", 2.5), TEXT_COUNTERS),
    Probe("version is 0", lambda e, s: e.record(s, "e:1", "version", 0)),
    Probe("version is -7", lambda e, s: e.record(s, "e:1", "version", -7)),
    Probe("version is 2**62", lambda e, s: e.record(s, "e:1", "version", 2**62)),
    Probe("seq is text", lambda e, s: e.record(s, "e:1", "seq", "abc"), ("sqlite",)),
    Probe("seq is 1e300", lambda e, s: e.record(s, "e:1", "seq", 1e300), TEXT_COUNTERS),
    Probe("seq is inf", lambda e, s: e.record(s, "e:1", "seq", float("inf")), ("redis",)),
    Probe("seq is -3", lambda e, s: e.record(s, "e:1", "seq", -3)),
    Probe("version missing", lambda e, s: e.drop_part(s, "e:1")),
    Probe("truncated JSON", lambda e, s: e.record(s, "e:1", "body", '{"type":"event","ev')),
    Probe("body is a list", lambda e, s: e.record(s, "e:1", "body", "[1, 2]")),
    Probe("body is a number", lambda e, s: e.record(s, "e:1", "body", 7), ("sqlite",)),
    Probe("empty doc", lambda e, s: e.record(s, "e:1", "body", "{}")),
    Probe("event missing", _doc_edit("e:1", _drop(("event",)))),
    Probe("message missing", _doc_edit("e:1", _drop(("event", "message")))),
    Probe("role is robot", _doc_edit("e:1", _set(("event", "message", "role"), "robot"))),
    Probe("content is a list", _doc_edit("e:1", _set(("event", "message", "content"), [1]))),
    Probe("id of another event", _doc_edit("e:1", _set(("event", "message", "id"), "2"))),
    Probe("state is a string", _doc_edit("e:1", _set(("event", "state"), "x"))),
    Probe("pinned is text", _doc_edit("e:1", _set(("pinned",), "yes"))),
    Probe("tokens n negative", _doc_edit("e:1", _set(("tokens",), {"counter": "x", "n": -1}))),
    Probe("tokens n 1e300", _doc_edit("e:1", _set(("tokens",), {"counter": "x", "n": 1e300}))),
    Probe("summary_id is a number", _doc_edit("e:1", _set(("summary_id",), 5))),
    Probe("head live_from 1e300", _doc_edit("head", _set(("live_from",), 1e300))),
    Probe("head live_from 10**30", _doc_edit("head", _set(("live_from",), 10**30))),
    Probe("head live_from text", _doc_edit("head", _set(("live_from",), "abc"))),
    Probe("head live_from null", _doc_edit("head", _set(("live_from",), None))),
    Probe("head keep is a dict", _doc_edit("head", _set(("keep",), {"a": 1}))),
    Probe("row of another session under another key", lambda e, s: e.copy_record("other", s, "e:1")),
]


@dataclass
class Tally:
    untyped: list[str] = field(default_factory=list)
    typed: int = 0
    unnamed: list[str] = field(default_factory=list)


def _server_target(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if kind == "sqlite":
        return str(tmp_path / "hostile.db")
    return str(request.getfixturevalue(f"{kind}_server"))


@pytest.fixture(params=ALL)
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[str, str]]:
    kind = request.param
    yield kind, _server_target(kind, request, tmp_path)


async def _fill(url: str, sid: str) -> tuple[InMemoryMemory, dict[str, dict[str, Any]]]:
    memory = InMemoryMemory(store=open_store(url), enable_context_management=False)
    for i in range(1, 4):
        await memory.add({"message": {"id": str(i), "role": "user", "content": f"hello {i}"}}, session_id=sid)
    docs = {r.key: r.doc for r in await memory.store.list_records(NS, sid)}
    return memory, docs


async def _exercise(memory: InMemoryMemory, store: SessionStore, sid: str, tally: Tally, where: str) -> None:
    """Every read and write of the edited session; each must work or raise a StorageError naming where."""
    fresh = InMemoryMemory(store=store, enable_context_management=False)
    fresh._owns_store = False
    calls: list[tuple[str, Callable[[], Any]]] = [
        ("list", lambda: fresh.list(sid)),
        ("messages", lambda: fresh.messages(sid)),
        ("history", lambda: fresh.history(sid)),
        (
            "add",
            lambda: fresh.add({"message": {"id": uuid.uuid4().hex, "role": "user", "content": "x"}}, session_id=sid),
        ),
        ("manage", lambda: fresh.manage_context(sid)),
        ("get_record", lambda: store.get_record(NS, sid, "e:1")),
        ("list_records", lambda: store.list_records(NS, sid)),
        ("update_record", lambda: store.update_record(NS, sid, "e:1", {"type": "event"})),
    ]
    for name, call in calls:
        try:
            await call()
        except StorageError as exc:
            tally.typed += 1
            text = str(exc)
            if where not in text or not any(k in text for k in ("'e:1'", "'head'", "'e:copied'")):
                tally.unnamed.append(f"{name}: {text}")
        except Exception as exc:
            tally.untyped.append(f"{name}: {type(exc).__name__}: {exc}")


@pytest.mark.parametrize("probe", PROBES, ids=[p.name for p in PROBES])
async def test_hostile_record(backend: tuple[str, str], probe: Probe) -> None:
    kind, target = backend
    if kind not in probe.backends:
        pytest.skip(f"{kind} refuses this edit itself")
    prefix = f"wkh_{uuid.uuid4().hex[:10]}"
    url = _url(kind, target, prefix)
    memory, docs = await _fill(url, "victim")
    other, _ = await _fill(url, "other")
    store = memory.store
    editor = Editor(kind, store, target)
    editor.store_docs = docs
    try:
        probe.edit(editor, "victim")
        tally = Tally()
        label = {"sqlite": "SQLite", "postgres": "PostgreSQL", "redis": "Redis"}[kind]
        await _exercise(memory, store, "victim", tally, f"(prefix {prefix!r}), session 'memory'/'victim'")
        assert tally.untyped == [], tally.untyped
        assert tally.unnamed == [], tally.unnamed
        if probe.breaks:
            assert tally.typed > 0
            assert all(label in u for u in [label])
        # the other session is untouched: reads and writes as before
        assert [e["message"]["content"] for e in await other.list("other")] == ["hello 1", "hello 2", "hello 3"]
        await other.add({"message": {"id": "4", "role": "user", "content": "hello 4"}}, session_id="other")
        # the repair path: check lists the bad rows, --remove deletes them, the session reads again
        found = await check_store(store, doc_check=check_doc)
        assert bool(found) == probe.breaks
        assert all(f.scope == (NS, "victim") for f in found)
        await check_store(store, doc_check=check_doc, remove=True)
        assert await check_store(store, doc_check=check_doc) == []
        repaired = InMemoryMemory(store=store, enable_context_management=False)
        repaired._owns_store = False
        await repaired.add({"message": {"id": "after", "role": "user", "content": "after"}}, session_id="victim")
        events = await repaired.list("victim")
        assert events[-1]["message"]["id"] == "after"
        seqs = [r.seq for r in await store.list_records(NS, "victim")]
        assert len(seqs) == len(set(seqs)), f"a seq was handed out twice: {seqs}"
    finally:
        await other.close()
        await _drop_store(store)
        await memory.close()


def _url(kind: str, target: str, prefix: str) -> str:
    return f"sqlite:///{target}?prefix={prefix}" if kind == "sqlite" else with_prefix(target, prefix)


async def _drop_store(store: SessionStore) -> None:
    drop = getattr(store, "drop", None)
    if drop is not None:
        await drop()


COUNTERS: dict[str, list[Any]] = {
    "sqlite": [0, 1, -5, "abc", 1e300, 2.5, None],
    "postgres": [0, 1, -5],
    "redis": [0, 1, -5, "abc", "1e300", "2.5", ""],
}


async def test_edited_counters_never_reuse_a_seq(backend: tuple[str, str]) -> None:
    kind, target = backend
    prefix = f"wkc_{uuid.uuid4().hex[:10]}"
    url = _url(kind, target, prefix)
    store = open_store(url)
    editor = Editor(kind, store, target)
    try:
        for i, value in enumerate(COUNTERS[kind]):
            await store.add_record(NS, "s", f"k{i}a", {"n": i})
            if kind == "sqlite" and value is None:
                editor._sql(f"DELETE FROM {prefix}_sessions WHERE namespace = %s", (NS,))
            else:
                editor.counter("s", value)
            await store.add_record(NS, "s", f"k{i}b", {"n": i})
        seqs = [r.seq for r in await store.list_records(NS, "s")]
        assert len(seqs) == 2 * len(COUNTERS[kind])
        assert seqs == sorted(set(seqs)), f"reused or out of order: {seqs}"
    finally:
        await _drop_store(store)
        await store.close()


async def test_hostile_messages_fail_typed_and_only_their_thread(backend: tuple[str, str]) -> None:
    kind, target = backend
    prefix = f"wkm_{uuid.uuid4().hex[:10]}"
    url = _url(kind, target, prefix)
    store = open_store(url)
    editor = Editor(kind, store, target)
    try:
        for thread in ("victim", "other"):
            await store.append_messages(thread, [Message.text_message(f"m{i}", message_id=f"m{i}") for i in range(3)])
        other_json = [m.model_dump_json() for m in await store.load_messages("other")]
        bodies = ['{"role":"user","cont', "[]", '{"role":"robot","content":[]}', '"text"', json.dumps({"a": 1e300})]
        for body in bodies:
            editor.message("victim", 1, body)
            with pytest.raises(StorageError) as info:
                await store.load_messages("victim")
            assert "'victim'" in str(info.value) and prefix in str(info.value) and "#1" in str(info.value)
            with pytest.raises(StorageError):
                await store.load_messages_range("victim", 1, 2)
            assert [m.content[0].text for m in await store.load_messages_range("victim", 2, 3)] == ["m2"]  # type: ignore[union-attr]
            assert [m.model_dump_json() for m in await store.load_messages("other")] == other_json
        found = await check_store(store, remove=True)
        assert [(f.kind, f.scope, f.position) for f in found] == [("message", ("victim",), 1)]
        assert [m.message_id for m in await store.load_messages("victim")] == ["m0", "m2"]
    finally:
        await _drop_store(store)
        await store.close()
