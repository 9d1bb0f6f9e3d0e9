"""`SQLiteStore`: the embedded default, one file, no server.

The stdlib driver is blocking, so each call runs in a worker thread (`asyncio.to_thread`) on one connection
guarded by a lock. WAL journaling lets other processes read while this one writes, and every write is one
``BEGIN IMMEDIATE`` transaction: a process killed mid-write leaves the previous committed state, never half of a
new one. Inside ``async with store.batch():`` the calls of one task share one such transaction (each call a
savepoint of it) and run without a worker-thread hop each. The schema is an append-only list of migrations
whose index is the version stored in the file.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..errors import ConfigurationError, StorageError
from ..messages import Message
from .base import (
    MAX_COUNTER,
    RawRow,
    Record,
    RecordUpdate,
    SessionStore,
    check_expected,
    check_id,
    check_new_record,
    check_prefix,
    check_seq,
    check_session,
    check_updates,
    decode_messages,
    decode_state,
    encode_state,
    make_record,
    record_exists,
    stored_counter,
    stored_limit,
    stored_record,
    unique_new,
)
from .url import mask_url, resolve_prefix, sqlite_target

logger = logging.getLogger(__name__)

T = TypeVar("T")

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE {p}_messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, thread_id TEXT NOT NULL, "
        "message_key TEXT NOT NULL, body TEXT NOT NULL, UNIQUE (thread_id, message_key))",
        "CREATE INDEX {p}_messages_thread ON {p}_messages (thread_id, seq)",
        "CREATE TABLE {p}_states (thread_id TEXT PRIMARY KEY, body TEXT NOT NULL, updated_at REAL NOT NULL)",
        "CREATE TABLE {p}_sessions (namespace TEXT NOT NULL, session_id TEXT NOT NULL, "
        "last_seq INTEGER NOT NULL, PRIMARY KEY (namespace, session_id))",
        "CREATE TABLE {p}_records (namespace TEXT NOT NULL, session_id TEXT NOT NULL, key TEXT NOT NULL, "
        "seq INTEGER NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL, "
        "PRIMARY KEY (namespace, session_id, key))",
        "CREATE INDEX {p}_records_seq ON {p}_records (namespace, session_id, seq)",
    ),
    (
        # each thread's log length, kept by triggers (so any writer of the file keeps it right): counting a
        # 100k-message log walked its index, ~6 ms, on every checkpoint put
        "CREATE TABLE {p}_message_counts (thread_id TEXT PRIMARY KEY, n INTEGER NOT NULL)",
        "INSERT INTO {p}_message_counts (thread_id, n) SELECT thread_id, COUNT(*) FROM {p}_messages GROUP BY thread_id",
        "CREATE TRIGGER {p}_messages_added AFTER INSERT ON {p}_messages BEGIN "
        "INSERT INTO {p}_message_counts (thread_id, n) VALUES (NEW.thread_id, 1) "
        "ON CONFLICT (thread_id) DO UPDATE SET n = n + 1; END",
        "CREATE TRIGGER {p}_messages_removed AFTER DELETE ON {p}_messages BEGIN "
        "UPDATE {p}_message_counts SET n = n - 1 WHERE thread_id = OLD.thread_id; "
        "DELETE FROM {p}_message_counts WHERE thread_id = OLD.thread_id AND n <= 0; END",
        "CREATE TRIGGER {p}_messages_moved AFTER UPDATE OF thread_id ON {p}_messages "
        "WHEN NEW.thread_id IS NOT OLD.thread_id BEGIN "
        "UPDATE {p}_message_counts SET n = n - 1 WHERE thread_id = OLD.thread_id; "
        "DELETE FROM {p}_message_counts WHERE thread_id = OLD.thread_id AND n <= 0; "
        "INSERT INTO {p}_message_counts (thread_id, n) VALUES (NEW.thread_id, 1) "
        "ON CONFLICT (thread_id) DO UPDATE SET n = n + 1; END",
    ),
)
"""Schema history; entry ``i`` upgrades version ``i`` to ``i + 1``. Only ever append."""


_BODY_BYTES = "CASE WHEN typeof(body) = 'text' THEN CAST(body AS BLOB) ELSE body END"
"""A message body as its UTF-8 bytes (decoding it to text only for the reader to encode it again cost more than
parsing it from bytes); a value of another type, edited in, is handed over as it is, to be named as such."""


def prepare_sqlite_path(path: Path, described: str) -> None:
    """Make the folders a SQLite database file ``path`` goes in (a store path that does not exist yet is made); a
    folder given as the path, or a file where a folder should be, is a `StorageError` naming it and what to pass
    instead (SQLite said only "unable to open database file", and ``mkdir`` raised a bare ``FileExistsError``).
    ``described`` names the store in the message."""
    if path.is_dir():
        raise StorageError(f"{described}: {path} is a folder; give the database file's path, e.g. {path / 'agent.db'}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        blocker = next((p for p in (path.parent, *path.parent.parents) if p.exists()), None)
        if blocker is not None and not blocker.is_dir():
            raise StorageError(
                f"{described}: {blocker} is a file, not a folder, so {path} cannot be made under it; "
                "choose another path"
            ) from exc
        raise StorageError(f"{described}: cannot make the folder {path.parent}: {exc}") from exc


def check_sqlite_location(url: str) -> None:
    """For ``windowkeeper serve`` before it listens: the folders of a SQLite store's file are made, and a path
    that cannot hold one is a `StorageError` now rather than on every request. Other backends are not touched."""
    from .url import store_kind

    if store_kind(url) != "sqlite":
        return
    database, _prefix, is_uri = sqlite_target(url)
    if database != ":memory:" and not is_uri:
        prepare_sqlite_path(Path(database), f"SQLite {mask_url(repr(database))}")


class SQLiteStore(SessionStore):
    """A `SessionStore` in one SQLite file (or ``":memory:"``).

    ``synchronous="NORMAL"`` survives a killed process (WAL); pass ``"FULL"`` to also survive power loss.
    """

    steps_directly = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        prefix: str | None = None,
        synchronous: str = "NORMAL",
        timeout: float = 30.0,
    ) -> None:
        if not os.fspath(path):
            raise ConfigurationError("SQLiteStore needs a file path (or ':memory:')")
        # a path, or a sqlite:/// URL whose ?prefix= is ours and other parameters (mode=ro...) SQLite's
        self.path, url_prefix, self._uri = sqlite_target(path)
        self.prefix = check_prefix(resolve_prefix(url_prefix, prefix, url=self.path))
        self._described: str | None = None
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ConfigurationError(f"synchronous={synchronous!r}; use 'NORMAL', 'FULL', 'EXTRA' or 'OFF'")
        self._synchronous = synchronous.upper()
        self._timeout = timeout
        self._lock = threading.Lock()
        self._batch_owner: contextvars.ContextVar[SQLiteStore | None] = contextvars.ContextVar(
            f"wk_sqlite_batch_{id(self)}", default=None
        )
        """Set to this store while the current task is inside its `batch` (a task's calls then skip the lock)."""
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._t = {
            name: f"{self.prefix}_{name}"
            for name in ("messages", "message_counts", "states", "sessions", "records", "schema")
        }

    def describe(self) -> str:
        if self._described is None:  # named in every error: masked once, not on every call
            self._described = f"SQLite {mask_url(repr(self.path))} (prefix {self.prefix!r})"
        return self._described

    # -- connection -----------------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self.path != ":memory:" and not self._uri:
            self._make_parent(Path(self.path))
        conn = sqlite3.connect(
            self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False, uri=self._uri
        )
        try:
            if self.path != ":memory:":
                mode = self._enable_wal(conn)
                if mode != "wal":
                    logger.warning("%s refused WAL journaling (mode %s)", self.describe(), mode)
            conn.execute(f"PRAGMA synchronous={self._synchronous}")
            self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _make_parent(self, path: Path) -> None:
        prepare_sqlite_path(path, self.describe())

    def _enable_wal(self, conn: sqlite3.Connection) -> str:
        """Switch the file to WAL once; WAL persists in the file, so later connections only read the mode.

        Changing the journal mode needs a moment of exclusive access and SQLite reports "database is locked" at
        once instead of waiting on the busy timeout, so a store opening while another writes retries briefly.
        """
        mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
        deadline = time.monotonic() + self._timeout
        while mode != "wal":
            try:
                mode = str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower()
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
        return mode

    def _migrate(self, conn: sqlite3.Connection) -> None:
        schema = self._t["schema"]
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(f"CREATE TABLE IF NOT EXISTS {schema} (version INTEGER NOT NULL)")
            row = conn.execute(f"SELECT version FROM {schema}").fetchone()
            current = 0 if row is None else row[0]
            if type(current) is not int or current < 0:
                raise StorageError(
                    f"{self.describe()}: the schema table {schema} holds version {current!r}, not a schema version "
                    "(edited?); restore it to the number of applied migrations",
                )
            if current > len(MIGRATIONS):
                raise StorageError(
                    f"{self.describe()} has schema version {current}, newer than "
                    f"this windowkeeper knows ({len(MIGRATIONS)}); upgrade windowkeeper",
                )
            for version in range(current, len(MIGRATIONS)):
                for statement in MIGRATIONS[version]:
                    conn.execute(statement.format(p=self.prefix))
                logger.info("%s: migrated to schema version %d", self.describe(), version + 1)
            if row is None:
                conn.execute(f"INSERT INTO {schema} (version) VALUES (?)", (len(MIGRATIONS),))
            elif current != len(MIGRATIONS):
                conn.execute(f"UPDATE {schema} SET version = ?", (len(MIGRATIONS),))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _open(self) -> sqlite3.Connection:
        """The connection (opened on first use); the caller holds the lock."""
        if self._closed:
            raise StorageError(f"{self.describe()} is closed; open a new store")
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def _call(self, fn: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
        with self._lock:
            conn = self._open()
            if not write:
                return fn(conn)
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result

    def _call_in_batch(self, fn: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
        """A call inside this task's `batch`: the lock and the transaction are the batch's; a write is a savepoint
        of it, so a call that raises leaves nothing behind, as its own transaction would."""
        conn = self._open()
        if not write:
            return fn(conn)
        conn.execute("SAVEPOINT wk_call")
        try:
            result = fn(conn)
        except BaseException:
            conn.execute("ROLLBACK TO wk_call")
            conn.execute("RELEASE wk_call")
            raise
        conn.execute("RELEASE wk_call")
        return result

    async def _run(self, fn: Callable[[sqlite3.Connection], T], *, write: bool = False) -> T:
        try:
            if self._batch_owner.get() is self:
                # run here, on the thread that holds the batch's lock: a worker thread would wait on that lock
                return self._call_in_batch(fn, write=write)
            return await asyncio.to_thread(self._call, fn, write=write)
        except sqlite3.Error as exc:
            raise StorageError(f"{self.describe()}: SQLite error: {exc}") from exc

    @contextlib.asynccontextmanager
    async def _batched(self) -> AsyncIterator[None]:
        """One ``BEGIN IMMEDIATE`` transaction for every call this task makes inside (see `SessionStore.batch`).

        The lock is taken (on a worker thread, as any call waits for it) for the whole batch, and the calls inside
        run on the event loop's thread without a worker hop: a store call is a few SQLite statements, while each
        hop and each commit cost more than they do. Other tasks and threads wait for the batch to end, as they
        wait for any write. The transaction is committed when the batch ends, also when the code inside raised
        (every call that returned is kept, as it would be on its own).
        """
        if self._batch_owner.get() is self:
            yield  # nested: the outer batch's transaction
            return

        def begin() -> None:
            self._lock.acquire()
            try:
                self._open().execute("BEGIN IMMEDIATE")
            except BaseException:
                self._lock.release()
                raise

        if not self._begin_now():
            started = asyncio.get_running_loop().run_in_executor(None, begin)
            try:
                await asyncio.shield(started)
            except sqlite3.Error as exc:
                raise StorageError(f"{self.describe()}: SQLite error: {exc}") from exc
            except asyncio.CancelledError:
                # cancelled while waiting for the lock: the worker may still take it, so it is given back then
                started.add_done_callback(self._abandon_batch)
                raise
        token = self._batch_owner.set(self)
        try:
            yield
        finally:
            self._batch_owner.reset(token)
            try:
                conn = self._conn
                if conn is not None and conn.in_transaction:
                    try:
                        conn.execute("COMMIT")
                    except sqlite3.Error as exc:
                        with contextlib.suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                        raise StorageError(f"{self.describe()}: SQLite error: {exc}") from exc
            finally:
                self._lock.release()

    def _begin_now(self) -> bool:
        """Begin a batch here when that needs no waiting: the lock is free, the connection open and no other
        process writes (SQLite is asked not to wait); otherwise (False) the begin waits on a worker thread."""
        if self._conn is None or self._closed or not self._lock.acquire(blocking=False):
            return False
        conn = self._conn
        begun = False
        try:
            conn.execute("PRAGMA busy_timeout = 0")
            try:
                conn.execute("BEGIN IMMEDIATE")
                begun = True
            except sqlite3.OperationalError:
                pass  # another process holds the write lock: wait for it with the timeout, off the loop
            finally:
                conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
        except BaseException:
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            self._lock.release()
            raise
        if not begun:
            self._lock.release()
        return begun

    def _abandon_batch(self, started: asyncio.Future[None]) -> None:
        """Undo the begin of a batch whose task was cancelled before it could use it."""
        if started.cancelled() or started.exception() is not None:
            return
        try:
            conn = self._conn
            if conn is not None and conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:
            logger.warning("%s: rolling back an abandoned batch failed", self.describe(), exc_info=True)
        finally:
            self._lock.release()

    def batch(self) -> contextlib.AbstractAsyncContextManager[None]:
        return self._batched()

    # -- checkpointer side ----------------------------------------------------------------------------------

    async def append_messages(self, thread_id: str, messages: Sequence[Message]) -> int:
        check_id(thread_id, "thread_id")
        encoded = unique_new(thread_id, messages)
        if not encoded:
            return 0
        table = self._t["messages"]

        def op(conn: sqlite3.Connection) -> int:
            added = 0
            for mkey, body in encoded:
                cur = conn.execute(
                    f"INSERT OR IGNORE INTO {table} (thread_id, message_key, body) VALUES (?, ?, ?)",
                    (thread_id, mkey, body),
                )
                added += cur.rowcount
            return added

        return await self._run(op, write=True)

    async def load_messages(self, thread_id: str) -> list[Message]:
        check_id(thread_id, "thread_id")
        table = self._t["messages"]
        rows = await self._run(
            lambda c: c.execute(
                f"SELECT {_BODY_BYTES} FROM {table} WHERE thread_id = ? ORDER BY seq", (thread_id,)
            ).fetchall(),
        )
        origin = self.describe()
        return decode_messages(thread_id, [body for (body,) in rows], origin=origin)

    async def count_messages(self, thread_id: str) -> int:
        check_id(thread_id, "thread_id")
        table = self._t["message_counts"]
        row = await self._run(
            lambda c: c.execute(f"SELECT n FROM {table} WHERE thread_id = ?", (thread_id,)).fetchone(),
        )
        return 0 if row is None else int(row[0])

    async def load_messages_range(self, thread_id: str, start: int, stop: int) -> list[Message]:
        check_id(thread_id, "thread_id")
        start, stop = max(start, 0), max(stop, 0)
        if stop <= start:
            return []
        table = self._t["messages"]
        rows = await self._run(
            lambda c: c.execute(
                f"SELECT {_BODY_BYTES} FROM {table} WHERE thread_id = ? ORDER BY seq LIMIT ? OFFSET ?",
                (thread_id, stop - start, start),
            ).fetchall(),
        )
        origin = self.describe()
        return decode_messages(thread_id, [body for (body,) in rows], start, origin=origin)

    async def put_state(self, thread_id: str, state: dict[str, Any]) -> None:
        check_id(thread_id, "thread_id")
        body = encode_state(thread_id, state)
        table = self._t["states"]

        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                f"INSERT INTO {table} (thread_id, body, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT (thread_id) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
                (thread_id, body, time.time()),
            )

        await self._run(op, write=True)

    async def get_state(self, thread_id: str) -> dict[str, Any] | None:
        check_id(thread_id, "thread_id")
        table = self._t["states"]
        row = await self._run(
            lambda c: c.execute(f"SELECT body FROM {table} WHERE thread_id = ?", (thread_id,)).fetchone(),
        )
        return None if row is None else decode_state(thread_id, row[0], origin=self.describe())

    async def delete_thread(self, thread_id: str) -> None:
        check_id(thread_id, "thread_id")
        messages, states = self._t["messages"], self._t["states"]

        def op(conn: sqlite3.Connection) -> None:
            conn.execute(f"DELETE FROM {messages} WHERE thread_id = ?", (thread_id,))
            conn.execute(f"DELETE FROM {states} WHERE thread_id = ?", (thread_id,))

        await self._run(op, write=True)

    # -- memory side ----------------------------------------------------------------------------------------

    async def add_record(self, namespace: str, session_id: str, key: str, doc: dict[str, Any]) -> Record:
        body = check_new_record(namespace, session_id, key, doc)
        records = self._t["records"]

        def op(conn: sqlite3.Connection) -> int:
            exists = conn.execute(
                f"SELECT 1 FROM {records} WHERE namespace = ? AND session_id = ? AND key = ?",
                (namespace, session_id, key),
            ).fetchone()
            if exists:
                raise record_exists(namespace, session_id, key)
            return self._next_seq(conn, namespace, session_id, key, body)

        seq = await self._run(op, write=True)
        return stored_record(key, seq, 1, body, origin=self._origin(namespace, session_id))

    def _next_seq(self, conn: sqlite3.Connection, namespace: str, session_id: str, key: str, body: str) -> int:
        """Insert the record under a seq no record of the session ever had, and return that seq.

        The counter row alone is not trusted: an edited ``last_seq`` (lowered, text, a fraction, 1e300) would
        hand out a seq a stored record holds. The next seq is past both the counter, when it is a sane integer,
        and the session's highest integer seq (read from the ``(namespace, session_id, seq)`` index, so it
        costs a lookup, not a scan); the counter is then written back repaired.
        """
        records, sessions = self._t["records"], self._t["sessions"]
        row = conn.execute(
            f"SELECT last_seq FROM {sessions} WHERE namespace = ? AND session_id = ?",
            (namespace, session_id),
        ).fetchone()
        counter = row[0] if row is not None and type(row[0]) is int and 0 <= row[0] <= MAX_COUNTER else 0
        top = conn.execute(
            f"SELECT seq FROM {records} WHERE namespace = ? AND session_id = ? AND typeof(seq) = 'integer' "
            "ORDER BY seq DESC LIMIT 1",
            (namespace, session_id),
        ).fetchone()
        seq = max(counter, top[0] if top is not None else 0) + 1
        if seq > MAX_COUNTER:
            raise StorageError(
                f"{self._origin(namespace, session_id)}: the session's seq counter is exhausted ({seq - 1}, an "
                "edited value?); list and remove bad records with `windowkeeper store check URL --remove`",
            )
        conn.execute(
            f"INSERT INTO {sessions} (namespace, session_id, last_seq) VALUES (?, ?, ?) "
            "ON CONFLICT (namespace, session_id) DO UPDATE SET last_seq = excluded.last_seq",
            (namespace, session_id, seq),
        )
        conn.execute(
            f"INSERT INTO {records} (namespace, session_id, key, seq, version, body) VALUES (?, ?, ?, ?, 1, ?)",
            (namespace, session_id, key, seq, body),
        )
        return seq

    async def update_records(
        self,
        namespace: str,
        session_id: str,
        updates: Sequence[RecordUpdate],
    ) -> list[Record]:
        check_session(namespace, session_id)
        checked = check_updates(updates)
        records = self._t["records"]
        origin = self._origin(namespace, session_id)

        def op(conn: sqlite3.Connection) -> list[Record]:
            out: list[Record] = []
            for key, body, expected in checked:
                row = conn.execute(
                    f"SELECT seq, version FROM {records} WHERE namespace = ? AND session_id = ? AND key = ?",
                    (namespace, session_id, key),
                ).fetchone()
                stored = None if row is None else stored_counter(row[1], origin=origin, key=key, field="version")
                version = check_expected(namespace, session_id, key, expected, stored)
                seq = stored_counter(row[0], origin=origin, key=key, field="seq")
                if version >= MAX_COUNTER:
                    raise stored_limit(origin, key, version)
                conn.execute(
                    f"UPDATE {records} SET body = ?, version = ? WHERE namespace = ? AND session_id = ? AND key = ?",
                    (body, version + 1, namespace, session_id, key),
                )
                out.append(stored_record(key, seq, version + 1, body, origin=origin))
            return out

        return await self._run(op, write=True)

    async def get_record(self, namespace: str, session_id: str, key: str) -> Record | None:
        check_session(namespace, session_id)
        records = self._t["records"]
        row = await self._run(
            lambda c: c.execute(
                f"SELECT seq, version, body FROM {records} WHERE namespace = ? AND session_id = ? AND key = ?",
                (namespace, session_id, key),
            ).fetchone(),
        )
        if row is None:
            return None
        return make_record(key, row[0], row[1], row[2], origin=self._origin(namespace, session_id))

    async def list_records(self, namespace: str, session_id: str) -> list[Record]:
        check_session(namespace, session_id)
        records = self._t["records"]
        rows = await self._run(
            lambda c: c.execute(
                f"SELECT key, seq, version, body FROM {records} WHERE namespace = ? AND session_id = ? ORDER BY seq",
                (namespace, session_id),
            ).fetchall(),
        )
        origin = self._origin(namespace, session_id)
        return [make_record(k, s, v, b, origin=origin) for k, s, v, b in rows]

    async def list_records_since(self, namespace: str, session_id: str, seq: int) -> list[Record]:
        check_session(namespace, session_id)
        since = check_seq(seq)
        records = self._t["records"]
        rows = await self._run(
            lambda c: c.execute(
                f"SELECT key, seq, version, body FROM {records} WHERE namespace = ? AND session_id = ? AND seq >= ? "
                "ORDER BY seq",
                (namespace, session_id, since),
            ).fetchall(),
        )
        origin = self._origin(namespace, session_id)
        return [make_record(k, s, v, b, origin=origin) for k, s, v, b in rows]

    async def list_records_since_skipping(
        self, namespace: str, session_id: str, seq: int, skip_prefix: str
    ) -> list[Record]:
        check_session(namespace, session_id)
        check_id(skip_prefix, "skip_prefix")
        since = check_seq(seq)
        records = self._t["records"]
        rows = await self._run(
            lambda c: c.execute(
                f"SELECT key, seq, version, body FROM {records} WHERE namespace = ? AND session_id = ? AND seq >= ? "
                "AND substr(key, 1, ?) <> ? ORDER BY seq",
                (namespace, session_id, since, len(skip_prefix), skip_prefix),
            ).fetchall(),
        )
        origin = self._origin(namespace, session_id)
        return [stored_record(k, s, v, b, origin=origin) for k, s, v, b in rows]

    async def get_records(self, namespace: str, session_id: str, keys: Sequence[str]) -> list[Record]:
        check_session(namespace, session_id)
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return []
        records = self._t["records"]

        def op(conn: sqlite3.Connection) -> list[Any]:
            rows: list[Any] = []
            for start in range(0, len(wanted), 500):  # stay under SQLite's bound-parameter limit
                chunk = wanted[start : start + 500]
                marks = ", ".join("?" * len(chunk))
                rows.extend(
                    conn.execute(
                        f"SELECT key, seq, version, body FROM {records} WHERE namespace = ? AND session_id = ? "
                        f"AND key IN ({marks})",
                        (namespace, session_id, *chunk),
                    ).fetchall()
                )
            return rows

        rows = await self._run(op)
        origin = self._origin(namespace, session_id)
        return sorted((make_record(k, s, v, b, origin=origin) for k, s, v, b in rows), key=lambda r: r.seq)

    async def delete_record(self, namespace: str, session_id: str, key: str) -> bool:
        check_session(namespace, session_id)
        records = self._t["records"]
        count = await self._run(
            lambda c: (
                c.execute(
                    f"DELETE FROM {records} WHERE namespace = ? AND session_id = ? AND key = ?",
                    (namespace, session_id, key),
                ).rowcount
            ),
            write=True,
        )
        return bool(count)

    async def delete_session(self, namespace: str, session_id: str) -> int:
        check_session(namespace, session_id)
        records, sessions = self._t["records"], self._t["sessions"]

        def op(conn: sqlite3.Connection) -> int:
            count = conn.execute(
                f"DELETE FROM {records} WHERE namespace = ? AND session_id = ?",
                (namespace, session_id),
            ).rowcount
            conn.execute(f"DELETE FROM {sessions} WHERE namespace = ? AND session_id = ?", (namespace, session_id))
            return int(count)

        return await self._run(op, write=True)

    # -- maintenance ----------------------------------------------------------------------------------------

    async def raw_rows(self) -> list[RawRow]:
        t = self._t

        def op(conn: sqlite3.Connection) -> list[RawRow]:
            rows: list[RawRow] = []
            position: dict[object, int] = {}
            for rowid, thread, mkey, body in conn.execute(
                f"SELECT seq, thread_id, message_key, body FROM {t['messages']} ORDER BY thread_id, seq"
            ):
                index = position[thread] = position.get(thread, -1) + 1
                rows.append(RawRow("message", (str(thread),), str(mkey), body, position=index, handle=rowid))
            for thread, body in conn.execute(f"SELECT thread_id, body FROM {t['states']}"):
                rows.append(RawRow("state", (str(thread),), "", body, handle=thread))
            for ns, sid, key, seq, version, body in conn.execute(
                f"SELECT namespace, session_id, key, seq, version, body FROM {t['records']} "
                "ORDER BY namespace, session_id, seq"
            ):
                rows.append(
                    RawRow(
                        "record", (str(ns), str(sid)), str(key), body, seq=seq, version=version, handle=(ns, sid, key)
                    )
                )
            return rows

        return await self._run(op)

    async def remove_raw(self, row: RawRow) -> bool:
        t = self._t
        if row.kind == "message":
            sql, args = f"DELETE FROM {t['messages']} WHERE seq = ?", (row.handle,)
        elif row.kind == "state":
            sql, args = f"DELETE FROM {t['states']} WHERE thread_id = ?", (row.handle,)
        else:
            sql = f"DELETE FROM {t['records']} WHERE namespace = ? AND session_id = ? AND key = ?"
            args = tuple(row.handle)
        return bool(await self._run(lambda c: c.execute(sql, args).rowcount, write=True))

    # -- lifecycle ------------------------------------------------------------------------------------------

    def _close(self) -> None:
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    async def close(self) -> None:
        await asyncio.to_thread(self._close)
