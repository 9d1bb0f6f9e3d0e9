"""`PostgresStore`: the shared-server backend on psycopg 3 (async).

Connections come from a ``psycopg_pool`` pool living on the store's own loop thread, so the store works from any
event loop and reads run in parallel on their own connections; writes are group-committed by one writer at a time
(one transaction per batch, see `_write`). Every operation is one transaction; versioned updates
lock their rows (``FOR UPDATE``) so they stay correct when several processes share the tables. Tables are
created on first use from an append-only migration list, under an advisory lock so two processes starting at
once do not race.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .._bridge import LoopThread
from ..errors import ConfigurationError, MissingDependencyError, StorageError
from ..messages import Message
from ._exit import close_at_exit, closed
from .base import (
    MAX_COUNTER,
    ConflictError,
    RawRow,
    Record,
    RecordNotFoundError,
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
from .url import mask_url, postgres_target, resolve_prefix

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg_pool import AsyncConnectionPool, PoolTimeout
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("psycopg", "postgres") from exc

if TYPE_CHECKING:
    from psycopg import AsyncConnection

logger = logging.getLogger(__name__)


class _ExpectedDiscards(logging.Filter):
    """psycopg_pool warns about every broken connection it discards: after a failover, one line per pooled
    connection, on stderr when the application configured no logging. Replacing dead connections is what the
    pool is for (the store retries and logs the event itself), so those records are passed on at INFO."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING and str(record.msg).startswith("discarding broken connection"):
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


_POOL_LOGGER = logging.getLogger("psycopg.pool")
if not any(isinstance(f, _ExpectedDiscards) for f in _POOL_LOGGER.filters):
    _POOL_LOGGER.addFilter(_ExpectedDiscards())
_POOL_LOGGER.addHandler(logging.NullHandler())  # nothing on stderr by Python's last-resort handler either

T = TypeVar("T")

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE {p}_messages (seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, thread_id TEXT NOT NULL, "
        "message_key TEXT NOT NULL, body TEXT NOT NULL, UNIQUE (thread_id, message_key))",
        "CREATE INDEX {p}_messages_thread ON {p}_messages (thread_id, seq)",
        "CREATE TABLE {p}_states (thread_id TEXT PRIMARY KEY, body TEXT NOT NULL, "
        "updated_at TIMESTAMPTZ NOT NULL DEFAULT now())",
        "CREATE TABLE {p}_sessions (namespace TEXT NOT NULL, session_id TEXT NOT NULL, "
        "last_seq BIGINT NOT NULL, PRIMARY KEY (namespace, session_id))",
        "CREATE TABLE {p}_records (namespace TEXT NOT NULL, session_id TEXT NOT NULL, key TEXT NOT NULL, "
        "seq BIGINT NOT NULL, version BIGINT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (namespace, session_id, key))",
        "CREATE INDEX {p}_records_seq ON {p}_records (namespace, session_id, seq)",
    ),
)
"""Schema history; entry ``i`` upgrades version ``i`` to ``i + 1``. Only ever append."""

_TABLES = ("messages", "states", "sessions", "records", "schema")

_PendingWrite = tuple[Callable[["AsyncConnection[Any]"], Awaitable[Any]], bool, "asyncio.Future[Any]"]


