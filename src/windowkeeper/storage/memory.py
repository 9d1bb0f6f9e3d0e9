"""`InMemoryStore`: the process-local backend for tests, demos and ephemeral agents.

It keeps the same JSON text the durable backends keep, rather than live objects, so a caller that mutates a
message after appending it cannot change history, and behaviour (key order, rejected data) matches SQLite and
the servers exactly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..messages import Message
from .base import (
    RawRow,
    Record,
    RecordUpdate,
    SessionStore,
    check_expected,
    check_id,
    check_session,
    check_updates,
    check_version,
    decode_messages,
    decode_state,
    encode_doc,
    encode_state,
    make_record,
    record_exists,
    stored_record,
    unique_new,
)


@dataclass
class _Thread:
    keys: set[str] = field(default_factory=set)
    log: list[str] = field(default_factory=list)
    state: str | None = None


@dataclass
class _Row:
    seq: int
    version: int
    body: str


@dataclass
class _Session:
    next_seq: int = 1
    rows: dict[str, _Row] = field(default_factory=dict)  # insertion order == seq order


class InMemoryStore(SessionStore):
    """Dict-backed store; every operation is atomic because none of them awaits while holding data."""

    steps_directly = True
    steps_without_loop = True

    def __init__(self) -> None:
        self._threads: dict[str, _Thread] = {}
        self._sessions: dict[tuple[str, str], _Session] = {}
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            from ..errors import StorageError

            raise StorageError("InMemoryStore is closed; create a new one")

    async def append_messages(self, thread_id: str, messages: Sequence[Message]) -> int:
        check_id(thread_id, "thread_id")
        self._check_open()
        encoded = unique_new(thread_id, messages)
        thread = self._threads.setdefault(thread_id, _Thread())
        added = 0
        for mkey, body in encoded:
            if mkey in thread.keys:
                continue
            thread.keys.add(mkey)
            thread.log.append(body)
            added += 1
        await asyncio.sleep(0)  # a real await point, like every other backend has
        return added

    async def load_messages(self, thread_id: str) -> list[Message]:
        check_id(thread_id, "thread_id")
        self._check_open()
        thread = self._threads.get(thread_id)
        if thread is None:
            return []
        return decode_messages(thread_id, list(thread.log))

    async def count_messages(self, thread_id: str) -> int:
        check_id(thread_id, "thread_id")
        self._check_open()
        thread = self._threads.get(thread_id)
        return 0 if thread is None else len(thread.log)

    async def load_messages_range(self, thread_id: str, start: int, stop: int) -> list[Message]:
        check_id(thread_id, "thread_id")
        self._check_open()
        thread = self._threads.get(thread_id)
        if thread is None:
            return []
        start, stop = max(start, 0), max(stop, 0)
        return decode_messages(thread_id, thread.log[start:stop], start)

    async def put_state(self, thread_id: str, state: dict[str, Any]) -> None:
        check_id(thread_id, "thread_id")
        self._check_open()
        body = encode_state(thread_id, state)
        self._threads.setdefault(thread_id, _Thread()).state = body

    async def get_state(self, thread_id: str) -> dict[str, Any] | None:
        check_id(thread_id, "thread_id")
        self._check_open()
        thread = self._threads.get(thread_id)
        if thread is None or thread.state is None:
            return None
        return decode_state(thread_id, thread.state)

    async def delete_thread(self, thread_id: str) -> None:
        check_id(thread_id, "thread_id")
        self._check_open()
        self._threads.pop(thread_id, None)

    # -- records --------------------------------------------------------------------------------------------

    def _session(self, namespace: str, session_id: str) -> _Session:
        check_session(namespace, session_id)
        self._check_open()
        return self._sessions.setdefault((namespace, session_id), _Session())

    def _record(self, key: str, row: _Row, origin: str) -> Record:
        return make_record(key, row.seq, row.version, row.body, origin=origin)

    async def add_record(self, namespace: str, session_id: str, key: str, doc: dict[str, Any]) -> Record:
        session = self._session(namespace, session_id)
        check_id(key, "record key")
        body = encode_doc(doc, key=key)
        if key in session.rows:
            raise record_exists(namespace, session_id, key)
        row = _Row(seq=session.next_seq, version=1, body=body)
        session.next_seq += 1
        session.rows[key] = row
        return stored_record(key, row.seq, row.version, body)

    def _check(self, session: _Session, namespace: str, session_id: str, key: str, expected: int | None) -> _Row:
        row = session.rows.get(key)
        check_expected(namespace, session_id, key, expected, None if row is None else row.version)
        return session.rows[key]

    async def update_records(
        self,
        namespace: str,
        session_id: str,
        updates: Sequence[RecordUpdate],
    ) -> list[Record]:
        session = self._session(namespace, session_id)
        checked = check_updates(updates)
        rows = [self._check(session, namespace, session_id, key, check_version(exp, key)) for key, _, exp in checked]
        out: list[Record] = []
        for row, (key, body, _) in zip(rows, checked, strict=True):
            row.version += 1
            row.body = body
            out.append(stored_record(key, row.seq, row.version, body))
        return out

    async def get_record(self, namespace: str, session_id: str, key: str) -> Record | None:
        session = self._session(namespace, session_id)
        row = session.rows.get(key)
        return None if row is None else self._record(key, row, self._origin(namespace, session_id))

    async def list_records(self, namespace: str, session_id: str) -> list[Record]:
        session = self._session(namespace, session_id)
        origin = self._origin(namespace, session_id)
        return [self._record(key, row, origin) for key, row in list(session.rows.items())]

    async def list_records_since(self, namespace: str, session_id: str, seq: int) -> list[Record]:
        origin = self._origin(namespace, session_id)
        return self._tail(self._session(namespace, session_id), seq, None, make_record, origin)

    async def list_records_since_skipping(
        self, namespace: str, session_id: str, seq: int, skip_prefix: str
    ) -> list[Record]:
        session = self._session(namespace, session_id)
        origin = self._origin(namespace, session_id)
        return self._tail(session, seq, check_id(skip_prefix, "skip_prefix"), stored_record, origin)

    @staticmethod
    def _tail(
        session: _Session, seq: int, skip_prefix: str | None, build: Callable[..., Record], origin: str
    ) -> list[Record]:
        """Records from ``seq`` on, made by ``build``; bodies of skipped keys are never decoded."""
        tail: list[Record] = []
        for key in reversed(session.rows):  # insertion order is seq order: walk back only over the tail
            row = session.rows[key]
            if row.seq < seq:
                break
            if skip_prefix is None or not key.startswith(skip_prefix):
                tail.append(build(key, row.seq, row.version, row.body, origin=origin))
        tail.reverse()
        return tail

    async def get_records(self, namespace: str, session_id: str, keys: Sequence[str]) -> list[Record]:
        session = self._session(namespace, session_id)
        found = [(key, session.rows[key]) for key in dict.fromkeys(keys) if key in session.rows]
        origin = self._origin(namespace, session_id)
        return [self._record(key, row, origin) for key, row in sorted(found, key=lambda kr: kr[1].seq)]

    async def delete_record(self, namespace: str, session_id: str, key: str) -> bool:
        session = self._session(namespace, session_id)
        return session.rows.pop(key, None) is not None

    async def delete_session(self, namespace: str, session_id: str) -> int:
        session = self._session(namespace, session_id)
        count = len(session.rows)
        self._sessions.pop((namespace, session_id), None)
        return count

    async def raw_rows(self) -> list[RawRow]:
        self._check_open()
        rows: list[RawRow] = []
        for thread_id, thread in self._threads.items():
            for index, body in enumerate(thread.log):
                rows.append(RawRow("message", (thread_id,), "", body, position=index, handle=body))
            if thread.state is not None:
                rows.append(RawRow("state", (thread_id,), "", thread.state, handle=thread_id))
        for (namespace, session_id), session in self._sessions.items():
            for key, row in session.rows.items():
                rows.append(
                    RawRow(
                        "record", (namespace, session_id), key, row.body, seq=row.seq, version=row.version, handle=key
                    )
                )
        return rows

    async def remove_raw(self, row: RawRow) -> bool:
        self._check_open()
        if row.kind == "record":
            session = self._sessions.get((row.scope[0], row.scope[1]))
            return session is not None and session.rows.pop(row.key, None) is not None
        thread = self._threads.get(row.scope[0])
        if thread is None:
            return False
        if row.kind == "state":
            found, thread.state = thread.state is not None, None
            return found
        if row.handle in thread.log:
            thread.log.remove(row.handle)
            return True
        return False

    async def close(self) -> None:
        self._closed = True
