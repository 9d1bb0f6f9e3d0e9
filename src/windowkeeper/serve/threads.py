"""One `Window` per conversation thread, its state committed to the shared store with optimistic concurrency.

Several gateway processes may serve one thread in turn (behind a load balancer, all on one PostgreSQL or Redis
store). Each process keeps the `Window` of the threads it served recently; before using one it reads the version of
the thread's committed state, and a version written by another process means its window is stale: it is dropped
and a new one reads the thread back from the store (view, summary, offloaded originals, recall), exactly as a
restarted process would.

Writes go through `CommitStore`: the window's state snapshot is a versioned record, written only if it is still at
the version this process read, and the messages the call appends to the thread's log are held until that write
succeeds. Two processes racing on one thread therefore never both commit from the same version: the loser gets a
`ConflictError`, drops its window and redoes the call on the winner's state, so no update is lost and no view is
built from a mix of two.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import sys
import tempfile
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .._cache import LRUCache
from ..context import TokenBudgetContextManager
from ..context.recall import Recall
from ..context.recall_index import RecallIndex
from ..integrations._threads import HEAD_NAMESPACE, OFFLOAD_NAMESPACE, VIEW_NAMESPACE
from ..integrations.window import DEFAULT_RESERVE_TOKENS, FitResult, Window
from ..messages import Message
from ..prompt import system_costs, tool_schema_tokens
from ..storage import ConflictError, RecordNotFoundError, SessionStore
from ..storage.base import Record, RecordUpdate
from ..tokens import MEMO_ENTRY_BYTES, TiktokenCounter
from .config import ServeConfig
from .identity import LINK_NAMESPACE
from .projection import ItemCache

logger = logging.getLogger(__name__)

STATE_NAMESPACE = "windowkeeper.serve.state"
STATE_KEY = "window"
MAX_ATTEMPTS = 8
FIXED_SLACK = 1024
"""Tokens a request's fixed part may have beyond its bytes (message framing, reply priming, the recall tool's
declaration, which the client did not send): a request this much under the limit in bytes is certainly under it."""


THREAD_NAMESPACES = (STATE_NAMESPACE, OFFLOAD_NAMESPACE, VIEW_NAMESPACE, HEAD_NAMESPACE, LINK_NAMESPACE)
"""Every record namespace the gateway keeps per thread (session: the thread's store id), besides its message log:
its committed window state, its window's offloaded originals, view records and head, and its index links."""


async def delete_thread_data(store: SessionStore, thread_id: str) -> None:
    """Delete everything ``store`` holds of a gateway thread: its message log and its sessions of every
    `THREAD_NAMESPACES` (the recall index is the process's own, not in the store). One store batch: one
    transaction on SQLite instead of six."""
    async with store.batch():
        await store.delete_thread(thread_id)
        for namespace in THREAD_NAMESPACES:
            await store.delete_session(namespace, thread_id)


def _reserve(budget: int) -> int:
    """The room a thread's manager keeps for the reply."""
    return min(DEFAULT_RESERVE_TOKENS, budget // 5)


@dataclass(frozen=True)
class Fixed:
    """What a request's tools and system text cost together, and what the thread's manager leaves them."""

    tokens: int
    limit: int


@dataclass(frozen=True)
class CacheShares:
    """How `ServeConfig.cache_bytes` is divided among the memos every thread of the process shares.

    Three eighths go to the originals of messages that left a view (handed back byte for byte when recalled; older
    ones are rebuilt from the index), an eighth each to the message token counts, the summarizer's candidate lines,
    the recall passages' token counts and their words, and the clients' last request bodies as parsed (`BodyMemo`).
    At the 64 MiB default that is 24 MiB of originals and 8 MiB for each of the others.
    """

    originals: int
    counts: int
    summary: int
    pricing: int
    terms: int
    bodies: int

    @classmethod
    def of(cls, total: int) -> CacheShares:
        eighth = total // 8
        return cls(
            originals=total - 5 * eighth, counts=eighth, summary=eighth, pricing=eighth, terms=eighth, bodies=eighth
        )


class CommitStore(SessionStore):
    """A `SessionStore` whose ``put_state`` is a compare-and-set (see the module docstring); the rest delegates."""

    commits_state = True

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.versions: dict[str, int] = {}
        self._pending: dict[str, list[Message]] = {}

    async def version(self, thread_id: str) -> int:
        """The committed version of the thread's state (0: none yet)."""
        record = await self.inner.get_record(STATE_NAMESPACE, thread_id, STATE_KEY)
        return record.version if record is not None else 0

    async def get_state(self, thread_id: str) -> dict[str, Any] | None:
        record = await self.inner.get_record(STATE_NAMESPACE, thread_id, STATE_KEY)
        self.versions[thread_id] = record.version if record is not None else 0
        self._pending.pop(thread_id, None)
        if record is None:
            return None
        state = orjson.loads(record.doc["state"])
        return state if isinstance(state, dict) else None

    async def put_state(self, thread_id: str, state: dict[str, Any]) -> None:
        expected = self.versions.get(thread_id, 0)
        pending = self._pending.pop(thread_id, [])
        # the snapshot holds the whole view: one JSON string is encoded (and checked by the store) far faster
        # than the nested document, which the store would walk value by value on every call
        doc = {"state": orjson.dumps(state).decode()}
        record: Record
        if expected == 0:
            record = await self.inner.add_record(STATE_NAMESPACE, thread_id, STATE_KEY, doc)
        else:
            record = await self.inner.update_record(
                STATE_NAMESPACE, thread_id, STATE_KEY, doc, expected_version=expected
            )
        self.versions[thread_id] = record.version
        if pending:
            await self.inner.append_messages(thread_id, pending)

    def forget(self, thread_id: str) -> None:
        self.versions.pop(thread_id, None)
        self._pending.pop(thread_id, None)

    async def append_messages(self, thread_id: str, messages: Sequence[Message]) -> int:
        self._pending.setdefault(thread_id, []).extend(messages)
        return len(messages)

    async def load_messages(self, thread_id: str) -> list[Message]:
        return [*await self.inner.load_messages(thread_id), *self._pending.get(thread_id, [])]

    async def count_messages(self, thread_id: str) -> int:
        return await self.inner.count_messages(thread_id) + len(self._pending.get(thread_id, []))

    async def add_record(self, namespace: str, session_id: str, key: str, doc: dict[str, Any]) -> Record:
        return await self.inner.add_record(namespace, session_id, key, doc)

    async def update_records(self, namespace: str, session_id: str, updates: Sequence[RecordUpdate]) -> list[Record]:
        return await self.inner.update_records(namespace, session_id, updates)

    async def get_record(self, namespace: str, session_id: str, key: str) -> Record | None:
        return await self.inner.get_record(namespace, session_id, key)

    async def get_records(self, namespace: str, session_id: str, keys: Sequence[str]) -> list[Record]:
        return await self.inner.get_records(namespace, session_id, keys)

    async def list_records(self, namespace: str, session_id: str) -> list[Record]:
        return await self.inner.list_records(namespace, session_id)

    async def delete_record(self, namespace: str, session_id: str, key: str) -> bool:
        return await self.inner.delete_record(namespace, session_id, key)

    async def delete_session(self, namespace: str, session_id: str) -> int:
        return await self.inner.delete_session(namespace, session_id)

    async def delete_thread(self, thread_id: str) -> None:
        self.forget(thread_id)
        await self.inner.delete_thread(thread_id)
        await self.inner.delete_session(STATE_NAMESPACE, thread_id)

    async def close(self) -> None:
        await self.inner.close()


@dataclass(frozen=True)
class Clean:
    """A thread's last call went upstream exactly as the client sent it: what `Gateway.passes_through` compares
    the next request with (its format, list length, exact prompt size, system value and tools)."""

    fmt: str
    length: int
    tokens: int
    system: Any
    tools: list[Any] | None


@dataclass
class Thread:
    """What this process keeps of one thread between calls."""

    window: Window
    items: ItemCache | None = None
    removed: int | None = 0
    """Tokens the gateway has taken out of this thread so far (what the client sends = what goes up + this);
    None when this process did not see the thread from its start (read back from the store)."""
    clean: Clean | None = None
    """Set while every call so far went out unchanged (None after any change, and for a thread read back)."""
    lead: int = 0
    """How many leading items of ``items`` are system text (Chat Completions system/developer messages)."""
    ran: ItemCache | None = None
    """The list the window last ran on here, and its leading system items (``items`` may be a later one, sent
    before its window ran: `Gateway.passes_through`); None for a window read back from the store."""
    ran_lead: int = 0
    seq: int = 0
    """`Placement.seq` of the request whose list ``items`` is."""
    weight: int = 0
    """Bytes of the thread's last request (`Threads._evict`)."""
    used: float = 0.0
    """`time.monotonic` of the thread's last call."""


class Threads:
    """The threads this process serves: a bounded map of `Thread`, committed through one `CommitStore`."""

    def __init__(self, config: ServeConfig, store: SessionStore) -> None:
        self.config = config
        self.store = CommitStore(store)
        # bounded by `_evict` (count, bytes, idle time, releasing what each evicted thread holds), not by `put`
        self._threads: LRUCache[str, Thread] = LRUCache(sys.maxsize)
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self.shares = CacheShares.of(config.cache_bytes)
        # one counter for the process's managers, recall and summarizer, its memo sized by its share (the shared
        # default counter's bound is for a single application, not for every conversation of a server)
        self.counter = TiktokenCounter(max_cache_entries=max(1, self.shares.counts // MEMO_ENTRY_BYTES))
        self._summarizer: Any = None
        self._recall: Recall | None = None
        self._recall_dir: str | None = None
        self.conflicts = 0
        self.evictions = 0
        self.deleted = 0
        self.on_leave: Callable[[str], None] | None = None
        """Told the store id of each thread that leaves this process's memory (`Gateway._left`)."""
        self._bytes = 0
        self._fixed_limit: int | None = None
        self._fixed_seen: LRUCache[str, tuple[str | None, Sequence[Any] | None, int]] = LRUCache(
            config.max_threads, name="max_threads"
        )
        """Thread -> its last system text, tools and their cost (`fixed_over`)."""

    def lock(self, thread_id: str) -> asyncio.Lock:
        """Calls on one thread in this process run one at a time (across processes the commit decides)."""
        lock = self._locks.get(thread_id)
        if lock is None:
            # weakly held: a lock lives while a call holds or awaits it, so the map never outgrows the calls
            lock = self._locks[thread_id] = asyncio.Lock()
        return lock

    def local(self, thread_id: str) -> Thread | None:
        return self._threads.peek(thread_id)

    def summarizer(self) -> Any:
        if self._summarizer is None:
            from ..summarize import ExtractiveSummarizer, get_summarizer

            name = self.config.summarizer
            self._summarizer = (
                ExtractiveSummarizer(self.counter, cache_bytes=self.shares.summary)
                if name == "extractive"
                else get_summarizer(name)
            )
        return self._summarizer

    def recall(self) -> Recall:
        """The process's one recall index, shared by every thread's manager (each under its own thread key).

        One manager per thread, each with its own in-memory index and originals cache, made the process grow with
        every thread's history. The shared index lives in a file of a private temporary folder (its passages in
        SQLite pages, not the heap) and the originals cache has one bound for the process; the index is derived
        state (a thread read back from the store is indexed again), so the folder goes when the process stops.
        """
        if self._recall is None:
            self._recall_dir = tempfile.mkdtemp(prefix="windowkeeper-serve-")
            shares = self.shares
            index = RecallIndex(Path(self._recall_dir) / "recall.sqlite3", terms_cache_bytes=shares.terms)
            self._recall = Recall(
                self.counter,
                index=index,
                original_cache_bytes=shares.originals,
                pricing_cache_bytes=shares.pricing,
            )
        return self._recall

    def series(self) -> list[tuple[str, str, str, int]]:
        """What the process holds in memory against its bounds, for ``GET /metrics`` (`Metrics.render`)."""
        return [
            ("windowkeeper_threads_in_memory", "gauge", "Threads whose window this process keeps.", len(self._threads)),
            (
                "windowkeeper_thread_bytes",
                "gauge",
                "Last request sizes of the threads kept, together (bounded by max_thread_bytes).",
                self._bytes,
            ),
            ("windowkeeper_thread_evictions_total", "counter", "Threads pushed out of memory.", self.evictions),
            (
                "windowkeeper_threads_deleted_total",
                "counter",
                "Threads whose stored data was deleted: no recognition index record led to them any more.",
                self.deleted,
            ),
        ]

    def _weigh(self, thread: Thread, weight: int) -> None:
        self._bytes += weight - thread.weight
        thread.weight = weight
        thread.used = time.monotonic()

    def _evict(self, keep: str) -> None:
        """Keep the threads in memory within the process's bounds: at most ``max_threads``, their last requests at
        most ``max_thread_bytes`` together, none idle for more than ``idle_seconds``. The least recently used go
        first, passing over ``keep`` (the thread being served) and every thread with a call in flight; a thread that
        comes back is read from the store.

        What a thread holds in memory (its window's view and read cache, its items, its share of the recall index)
        grows with its conversation, so a bound on the number of threads alone lets the process grow without end
        while its conversations do; the request size is the measure of that growth the gateway has for free.
        """
        config, now = self.config, time.monotonic()

        def over(_: str, thread: Thread) -> bool:
            return (
                len(self._threads) > config.max_threads
                or self._bytes > config.max_thread_bytes
                or now - thread.used > config.idle_seconds
            )

        def in_use(thread_id: str) -> bool:
            # a thread with a call in flight (its lock held or awaited) stays: evicting it under that call would
            # forget the version its commit expects, and the call would conflict with itself until it gave up
            lock = self._locks.get(thread_id)
            return thread_id == keep or (lock is not None and lock.locked())

        for oldest, thread in self._threads.evict_while(over, in_use=in_use):
            self.evictions += 1
            self.store.forget(oldest)
            self._release(thread)
            if self.on_leave is not None:
                self.on_leave(oldest)

    def busy(self, thread_id: str, *, memory: bool = True) -> bool:
        """Whether the thread is in use here: a call on it in flight or, with ``memory``, its window in memory (a
        client may go on with it, recognized by this process's hints)."""
        lock = self._locks.get(thread_id)
        return (memory and thread_id in self._threads) or (lock is not None and lock.locked())

    async def delete(self, thread_id: str) -> None:
        """Delete everything the store holds of the thread: its message log and committed state (`CommitStore`),
        its window's offloaded originals, view records and head, and its index links (`delete_thread_data`). What
        this process holds of it goes too (its window, and with it the thread's passages in the recall index)."""
        self._release(self._threads.pop(thread_id))
        self._fixed_seen.pop(thread_id)
        self.store.forget(thread_id)
        await delete_thread_data(self.store.inner, thread_id)
        self.deleted += 1

    def _release(self, thread: Thread | None) -> None:
        """A thread leaves this process's memory (evicted, replaced or redone): its request no longer counts
        against ``max_thread_bytes``, and its manager drops what it holds in the shared recall."""
        if thread is None:
            return
        self._bytes -= thread.weight
        manager = thread.window.manager
        if manager is not None:
            manager.forget()

    def fixed_over(self, thread_id: str, system: str | None, tools: Sequence[Any] | None, size: int) -> Fixed | None:
        """The cost of ``system`` and ``tools`` when they alone reach the manager's low watermark, else None.

        Such a request leaves the manager no room for any of the conversation: a new thread's manager refuses its
        tools outright, and a thread's existing manager would cut the conversation to its last turn and still send
        more than the budget. ``size`` (the request's bytes; a token is at least one byte) settles most requests
        without counting anything; the thread's last count is reused while its tools and system text are equal
        to the last ones (a client sends the same ones call after call).
        """
        limit = self._fixed_limit
        if limit is None:
            budget = self.config.budget
            bare = TokenBudgetContextManager(
                budget, counter=self.counter, reserve_tokens=_reserve(budget), recall=False
            )
            limit = self._fixed_limit = bare.low_limit
        if size + FIXED_SLACK < limit:
            return None
        seen = self._fixed_seen.peek(thread_id)
        if seen is not None and seen[0] == system and seen[1] == tools:
            tokens = seen[2]
        else:
            counter = self.counter
            tokens = (
                tool_schema_tokens([dict(t) for t in tools] if tools else None, counter)
                + system_costs((system,) if system else (), None, None, counter).system
                + counter.count_messages([])
            )
            self._fixed_seen.put(thread_id, (system, tools, tokens))
        return Fixed(tokens, limit) if tokens >= limit else None

    def _new(self, thread_id: str, fmt: str, tools: Sequence[Any] | None) -> Thread:
        budget = self.config.budget
        manager = TokenBudgetContextManager(
            budget,
            counter=self.counter,
            reserve_tokens=_reserve(budget),
            summarizer=self.summarizer(),
            tools=[dict(t) for t in tools] if tools else None,
            recall=self.recall(),
        )
        window: Window = Window(manager, format=fmt, store=self.store, thread_id=thread_id, prompt_cache=False)
        return Thread(window=window)

    async def fit(
        self,
        thread_id: str,
        fmt: str,
        items: Sequence[Any],
        system: Any,
        tools: Sequence[Any] | None,
        *,
        weight: int = 0,
    ) -> tuple[Thread, FitResult]:
        """Manage one call on ``thread_id`` (hold `lock` around it): the thread's window, current with the store.

        ``weight``: the size in bytes of the request (what the thread's memory grows with, see `_evict`).
        """
        for attempt in range(MAX_ATTEMPTS):
            thread = self._threads.peek(thread_id)
            committed = await self.store.version(thread_id)
            if thread is not None and (self.store.versions.get(thread_id) != committed or thread.window.format != fmt):
                logger.debug(
                    "thread %s: written by another process (version %d); reading it back", thread_id, committed
                )
                thread = None
            if thread is None:
                self.store.forget(thread_id)
                fresh = self._new(thread_id, fmt, tools)
                old = self._threads.pop(thread_id)
                self._release(old)
                if old is not None:
                    fresh.items, fresh.lead, fresh.seq = old.items, old.lead, old.seq
                fresh.removed = None if committed else 0
                thread = fresh
            self._threads.put(thread_id, thread)
            self._weigh(thread, weight)
            self._evict(thread_id)
            try:
                result = await thread.window.afit(items, system=system, tools=tools)
            except (ConflictError, RecordNotFoundError):
                # another process committed first, or deleted the thread's data (no index record led to it any
                # more): the call is redone on what the store holds now (a deleted thread starts anew)
                self.conflicts += 1
                logger.info(
                    "thread %s: another process committed first (attempt %d); redoing the call", thread_id, attempt + 1
                )
                self._release(self._threads.pop(thread_id))
                self.store.forget(thread_id)
                await asyncio.sleep(0.002 * (attempt + 1))
                continue
            return thread, result
        raise ConflictError(f"thread {thread_id}: {MAX_ATTEMPTS} concurrent commits in a row; giving up on this call")

    async def close(self) -> None:
        try:
            await self.store.close()
        finally:
            if self._recall is not None:
                self._recall.index.close()
            if self._recall_dir is not None:
                shutil.rmtree(self._recall_dir, ignore_errors=True)