class PostgresStore(SessionStore):
    """A `SessionStore` in PostgreSQL tables named ``<prefix>_messages``, ``<prefix>_states`` and so on."""

    steps_directly = True

    def __init__(
        self,
        url: str | None = None,
        *,
        prefix: str | None = None,
        connect_timeout: float = 10.0,
        statement_timeout: float | None = 5.0,
        max_connections: int = 8,
    ) -> None:
        # psycopg's parser checks the URL; ?prefix= is ours (the argument wins only if they agree), the rest is libpq's
        self.url, url_prefix = postgres_target(url)
        self.prefix = check_prefix(resolve_prefix(url_prefix, prefix, url=self.url)).lower()
        self._described: str | None = None
        self._connect_timeout = connect_timeout
        if statement_timeout is not None and not (
            isinstance(statement_timeout, int | float)
            and not isinstance(statement_timeout, bool)
            and math.isfinite(statement_timeout)
            and statement_timeout > 0
        ):
            raise ConfigurationError(
                f"statement_timeout must be a positive, finite number of seconds or None, got {statement_timeout!r}",
            )
        self.statement_timeout = statement_timeout
        if not isinstance(max_connections, int) or isinstance(max_connections, bool) or max_connections < 1:
            raise ConfigurationError(f"max_connections must be a positive integer, got {max_connections!r}")
        self.max_connections = max_connections
        self._pid = os.getpid()
        self._io = LoopThread(f"windowkeeper-postgres-{self.prefix}")
        self._pool: AsyncConnectionPool[AsyncConnection[Any]] | None = None
        self._pool_lock: asyncio.Lock | None = None
        self._opened: weakref.WeakSet[AsyncConnection[Any]] = weakref.WeakSet()
        self._lock: asyncio.Lock | None = None
        self._pending: list[_PendingWrite] = []
        self._flusher: asyncio.Future[None] | None = None
        self._closed = False
        self._t = {name: f"{self.prefix}_{name}" for name in _TABLES}

    def describe(self) -> str:
        if self._described is None:  # named in every error: masked once, not on every call
            self._described = f"PostgreSQL {mask_url(self.url)} (prefix {self.prefix!r})"
        return self._described

    # -- connection (all of this runs on the store's loop) ----------------------------------------------------

    async def _connections(self) -> AsyncConnectionPool[AsyncConnection[Any]]:
        """The pool, opened (and the schema migrated) on first use; a broken connection is replaced by the pool."""
        if self._pool is not None:
            return self._pool
        if self._pool_lock is None:
            self._pool_lock = asyncio.Lock()
        async with self._pool_lock:
            if self._pool is not None:
                return self._pool
            await self._reachable()
            pool: AsyncConnectionPool[AsyncConnection[Any]] = AsyncConnectionPool(
                self.url,
                min_size=1,
                max_size=self.max_connections,
                open=False,
                kwargs={
                    "autocommit": True,
                    "connect_timeout": max(1, int(self._connect_timeout)),
                    **self._session_options(),
                    **self._application_name(),
                },
                configure=self._track,
                # every connection handed out is checked first (one empty query): after a server restart or a
                # terminated backend the pool replaces dead connections instead of failing one call per connection
                check=self._check_connection,
                timeout=self._connect_timeout,
                name=f"windowkeeper-{self.prefix}",
            )
            try:
                await pool.open(wait=True, timeout=self._connect_timeout)
                async with pool.connection() as conn:
                    await self._migrate(conn)
            except BaseException:
                await pool.close()
                raise
            self._pool = pool
            close_at_exit(self)
            return pool

    async def _reachable(self) -> None:
        """One direct connection before the pool is made: a server that is down, a wrong port, database or user
        fails here at once with the driver's own reason. The pool retries until its timeout and then says only
        that it timed out (the reason went to a log line nobody sees)."""
        try:
            conn = await psycopg.AsyncConnection.connect(
                self.url, autocommit=True, connect_timeout=max(1, int(self._connect_timeout))
            )
        except psycopg.Error as exc:
            reason = mask_url(" ".join(str(exc).split()), source=self.url)
            raise StorageError(
                f"{self.describe()}: cannot connect ({reason}); check that the server is running and that the URL's "
                "host, port, database and user are right",
            ) from exc
        await conn.close()

    async def _check_connection(self, conn: AsyncConnection[Any]) -> None:
        """Pool ``check`` hook: `AsyncConnectionPool.check_connection`, and on a dead connection a check of every
        idle one, so after a failover the pool replaces them all at once (it backs off ~1 s between failed
        checks, which one dead connection after another would multiply)."""
        try:
            await AsyncConnectionPool.check_connection(conn)
        except Exception:
            if self._pool is not None:
                await self._pool.check()
            raise

    async def _track(self, conn: AsyncConnection[Any]) -> None:
        """Pool ``configure`` hook: remember every connection opened, so a forked child can detach them all."""
        self._opened.add(conn)

    def _application_name(self) -> dict[str, str]:
        """``application_name`` windowkeeper-<prefix> (unless the URL sets one): operators see whose sessions
        these are in ``pg_stat_activity``."""
        from psycopg.conninfo import conninfo_to_dict

        if "application_name" in conninfo_to_dict(self.url):
            return {}
        return {"application_name": f"windowkeeper-{self.prefix}"}

    def _session_options(self) -> dict[str, str]:
        """Server-side limits of every connection: ``statement_timeout`` and ``lock_timeout``.

        Writes are group-committed one transaction at a time (and before the pool every statement shared one
        connection), so one write blocked on a row lock held elsewhere stalled every other thread's writes (19.5 s
        in a test) until it ended. With the timeouts the blocked statement fails with a `StorageError` after
        ``statement_timeout`` seconds and the queue moves on; a lock wait gives up at the same limit.
        """
        if self.statement_timeout is None:
            return {}
        ms = max(1, int(self.statement_timeout * 1000))
        return {"options": f"-c statement_timeout={ms} -c lock_timeout={ms}"}

    def _check_fork(self) -> None:
        """After ``os.fork()`` start afresh: the parent's loop thread does not exist here and its socket is shared.

        A store used before a fork used to hang forever in the child, waiting on a loop nobody runs. The child gets
        a new loop thread and opens its own connection; the inherited connection is neither used nor closed with
        a goodbye to the server (that would end the parent's session): its descriptor is pointed at /dev/null
        and the object is kept alive until exit.
        """
        pid = os.getpid()
        if pid == self._pid:
            return
        logger.debug("PostgresStore (prefix %r): used in a forked child (pid %d); reconnecting", self.prefix, pid)
        self._pid = pid
        inherited = list(self._opened)
        for conn in inherited:
            _detach_socket(conn)
        _ABANDONED.append(((self._pool, inherited), self._io))
        self._io = LoopThread(f"windowkeeper-postgres-{self.prefix}")
        self._pool = None
        self._pool_lock = None
        self._opened = weakref.WeakSet()
        self._lock = None
        self._pending = []
        self._flusher = None

    async def _migrate(self, conn: AsyncConnection[Any]) -> None:
        schema = self._t["schema"]
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"windowkeeper:{self.prefix}",))
            await conn.execute(f"CREATE TABLE IF NOT EXISTS {schema} (version INTEGER NOT NULL)")
            cur = await conn.execute(f"SELECT version FROM {schema}")
            row = await cur.fetchone()
            current = 0 if row is None else int(row[0])
            if current > len(MIGRATIONS):
                raise StorageError(
                    f"PostgreSQL tables with prefix {self.prefix!r} are at schema version {current}, newer than "
                    f"this windowkeeper knows ({len(MIGRATIONS)}); upgrade windowkeeper",
                )
            for version in range(current, len(MIGRATIONS)):
                for statement in MIGRATIONS[version]:
                    await conn.execute(statement.format(p=self.prefix))
                logger.info("PostgreSQL: migrated prefix %r to schema version %d", self.prefix, version + 1)
            if row is None:
                await conn.execute(f"INSERT INTO {schema} (version) VALUES (%s)", (len(MIGRATIONS),))
            elif current != len(MIGRATIONS):
                await conn.execute(f"UPDATE {schema} SET version = %s", (len(MIGRATIONS),))

    async def _in_tx(self, fn: Callable[[AsyncConnection[Any]], Awaitable[T]]) -> T:
        """A read (or a one-off statement) in its own transaction on a pooled connection, beside other reads."""
        self._guard()
        pool = await self._connections()
        async with pool.connection() as conn, conn.transaction():
            return await fn(conn)

    def _guard(self) -> asyncio.Lock:
        if self._closed:
            raise StorageError(f"PostgresStore (prefix {self.prefix!r}) is closed; open a new store")
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def _write(self, fn: Callable[[AsyncConnection[Any]], Awaitable[T]], *, risky: bool) -> T:
        """Queue a write for the next group commit and wait until that commit is durable.

        A commit waits for the server's fsync (milliseconds), so concurrent writers that each committed alone
        would be bound by the disk. Writes that arrive while a transaction is in flight are committed together
        in the next one. A ``risky`` write (one that may fail on purpose, like a version conflict) runs inside
        a savepoint so its failure does not undo its neighbours; if anything else fails, the batch is rolled
        back and each write retried in its own transaction. A caller learns its result only after its commit.
        """
        self._guard()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append((fn, risky, future))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush())
        result: T = await future
        return result

    async def _flush(self) -> None:
        async with self._guard():
            while self._pending:
                batch, self._pending = self._pending, []
                if len(batch) > 1:
                    logger.debug("PostgreSQL (prefix %r): group commit of %d writes", self.prefix, len(batch))
                try:
                    outcomes = await self._commit_batch(batch)
                except Exception as exc:
                    if len(batch) == 1:
                        outcomes = [(False, exc)]
                    else:
                        outcomes = []
                        for item in batch:
                            try:
                                outcomes.extend(await self._commit_batch([item]))
                            except Exception as single_exc:
                                outcomes.append((False, single_exc))
                except BaseException as exc:
                    for _, _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    raise
                for (_, _, future), (ok, value) in zip(batch, outcomes, strict=True):
                    if future.done():
                        continue
                    if ok:
                        future.set_result(value)
                    else:
                        future.set_exception(value)

    async def _commit_batch(self, batch: list[_PendingWrite]) -> list[tuple[bool, Any]]:
        outcomes: list[tuple[bool, Any]] = []
        pool = await self._connections()
        async with pool.connection() as conn, conn.transaction():
            for fn, risky, _ in batch:
                if not risky or len(batch) == 1:
                    outcomes.append((True, await fn(conn)))
                    continue
                try:
                    async with conn.transaction():
                        outcomes.append((True, await fn(conn)))
                except (ConflictError, RecordNotFoundError, pg_errors.UniqueViolation) as exc:
                    outcomes.append((False, exc))
        return outcomes

    async def _run(
        self,
        fn: Callable[[AsyncConnection[Any]], Awaitable[T]],
        *,
        write: bool = False,
        risky: bool = False,
        idempotent: bool = True,
    ) -> T:
        """Run ``fn`` in a transaction (a read, or a queued write); retry once if the connection was lost.

        Only ``idempotent`` operations are retried: reads, and writes whose second run cannot do more than the
        first (appends deduplicate by message id, states and deletes replace, versioned updates and adds are
        refused by their own checks if the first run committed). An update without an expected version would
        bump twice, so it fails with `StorageError` instead.
        """
        self._check_fork()
        for attempt in (1, 2):
            try:
                return await self._io.run(self._write(fn, risky=risky) if write else self._in_tx(fn))
            except pg_errors.UniqueViolation as exc:
                raise ConflictError(
                    f"{self.describe()}: another writer inserted the same key first: {exc}",
                ) from exc
            except psycopg.Error as exc:
                if attempt == 1 and idempotent and _connection_lost(exc):
                    logger.info("%s: connection lost (%s); retrying once", self.describe(), type(exc).__name__)
                    continue
                raise StorageError(
                    f"{self.describe()}: PostgreSQL error: {mask_url(str(exc), source=self.url)}",
                ) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    # -- checkpointer side ----------------------------------------------------------------------------------

    async def append_messages(self, thread_id: str, messages: Sequence[Message]) -> int:
        check_id(thread_id, "thread_id")
        encoded = unique_new(thread_id, messages)
        if not encoded:
            return 0
        table = self._t["messages"]
        keys = [k for k, _ in encoded]
        bodies = [b for _, b in encoded]

        async def op(conn: AsyncConnection[Any]) -> int:
            cur = await conn.execute(
                f"INSERT INTO {table} (thread_id, message_key, body) "
                "SELECT %s, k, b FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS u(k, b, n) ORDER BY n "
                "ON CONFLICT (thread_id, message_key) DO NOTHING",
                (thread_id, keys, bodies),
            )
            return max(cur.rowcount, 0)

        return await self._run(op, write=True)

    async def load_messages(self, thread_id: str) -> list[Message]:
        check_id(thread_id, "thread_id")
        table = self._t["messages"]

        async def op(conn: AsyncConnection[Any]) -> list[tuple[Any, ...]]:
            cur = await conn.execute(f"SELECT body FROM {table} WHERE thread_id = %s ORDER BY seq", (thread_id,))
            return await cur.fetchall()

        rows = await self._run(op)
        origin = self.describe()
        return decode_messages(thread_id, [row[0] for row in rows], origin=origin)

    async def count_messages(self, thread_id: str) -> int:
        check_id(thread_id, "thread_id")
        table = self._t["messages"]

        async def op(conn: AsyncConnection[Any]) -> tuple[Any, ...] | None:
            cur = await conn.execute(f"SELECT COUNT(*) FROM {table} WHERE thread_id = %s", (thread_id,))
            return await cur.fetchone()

        row = await self._run(op)
        return 0 if row is None else int(row[0])

    async def load_messages_range(self, thread_id: str, start: int, stop: int) -> list[Message]:
        check_id(thread_id, "thread_id")
        start, stop = max(start, 0), max(stop, 0)
        if stop <= start:
            return []
        table = self._t["messages"]

        async def op(conn: AsyncConnection[Any]) -> list[tuple[Any, ...]]:
            cur = await conn.execute(
                f"SELECT body FROM {table} WHERE thread_id = %s ORDER BY seq LIMIT %s OFFSET %s",
                (thread_id, stop - start, start),
            )
            return await cur.fetchall()

        rows = await self._run(op)
        origin = self.describe()
        return decode_messages(thread_id, [row[0] for row in rows], start, origin=origin)

    async def put_state(self, thread_id: str, state: dict[str, Any]) -> None:
        check_id(thread_id, "thread_id")
        body = encode_state(thread_id, state)
        table = self._t["states"]

        async def op(conn: AsyncConnection[Any]) -> None:
            await conn.execute(
                f"INSERT INTO {table} (thread_id, body, updated_at) VALUES (%s, %s, now()) "
                "ON CONFLICT (thread_id) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
                (thread_id, body),
            )

        await self._run(op, write=True)

    async def get_state(self, thread_id: str) -> dict[str, Any] | None:
        check_id(thread_id, "thread_id")
        table = self._t["states"]

        async def op(conn: AsyncConnection[Any]) -> tuple[Any, ...] | None:
            cur = await conn.execute(f"SELECT body FROM {table} WHERE thread_id = %s", (thread_id,))
            return await cur.fetchone()

        row = await self._run(op)
        return None if row is None else decode_state(thread_id, row[0], origin=self.describe())

    async def delete_thread(self, thread_id: str) -> None:
        check_id(thread_id, "thread_id")
        messages, states = self._t["messages"], self._t["states"]

        async def op(conn: AsyncConnection[Any]) -> None:
            await conn.execute(f"DELETE FROM {messages} WHERE thread_id = %s", (thread_id,))
            await conn.execute(f"DELETE FROM {states} WHERE thread_id = %s", (thread_id,))

        await self._run(op, write=True)

    # -- memory side ----------------------------------------------------------------------------------------

    async def add_record(self, namespace: str, session_id: str, key: str, doc: dict[str, Any]) -> Record:
        body = check_new_record(namespace, session_id, key, doc)
        records, sessions = self._t["records"], self._t["sessions"]

        async def op(conn: AsyncConnection[Any]) -> int:
            cur = await conn.execute(
                f"SELECT 1 FROM {records} WHERE namespace = %s AND session_id = %s AND key = %s",
                (namespace, session_id, key),
            )
            if await cur.fetchone() is not None:
                raise record_exists(namespace, session_id, key)
            # past both the counter and the session's highest seq (an index lookup): an edited last_seq can
            # never hand out a seq a stored record holds
            cur = await conn.execute(
                f"INSERT INTO {sessions} AS s (namespace, session_id, last_seq) VALUES (%s, %s, "
                f"(SELECT COALESCE(MAX(seq), 0) + 1 FROM {records} WHERE namespace = %s AND session_id = %s)) "
                "ON CONFLICT (namespace, session_id) DO UPDATE SET last_seq = GREATEST(s.last_seq + 1, "
                f"(SELECT COALESCE(MAX(seq), 0) + 1 FROM {records} WHERE namespace = %s AND session_id = %s)) "
                "RETURNING last_seq",
                (namespace, session_id, namespace, session_id, namespace, session_id),
            )
            row = await cur.fetchone()
            assert row is not None
            if not 1 <= row[0] <= MAX_COUNTER:
                raise StorageError(
                    f"{self._origin(namespace, session_id)}: the session's seq counter is at {row[0]} (an edited "
                    "value?); list and remove bad records with `windowkeeper store check URL --remove`",
                )
            await conn.execute(
                f"INSERT INTO {records} (namespace, session_id, key, seq, version, body) "
                "VALUES (%s, %s, %s, %s, 1, %s)",
                (namespace, session_id, key, row[0], body),
            )
            return int(row[0])

        seq = await self._run(op, write=True, risky=True)
        return stored_record(key, seq, 1, body, origin=self._origin(namespace, session_id))

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

        async def op(conn: AsyncConnection[Any]) -> list[Record]:
            out: list[Record] = []
            for key, body, expected in checked:
                cur = await conn.execute(
                    f"SELECT seq, version FROM {records} WHERE namespace = %s AND session_id = %s AND key = %s "
                    "FOR UPDATE",
                    (namespace, session_id, key),
                )
                row = await cur.fetchone()
                stored = None if row is None else stored_counter(row[1], origin=origin, key=key, field="version")
                version = check_expected(namespace, session_id, key, expected, stored)
                assert row is not None  # check_expected raised otherwise
                seq = stored_counter(row[0], origin=origin, key=key, field="seq")
                if version >= MAX_COUNTER:
                    raise stored_limit(origin, key, version)
                await conn.execute(
                    f"UPDATE {records} SET body = %s, version = %s "
                    "WHERE namespace = %s AND session_id = %s AND key = %s",
                    (body, version + 1, namespace, session_id, key),
                )
                out.append(stored_record(key, seq, version + 1, body, origin=origin))
            return out

        guarded = all(expected is not None for _, _, expected in checked)
        return await self._run(op, write=True, risky=True, idempotent=guarded)

    async def get_record(self, namespace: str, session_id: str, key: str) -> Record | None:
        check_session(namespace, session_id)
        records = self._t["records"]

        async def op(conn: AsyncConnection[Any]) -> tuple[Any, ...] | None:
            cur = await conn.execute(
                f"SELECT seq, version, body FROM {records} WHERE namespace = %s AND session_id = %s AND key = %s",
                (namespace, session_id, key),
            )
            return await cur.fetchone()

        row = await self._run(op)
        if row is None:
            return None
        return make_record(key, row[0], row[1], row[2], origin=self._origin(namespace, session_id))

    async def list_records(self, namespace: str, session_id: str) -> list[Record]:
        check_session(namespace, session_id)
        records = self._t["records"]

        async def op(conn: AsyncConnection[Any]) -> list[tuple[Any, ...]]:
            cur = await conn.execute(
                f"SELECT key, seq, version, body FROM {records} WHERE namespace = %s AND session_id = %s ORDER BY seq",
                (namespace, session_id),
            )
            return await cur.fetchall()

        rows = await self._run(op)
        origin = self._origin(namespace, session_id)
        return [make_record(k, s, v, b, origin=origin) for k, s, v, b in rows]

    async def list_records_since(self, namespace: str, session_id: str, seq: int) -> list[Record]:
        check_session(namespace, session_id)
        records = self._t["records"]

        async def op(conn: AsyncConnection[Any]) -> list[tuple[Any, ...]]:
            cur = await conn.execute(
                f"SELECT key, seq, version, body FROM {records} WHERE namespace = %s AND session_id = %s "
                "AND seq >= %s ORDER BY seq",
                (namespace, session_id, check_seq(seq)),
            )
            return await cur.fetchall()

        rows = await self._run(op)
        origin = self._origin(namespace, session_id)
        return [make_record(k, s, v, b, origin=origin) for k, s, v, b in rows]

    async def list_records_since_skipping(
        self, namespace: str, session_id: str, seq: int, skip_prefix: str
    ) -> list[Record]:
        check_session(namespace, session_id)
        check_id(skip_prefix, "skip_prefix")
        records = self._t["records"]

        async def op(conn: AsyncConnection[Any]) -> list[tuple[Any, ...]]:
            cur = await conn.execute(
                f"SELECT key, seq, version, body FROM {records} WHERE namespace = %s AND session_id = %s "
                "AND seq >= %s AND left(key, %s) <> %s ORDER BY seq",
                (namespace, session_id, check_seq(seq), len(skip_prefix), skip_prefix),
            )
            return await cur.fetchall()

        rows = await self._run(op)
        origin = self._origin(namespace, session_id)
        return [stored_record(k, s, v, b, origin=origin) for k, s, v, b in rows]

    async def get_records(self, namespace: str, session_id: str, keys: Sequence[str]) -> list[Record]:
        check_session(namespace, session_id)
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return []
        records = self._t["records"]

        async def op(conn: AsyncConnection[Any]) -> list[tuple[Any, ...]]:
            cur = await conn.execute(
                f"SELECT key, seq, version, body FROM {records} WHERE namespace = %s AND session_id = %s "
                "AND key = ANY(%s) ORDER BY seq",
                (namespace, session_id, wanted),
            )
            return await cur.fetchall()

        rows = await self._run(op)
        origin = self._origin(namespace, session_id)
        return [make_record(k, s, v, b, origin=origin) for k, s, v, b in rows]

    async def delete_record(self, namespace: str, session_id: str, key: str) -> bool:
        check_session(namespace, session_id)
        records = self._t["records"]

        async def op(conn: AsyncConnection[Any]) -> int:
            cur = await conn.execute(
                f"DELETE FROM {records} WHERE namespace = %s AND session_id = %s AND key = %s",
                (namespace, session_id, key),
            )
            return cur.rowcount

        return bool(await self._run(op, write=True))

    async def delete_session(self, namespace: str, session_id: str) -> int:
        check_session(namespace, session_id)
        records, sessions = self._t["records"], self._t["sessions"]

        async def op(conn: AsyncConnection[Any]) -> int:
            cur = await conn.execute(
                f"DELETE FROM {records} WHERE namespace = %s AND session_id = %s",
                (namespace, session_id),
            )
            count = cur.rowcount
            await conn.execute(
                f"DELETE FROM {sessions} WHERE namespace = %s AND session_id = %s", (namespace, session_id)
            )
            return max(count, 0)

        return await self._run(op, write=True)

    # -- maintenance ----------------------------------------------------------------------------------------

    async def raw_rows(self) -> list[RawRow]:
        t = self._t

        async def op(conn: AsyncConnection[Any]) -> list[RawRow]:
            rows: list[RawRow] = []
            cur = await conn.execute(
                f"SELECT seq, thread_id, message_key, body, "
                f"row_number() OVER (PARTITION BY thread_id ORDER BY seq) - 1 FROM {t['messages']} "
                "ORDER BY thread_id, seq"
            )
            for rowid, thread, mkey, body, index in await cur.fetchall():
                rows.append(RawRow("message", (thread,), mkey, body, position=int(index), handle=rowid))
            cur = await conn.execute(f"SELECT thread_id, body FROM {t['states']}")
            for thread, body in await cur.fetchall():
                rows.append(RawRow("state", (thread,), "", body, handle=thread))
            cur = await conn.execute(
                f"SELECT namespace, session_id, key, seq, version, body FROM {t['records']} "
                "ORDER BY namespace, session_id, seq"
            )
            for ns, sid, key, seq, version, body in await cur.fetchall():
                rows.append(RawRow("record", (ns, sid), key, body, seq=seq, version=version, handle=(ns, sid, key)))
            return rows

        return await self._run(op)

    async def remove_raw(self, row: RawRow) -> bool:
        t = self._t
        if row.kind == "message":
            sql, args = f"DELETE FROM {t['messages']} WHERE seq = %s", (row.handle,)
        elif row.kind == "state":
            sql, args = f"DELETE FROM {t['states']} WHERE thread_id = %s", (row.handle,)
        else:
            sql = f"DELETE FROM {t['records']} WHERE namespace = %s AND session_id = %s AND key = %s"
            args = tuple(row.handle)

        async def op(conn: AsyncConnection[Any]) -> int:
            return (await conn.execute(sql, args)).rowcount

        return bool(await self._run(op, write=True))

    # -- lifecycle ------------------------------------------------------------------------------------------

    async def drop(self) -> None:
        """Drop every table of this prefix (tests, resets). The store stays usable and recreates them."""
        names = ", ".join(self._t[name] for name in _TABLES)

        async def op(conn: AsyncConnection[Any]) -> None:
            await conn.execute(f"DROP TABLE IF EXISTS {names}")

        await self._run(op)
        # the next call must re-run the migrations on fresh tables
        await self._io.run(self._forget_connection())

    async def _forget_connection(self) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # let an in-flight group commit finish first
            if self._pool is not None:
                pool, self._pool = self._pool, None
                await pool.close()

    async def close(self) -> None:
        if self._closed:
            return
        self._check_fork()
        self._closed = True
        closed(self)
        if self._io.started:
            await self._io.run(self._forget_connection())
            await asyncio.to_thread(self._io.stop)

    def _close_at_exit(self) -> None:
        """`close` for the interpreter's exit (see `windowkeeper.storage._exit`): no caller loop, this process only."""
        if self._closed or os.getpid() != self._pid or not self._io.started:
            return
        self._closed = True
        self._io.run_sync(self._forget_connection())
        self._io.stop()


_CONNECTION_STATES = ("57P01", "57P02", "57P03")
"""admin_shutdown (pg_terminate_backend), crash_shutdown, cannot_connect_now: the server dropped the session."""


def _connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection died (retry on a new one), not that the statement failed.

    A client-side loss (socket closed, server gone) carries no SQLSTATE; class 08 and the shutdown codes are
    the server's words for it. A pool timeout already waited its whole budget, and a statement or lock timeout
    is not a connection problem: neither is retried.
    """
    if not isinstance(exc, psycopg.OperationalError) or isinstance(exc, PoolTimeout):
        return False
    state = exc.sqlstate
    return state is None or state.startswith("08") or state in _CONNECTION_STATES


_ABANDONED: list[tuple[Any, LoopThread]] = []
"""Connections and loop threads inherited across a fork: kept alive so no finalizer runs on the parent's socket."""


def _detach_socket(conn: Any) -> None:
    """Point an inherited connection's descriptor at /dev/null, so nothing this process does reaches the server."""
    try:
        fd = conn.fileno()
    except Exception:  # an already closed or broken connection has no socket to detach
        return
    null = os.open(os.devnull, os.O_RDWR)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)
