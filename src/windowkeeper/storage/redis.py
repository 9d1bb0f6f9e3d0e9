"""`RedisStore`: the in-memory-server backend on redis.asyncio.

Every multi-key write is one Lua script, which Redis runs atomically: an append checks and records each message
id in a set before pushing its JSON onto the log (so concurrent or repeated appends never duplicate), and a
versioned batch checks every expected version before touching any record. Reads that span keys use MULTI/EXEC
for a consistent snapshot. The per-thread and per-session parts of a key are wrapped in a hash tag so the
multi-key scripts also work on Redis Cluster.

Key layout under ``<prefix>:``: ``t:{thread}:log`` (list), ``t:{thread}:ids`` (set), ``t:{thread}:state``
(string); ``r:{namespace/session}:body`` and ``:ver`` (hashes), ``:order`` (sorted set by seq), ``:next`` (counter).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import unquote

from .._bridge import LoopThread
from ..errors import MissingDependencyError, StorageError
from ..messages import Message
from ._exit import close_at_exit, closed
from .base import (
    MAX_COUNTER,
    RawRow,
    Record,
    RecordUpdate,
    SessionStore,
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
    record_missing,
    stored_counter,
    stored_record,
    unique_new,
    version_conflict,
)
from .url import mask_url, redis_target, resolve_prefix

try:
    import redis.asyncio as aredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import RedisError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("redis", "redis") from exc

if TYPE_CHECKING:
    from redis.commands.core import AsyncScript

_APPEND = """
local added = 0
for i = 1, #ARGV, 2 do
  if redis.call('SADD', KEYS[1], ARGV[i]) == 1 then
    redis.call('RPUSH', KEYS[2], ARGV[i + 1])
    added = added + 1
  end
end
return added
"""

_ADD_RECORD = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return -1 end
local seq = tonumber(redis.call('GET', KEYS[4]) or '0')
if not seq or seq ~= seq or seq < 0 or seq > 9007199254740991 or seq ~= math.floor(seq) then seq = 0 end
local top = redis.call('ZREVRANGE', KEYS[3], 0, 0, 'WITHSCORES')
if top[2] then
  local t = tonumber(top[2])
  if not t or t ~= t or t > 9007199254740991 then return -2 end
  if t > seq then seq = math.floor(t) end
end
seq = seq + 1
redis.call('SET', KEYS[4], string.format('%d', seq))
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], 1)
redis.call('ZADD', KEYS[3], seq, ARGV[1])
return seq
"""
"""The next seq is past both the counter and the highest seq in the order index, so an edited counter (lowered,
text, 1e300) can never hand out a seq a record holds; a corrupt index top (inf, NaN) refuses the add (-2)."""

_UPDATE_RECORDS = """
for i = 1, #ARGV, 3 do
  local v = redis.call('HGET', KEYS[2], ARGV[i])
  if not v then
    if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 1 then return {'bad', ARGV[i], 'version', false} end
    return {'missing', ARGV[i]}
  end
  if not string.match(v, '^[1-9]%d*$') or #v > 16 or tonumber(v) >= 9007199254740992 then
    return {'bad', ARGV[i], 'version', v}
  end
  if not redis.call('ZSCORE', KEYS[3], ARGV[i]) then return {'bad', ARGV[i], 'seq', false} end
  if ARGV[i + 2] ~= '' and tonumber(v) ~= tonumber(ARGV[i + 2]) then return {'conflict', ARGV[i], v} end
end
local out = {'ok'}
for i = 1, #ARGV, 3 do
  local v = redis.call('HINCRBY', KEYS[2], ARGV[i], 1)
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  out[#out + 1] = ARGV[i]
  out[#out + 1] = tostring(v)
  out[#out + 1] = redis.call('ZSCORE', KEYS[3], ARGV[i])
end
return out
"""

_RECORDS_SINCE = """
local keys = redis.call('ZRANGEBYSCORE', KEYS[3], ARGV[1], '+inf', 'WITHSCORES')
local skip = ARGV[2] or ''
local out = {}
for i = 1, #keys, 2 do
  if skip == '' or string.sub(keys[i], 1, #skip) ~= skip then
    out[#out + 1] = keys[i]
    out[#out + 1] = keys[i + 1]
    out[#out + 1] = redis.call('HGET', KEYS[2], keys[i]) or ''
    out[#out + 1] = redis.call('HGET', KEYS[1], keys[i]) or ''
  end
end
return out
"""


def _part(value: str) -> str:
    """Escape a user id for use inside a key: no ':' to split on, no braces to break the hash tag."""
    return value.replace("%", "%25").replace(":", "%3A").replace("{", "%7B").replace("}", "%7D")


logger = logging.getLogger(__name__)

_ABANDONED: list[tuple[Any, LoopThread]] = []
"""Clients and loop threads inherited across a fork: kept alive so no finalizer touches the parent's sockets."""


class RedisStore(SessionStore):
    """A `SessionStore` in Redis keys under ``<prefix>:``."""

    steps_directly = True

    def __init__(self, url: str | None = None, *, prefix: str | None = None) -> None:
        # redis-py's parse_url checks the URL and its driver options; ?prefix= is ours (the argument must agree)
        self.url, url_prefix = redis_target(url)
        self.prefix = check_prefix(resolve_prefix(url_prefix, prefix, url=self.url))
        self._described: str | None = None
        self._pid = os.getpid()
        self._io = LoopThread(f"windowkeeper-redis-{self.prefix}")
        self._client: aredis.Redis | None = None
        self._scripts: dict[str, AsyncScript] = {}
        self._closed = False

    def describe(self) -> str:
        if self._described is None:  # named in every error: masked once, not on every call
            self._described = f"Redis {mask_url(self.url)} (prefix {self.prefix!r})"
        return self._described

    # -- plumbing (runs on the store's loop) ------------------------------------------------------------------

    def _redis(self) -> aredis.Redis:
        if self._closed:
            raise StorageError(f"RedisStore (prefix {self.prefix!r}) is closed; open a new store")
        if self._client is None:
            # no retries inside the driver: it would re-send any command, a non-idempotent one included; `_do`
            # retries what is safe to run twice. The client name shows whose connections these are (CLIENT LIST).
            named: dict[str, Any] = {} if "client_name=" in self.url else {"client_name": f"windowkeeper-{self.prefix}"}
            client = aredis.Redis.from_url(self.url, decode_responses=True, retry=Retry(NoBackoff(), 0), **named)
            self._scripts = {
                "append": client.register_script(_APPEND),
                "add": client.register_script(_ADD_RECORD),
                "update": client.register_script(_UPDATE_RECORDS),
                "since": client.register_script(_RECORDS_SINCE),
            }
            self._client = client
            close_at_exit(self)
        return self._client

    async def _script(self, name: str, keys: list[str], args: list[Any]) -> Any:
        self._redis()
        return await self._scripts[name](keys=keys, args=args)

    def _check_fork(self) -> None:
        """After ``os.fork()`` start afresh with a new loop thread and client (the parent's loop is not running here).

        A store used before a fork used to hang forever in the child. The inherited client is kept alive, never
        used: its sockets belong to the parent's connections, and its finalizers would need the parent's loop.
        """
        pid = os.getpid()
        if pid == self._pid:
            return
        logger.debug("RedisStore (prefix %r): used in a forked child (pid %d); reconnecting", self.prefix, pid)
        self._pid = pid
        _ABANDONED.append((self._client, self._io))
        self._io = LoopThread(f"windowkeeper-redis-{self.prefix}")
        self._client = None
        self._scripts = {}

    async def _do(self, coro_fn: Any, *args: Any, where: str | None = None, idempotent: bool = True) -> Any:
        """Run ``coro_fn(*args)`` on the store's loop; on a lost connection, reconnect and retry once if safe.

        Safe means ``idempotent``: reads, and writes whose second run cannot do more than the first (appends
        deduplicate by message id, state writes and deletes replace, adds and versioned updates are refused by
        their scripts' own checks). An update without an expected version would bump twice, so it fails typed.
        Before the retry every pooled connection is dropped: one killed connection usually means all were.
        """
        self._check_fork()

        async def call() -> Any:
            return await coro_fn(*args)

        for attempt in (1, 2):
            try:
                return await self._io.run(call())
            except (RedisConnectionError, RedisTimeoutError) as exc:
                if attempt == 1 and idempotent and self._client is not None:
                    logger.info("%s: connection lost (%s); reconnecting and retrying once", self.describe(), exc)
                    await self._io.run(self._client.connection_pool.disconnect())
                    continue
                problem = mask_url(str(exc), source=self.url)
                raise StorageError(f"{where or self.describe()}: Redis error: {problem}") from exc
            except RedisError as exc:
                problem = mask_url(str(exc), source=self.url)
                raise StorageError(f"{where or self.describe()}: Redis error: {problem}") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _thread_keys(self, thread_id: str) -> tuple[str, str, str]:
        base = f"{self.prefix}:t:{{{_part(thread_id)}}}"
        return f"{base}:ids", f"{base}:log", f"{base}:state"

    def _session_keys(self, namespace: str, session_id: str) -> list[str]:
        base = f"{self.prefix}:r:{{{_part(namespace)}:{_part(session_id)}}}"
        return [f"{base}:body", f"{base}:ver", f"{base}:order", f"{base}:next"]

    # -- checkpointer side ----------------------------------------------------------------------------------

    async def append_messages(self, thread_id: str, messages: Sequence[Message]) -> int:
        check_id(thread_id, "thread_id")
        encoded = unique_new(thread_id, messages)
        if not encoded:
            return 0
        ids, log, _ = self._thread_keys(thread_id)
        args: list[Any] = []
        for mkey, body in encoded:
            args.extend((mkey, body))
        return int(await self._do(self._script, "append", [ids, log], args))

    async def load_messages(self, thread_id: str) -> list[Message]:
        check_id(thread_id, "thread_id")
        _, log, _ = self._thread_keys(thread_id)

        async def op() -> list[str]:
            return cast(list[str], await self._redis().lrange(log, 0, -1))  # type: ignore[misc]

        bodies: list[str] = await self._do(op)
        origin = self.describe()
        return decode_messages(thread_id, bodies, origin=origin)

    async def count_messages(self, thread_id: str) -> int:
        check_id(thread_id, "thread_id")
        _, log, _ = self._thread_keys(thread_id)

        async def op() -> int:
            return int(await self._redis().llen(log))  # type: ignore[misc]

        return int(await self._do(op))

    async def load_messages_range(self, thread_id: str, start: int, stop: int) -> list[Message]:
        check_id(thread_id, "thread_id")
        start, stop = max(start, 0), max(stop, 0)
        if stop <= start:
            return []
        _, log, _ = self._thread_keys(thread_id)

        async def op() -> list[str]:
            return cast(list[str], await self._redis().lrange(log, start, stop - 1))  # type: ignore[misc]

        bodies: list[str] = await self._do(op)
        origin = self.describe()
        return decode_messages(thread_id, bodies, start, origin=origin)

    async def put_state(self, thread_id: str, state: dict[str, Any]) -> None:
        check_id(thread_id, "thread_id")
        body = encode_state(thread_id, state)
        _, _, key = self._thread_keys(thread_id)

        async def op() -> None:
            await self._redis().set(key, body)

        await self._do(op)

    async def get_state(self, thread_id: str) -> dict[str, Any] | None:
        check_id(thread_id, "thread_id")
        _, _, key = self._thread_keys(thread_id)

        async def op() -> str | None:
            return cast("str | None", await self._redis().get(key))

        body = await self._do(op)
        return None if body is None else decode_state(thread_id, body, origin=self.describe())

    async def delete_thread(self, thread_id: str) -> None:
        check_id(thread_id, "thread_id")
        keys = self._thread_keys(thread_id)

        async def op() -> None:
            await self._redis().delete(*keys)

        await self._do(op)

    # -- memory side ----------------------------------------------------------------------------------------

    async def add_record(self, namespace: str, session_id: str, key: str, doc: dict[str, Any]) -> Record:
        body = check_new_record(namespace, session_id, key, doc)
        origin = self._origin(namespace, session_id)
        keys = self._session_keys(namespace, session_id)
        seq = int(await self._do(self._script, "add", keys, [key, body], where=origin))
        if seq == -1:
            raise record_exists(namespace, session_id, key)
        if seq < 0:
            raise StorageError(
                f"{origin}: the order index {keys[2]!r} holds a seq that is not a finite integer up to {MAX_COUNTER} "
                "(edited?); list and remove bad records with `windowkeeper store check URL --remove`",
            )
        return stored_record(key, seq, 1, body, origin=origin)

    async def update_records(
        self,
        namespace: str,
        session_id: str,
        updates: Sequence[RecordUpdate],
    ) -> list[Record]:
        check_session(namespace, session_id)
        checked = check_updates(updates)
        if not checked:
            return []
        args: list[Any] = []
        for key, body, expected in checked:
            args.extend((key, body, "" if expected is None else str(expected)))
        origin = self._origin(namespace, session_id)
        guarded = all(expected is not None for _, _, expected in checked)
        keys = self._session_keys(namespace, session_id)
        reply = await self._do(self._script, "update", keys, args, where=origin, idempotent=guarded)
        status = reply[0]
        if status == "missing":
            raise record_missing(namespace, session_id, reply[1])
        if status == "bad":  # a version or seq that is not a counter, or missing beside a stored body
            stored_counter(reply[3] if len(reply) > 3 else None, origin=origin, key=reply[1], field=reply[2])
            raise StorageError(f"{origin}: record {reply[1]!r} has {reply[2]} {reply[3:]!r} (edited?)")
        if status == "conflict":
            key, actual = reply[1], stored_counter(reply[2], origin=origin, key=reply[1], field="version")
            expected = next(exp for k, _, exp in checked if k == key)
            raise version_conflict(namespace, session_id, key, expected, actual)
        bodies = {key: body for key, body, _ in checked}
        out: list[Record] = []
        for i in range(1, len(reply), 3):
            key = reply[i]
            out.append(stored_record(key, reply[i + 2], reply[i + 1], bodies[key], origin=origin))
        return out

    async def get_record(self, namespace: str, session_id: str, key: str) -> Record | None:
        check_session(namespace, session_id)
        body_k, ver_k, order_k, _ = self._session_keys(namespace, session_id)

        async def op() -> list[Any]:
            async with self._redis().pipeline(transaction=True) as pipe:
                pipe.hget(body_k, key)
                pipe.hget(ver_k, key)
                pipe.zscore(order_k, key)
                result: list[Any] = await pipe.execute()
                return result

        origin = self._origin(namespace, session_id)
        body, version, seq = await self._do(op, where=origin)
        if body is None and version is None and seq is None:
            return None
        return make_record(key, seq, version, body, origin=origin)

    async def list_records(self, namespace: str, session_id: str) -> list[Record]:
        check_session(namespace, session_id)
        body_k, ver_k, order_k, _ = self._session_keys(namespace, session_id)

        async def op() -> list[Any]:
            async with self._redis().pipeline(transaction=True) as pipe:
                pipe.zrange(order_k, 0, -1, withscores=True)
                pipe.hgetall(body_k)
                pipe.hgetall(ver_k)
                result: list[Any] = await pipe.execute()
                return result

        origin = self._origin(namespace, session_id)
        order, bodies, versions = await self._do(op, where=origin)
        return [make_record(key, score, versions.get(key), bodies.get(key), origin=origin) for key, score in order]

    async def list_records_since(self, namespace: str, session_id: str, seq: int) -> list[Record]:
        return await self._since(namespace, session_id, seq, "", make_record)

    async def list_records_since_skipping(
        self, namespace: str, session_id: str, seq: int, skip_prefix: str
    ) -> list[Record]:
        return await self._since(namespace, session_id, seq, check_id(skip_prefix, "skip_prefix"), stored_record)

    async def _since(
        self, namespace: str, session_id: str, seq: int, skip_prefix: str, build: Callable[..., Record]
    ) -> list[Record]:
        """One script call: the records from ``seq`` on, minus keys starting with ``skip_prefix`` (unless empty),
        whose bodies then never leave the server; ``build`` makes each record (decoded now or on first use)."""
        check_session(namespace, session_id)
        keys = self._session_keys(namespace, session_id)
        origin = self._origin(namespace, session_id)
        reply = await self._do(self._script, "since", keys, [check_seq(seq), skip_prefix], where=origin)
        out: list[Record] = []
        for i in range(0, len(reply), 4):
            key, score, version, body = reply[i : i + 4]
            out.append(build(key, score, version or None, body or None, origin=origin))
        return out

    async def get_records(self, namespace: str, session_id: str, keys: Sequence[str]) -> list[Record]:
        check_session(namespace, session_id)
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return []
        body_k, ver_k, order_k, _ = self._session_keys(namespace, session_id)

        async def op() -> list[Any]:
            async with self._redis().pipeline(transaction=True) as pipe:
                pipe.hmget(body_k, wanted)
                pipe.hmget(ver_k, wanted)
                for key in wanted:
                    pipe.zscore(order_k, key)
                result: list[Any] = await pipe.execute()
                return result

        origin = self._origin(namespace, session_id)
        reply = await self._do(op, where=origin)
        bodies, versions, seqs = reply[0], reply[1], reply[2:]
        found = [
            make_record(key, seq, version, body, origin=origin)
            for key, body, version, seq in zip(wanted, bodies, versions, seqs, strict=True)
            if body is not None or version is not None or seq is not None
        ]
        return sorted(found, key=lambda r: r.seq)

    async def delete_record(self, namespace: str, session_id: str, key: str) -> bool:
        check_session(namespace, session_id)
        body_k, ver_k, order_k, _ = self._session_keys(namespace, session_id)

        async def op() -> list[Any]:
            async with self._redis().pipeline(transaction=True) as pipe:
                pipe.hdel(body_k, key)
                pipe.hdel(ver_k, key)
                pipe.zrem(order_k, key)
                result: list[Any] = await pipe.execute()
                return result

        removed = await self._do(op)
        return bool(removed[0])

    async def delete_session(self, namespace: str, session_id: str) -> int:
        check_session(namespace, session_id)
        keys = self._session_keys(namespace, session_id)

        async def op() -> list[Any]:
            async with self._redis().pipeline(transaction=True) as pipe:
                pipe.zcard(keys[2])
                pipe.delete(*keys)
                result: list[Any] = await pipe.execute()
                return result

        result = await self._do(op)
        return int(result[0])

    # -- maintenance ----------------------------------------------------------------------------------------

    async def raw_rows(self) -> list[RawRow]:
        async def op() -> list[RawRow]:
            client = self._redis()
            rows: list[RawRow] = []
            async for name in client.scan_iter(match=f"{self.prefix}:*", count=500):
                try:
                    rows.extend(await self._raw_key(client, name))
                except RedisError as exc:  # WRONGTYPE: a key edited into another type
                    rows.append(RawRow("key", (), name, None, handle=name, problem=f"unreadable key: {exc}"))
            return rows

        rows: list[RawRow] = await self._do(op)
        return rows

    async def _raw_key(self, client: aredis.Redis, name: str) -> list[RawRow]:
        scope_text = name[name.find("{") + 1 : name.rfind("}")]
        kind = name[len(self.prefix) + 1 : len(self.prefix) + 3]
        if kind == "t:" and name.endswith(":log"):
            thread = (unquote(scope_text),)
            log = cast(list[str], await client.lrange(name, 0, -1))  # type: ignore[misc]
            return [RawRow("message", thread, "", b, position=i, handle=(name, b)) for i, b in enumerate(log)]
        if kind == "t:" and name.endswith(":state"):
            return [RawRow("state", (unquote(scope_text),), "", await client.get(name), handle=name)]
        if kind == "r:" and name.endswith(":order"):
            ns, _, sid = scope_text.partition(":")
            body_k, ver_k, order_k, _ = self._session_keys(unquote(ns), unquote(sid))
            order: dict[str, Any] = dict(await client.zrange(order_k, 0, -1, withscores=True))  # type: ignore[arg-type]
            bodies = cast(dict[str, str], await client.hgetall(body_k))  # type: ignore[misc]
            versions = cast(dict[str, str], await client.hgetall(ver_k))  # type: ignore[misc]
            scope = (unquote(ns), unquote(sid))
            return [
                RawRow(
                    "record",
                    scope,
                    key,
                    bodies.get(key),
                    seq=order.get(key),
                    version=versions.get(key),
                    handle=(body_k, ver_k, order_k, key),
                )
                for key in dict.fromkeys([*order, *bodies, *versions])
            ]
        if kind == "r:" and (name.endswith(":body") or name.endswith(":ver")):
            ns, _, sid = scope_text.partition(":")
            order_k = self._session_keys(unquote(ns), unquote(sid))[2]
            if await client.exists(order_k):
                return []  # listed with its order index
            body_k, ver_k, order_k, _ = self._session_keys(unquote(ns), unquote(sid))
            hashed = cast(dict[str, str], await client.hgetall(name))  # type: ignore[misc]
            return [
                RawRow(
                    "record",
                    (unquote(ns), unquote(sid)),
                    key,
                    value if name == body_k else None,
                    version=value if name == ver_k else None,
                    handle=(body_k, ver_k, order_k, key),
                )
                for key, value in hashed.items()
            ]
        return []

    async def remove_raw(self, row: RawRow) -> bool:
        async def op() -> bool:
            client = self._redis()
            if row.kind == "message":
                return bool(await client.lrem(row.handle[0], 1, row.handle[1]))  # type: ignore[misc]
            if row.kind in ("state", "key"):
                return bool(await client.delete(row.handle))
            body_k, ver_k, order_k, key = row.handle
            async with client.pipeline(transaction=True) as pipe:
                pipe.hdel(body_k, key)
                pipe.hdel(ver_k, key)
                pipe.zrem(order_k, key)
                removed: list[Any] = await pipe.execute()
            return any(removed)

        return bool(await self._do(op))

    # -- lifecycle ------------------------------------------------------------------------------------------

    async def drop(self) -> None:
        """Delete every key under this prefix (tests, resets)."""

        async def op() -> None:
            client = self._redis()
            batch: list[str] = []
            async for key in client.scan_iter(match=f"{self.prefix}:*", count=500):
                batch.append(key)
                if len(batch) >= 500:
                    await client.delete(*batch)
                    batch = []
            if batch:
                await client.delete(*batch)

        await self._do(op)

    async def _aclose_client(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def close(self) -> None:
        if self._closed:
            return
        self._check_fork()
        self._closed = True
        closed(self)
        if self._io.started:
            await self._io.run(self._aclose_client())
            await asyncio.to_thread(self._io.stop)

    def _close_at_exit(self) -> None:
        """`close` for the interpreter's exit (see `windowkeeper.storage._exit`): no caller loop, this process only."""
        if self._closed or os.getpid() != self._pid or not self._io.started:
            return
        self._closed = True
        self._io.run_sync(self._aclose_client())
        self._io.stop()
