"""Which conversation a request belongs to, without any change to the client.

In order: an explicit ``X-Windowkeeper-Thread`` header names the thread; else the list is recognized as the
continuation of a thread already seen. A session id the client already sends (see `session_of`) only narrows
where recognition looks: agents run sub-agents under one session id, and each is its own thread.

Recognition is by content. Each item's canonical key (`projection`) is chained into a digest per prefix; a thread
remembers the length and digest of the list it last received. A request continues thread T when T's last list is
a prefix of it (equal digest at T's length); among several, the longest wins. Two conversations that share a system
prompt (or a system prompt and a first message) part at their first different item, so they never share state; an
edited or unrelated list matches no thread and starts a new one. Keys ignore ``cache_control`` marks and string vs
one-text-block differences, which clients change from call to call.

Everything is scoped by a keyed hash of the client's credential: thread names live inside that scope, so a name
guessed or copied from another client addresses nothing of theirs.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from .._cache import LRUCache
from ..storage import ConflictError, Record, RecordNotFoundError, SessionStore
from .config import DEFAULT_INDEX_ENTRIES
from .projection import ItemCache

logger = logging.getLogger(__name__)

INDEX_NAMESPACE = "windowkeeper.serve.index"
THREAD_HEADER = "x-windowkeeper-thread"
CREDENTIAL_HEADERS = ("authorization", "x-api-key", "api-key", "x-goog-api-key")
SESSION_HEADERS = ("x-claude-code-session-id", "session_id", "session-id", "x-session-id", "conversation_id")
SESSION_METADATA = ("session_id", "conversation_id", "thread_id")
MAX_THREADS_PER_HEAD = 64
OPENER_PREFIX = "o."
"""Key prefix of an opener's record (its heads), apart from the heads' own keys (16 hex digits)."""
LEDGER_SESSION = "_ledger"
"""Where the records a process tracked are left for the next (`Recognizer.save`): no index session starts with
``_`` (they are a credential's hash or ``anonymous``, then a dot)."""
LEDGER_KEY = "keys"
JOURNAL_PREFIX = "j."
"""Key prefix of the ledger's journal records (`Recognizer._flush`): each holds one batch of what a running
process touched (``[session, key, version]``; a negative version: the record was deleted at that version)."""
JOURNAL_BATCH = 64
"""Records touched since the last journal write that make the next one start at once (`Recognizer._flusher`)."""
JOURNAL_SECONDS = 1.0
"""Longest a touched record waits for its journal write: what a killed process leaves outside the bound is at most
what it touched in this last stretch (`windowkeeper_index_unsaved`)."""
JOURNAL_FOLD = 64
"""Journal records that make the process that wrote the last one fold them all into the ledger record (`_fold`)."""
LEDGER_CHUNK = 8192
"""Entries the ledger record keeps per JSON text, and that a fold handles between two turns of the event loop."""
LINK_NAMESPACE = "windowkeeper.serve.links"
"""Per thread (session: its store id, `internal_id`), one record per index head that lists the thread (key: the
index session and the head, `link_key`). The index maps heads to threads; these map a thread back to its heads, so
that when the recognizer evicts a head it can tell, with one read, whether any other head still leads to the thread
(`Recognizer._unlinked`). They are thread data: deleted with the thread."""
MAX_NAME = 200
_SCOPE_KEY = b"windowkeeper.serve.scope.v1"


def scope_of(headers: Mapping[str, str]) -> str:
    """A keyed hash of the client's credential (``anonymous`` without one): the namespace of its threads."""
    for name in CREDENTIAL_HEADERS:
        value = headers.get(name)
        if value:
            return hashlib.blake2b(value.encode(), key=_SCOPE_KEY, digest_size=8).hexdigest()
    return "anonymous"


def explicit_thread(headers: Mapping[str, str]) -> str | None:
    """The ``X-Windowkeeper-Thread`` name, or None; a name that no store can hold is refused with a reason."""
    value = headers.get(THREAD_HEADER)
    if value is None:
        return None
    value = value.strip()
    if not value or len(value) > MAX_NAME or not value.isprintable():
        raise ValueError(
            f"{THREAD_HEADER} must be 1-{MAX_NAME} printable characters, got {value[:MAX_NAME]!r}; "
            "send the value of an earlier x-windowkeeper-thread response header, or any name of your own"
        )
    return value


def session_of(headers: Mapping[str, str], body: Mapping[str, Any]) -> str | None:
    """The session id a client already sends, if any: a session header, OpenAI ``prompt_cache_key`` or a
    ``metadata`` session/conversation/thread id, Anthropic ``metadata.user_id`` (which agents fill per session)."""
    for name in SESSION_HEADERS:
        value = headers.get(name)
        if value:
            return f"h:{value}"
    key = body.get("prompt_cache_key")
    if isinstance(key, str) and key:
        return f"k:{key}"
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        for name in SESSION_METADATA:
            value = metadata.get(name)
            if isinstance(value, str) and value:
                return f"m:{value}"
        user = metadata.get("user_id")
        if isinstance(user, str) and user:
            return f"u:{user}"
    return None


def _short(value: str) -> str:
    return hashlib.blake2b(value.encode(), digest_size=8).hexdigest()


def internal_id(scope: str, name: str) -> str:
    """The store's id of thread ``name`` in ``scope``."""
    return f"wk-{scope}-{name}"


def scope_of_session(index_session: str) -> str:
    """The scope an index session belongs to (`Recognizer.index_session`: the scope, a dot, the session's hash)."""
    return index_session.split(".", 1)[0]


def is_head_key(index_session: str, key: str) -> bool:
    """Whether an index record is a head's (its threads), not an opener's (its heads) or the ledger."""
    return index_session != LEDGER_SESSION and not key.startswith(OPENER_PREFIX)


def link_key(index_session: str, head: str) -> str:
    """The key of a thread's link to ``head`` of ``index_session`` (`LINK_NAMESPACE`)."""
    return f"{index_session}/{head}"


Orphaned = Callable[[str, str], Awaitable[None]]
"""Called with a thread's store id and name when the last index record that led to it was evicted."""


@dataclass
class Match:
    """How a request was placed: the thread's name (sent back in ``x-windowkeeper-thread``) and the index entry."""

    name: str
    how: str
    """``header``, ``continued`` (recognized) or ``new``."""
    index_session: str | None = None
    head: str | None = None
    version: int = 0
    """The index entry's version as read (-1: not read, the thread was known locally)."""
    threads: dict[str, list[Any]] | None = None
    opener: str | None = None
    """The key of the list's first item after its system text (`Gateway._opened`)."""
    lead: int = 0
    """How many leading items of the list are its system text (Chat Completions system/developer messages)."""


class Recognizer:
    """The store-backed index of threads by head (see the module docstring), bounded by ``max_entries``.

    Each head is one store record (its threads, at most `MAX_THREADS_PER_HEAD`), and so is each opener (the heads
    a first item was seen under, `moved`). A server that meets new conversations for weeks would add records for
    ever, so the process keeps the index entries it reads or writes in a recency order and deletes the least
    recently used past ``max_entries`` (`windowkeeper_index_evictions_total`); a conversation whose entry went
    starts a new thread when it returns. An entry another process wrote since this one last saw it is that
    process's to evict (its version differs), so a thread served elsewhere is not dropped here. The order outlives
    the process: at shutdown it is left in the store's ledger (`save`) and the next process starts from it. While
    the process runs, what it touches (records read or written, records it deleted) goes to the ledger's journal
    in batches, off the request path (`_flusher`: within `JOURNAL_SECONDS`, at once past `JOURNAL_BATCH`), so a
    process that is killed leaves outside the bound only what it touched since its last batch; the journal is
    folded into the ledger record past `JOURNAL_FOLD` batches, the same merge as at shutdown.

    A thread no index record leads to any more cannot be recognized again, so its stored data is garbage (but for
    a client that names it in ``X-Windowkeeper-Thread``): evicting the last head that lists it (each thread keeps
    its heads in `LINK_NAMESPACE`) calls ``orphaned``, which deletes the thread's data unless it is in use here.
    """

    def __init__(
        self, store: SessionStore, max_entries: int = DEFAULT_INDEX_ENTRIES, orphaned: Orphaned | None = None
    ) -> None:
        self.store = store
        self.max_entries = max_entries
        self.orphaned = orphaned
        # (thread, head) links this process wrote or found written: each is written once per process
        self._linked: LRUCache[tuple[str, str], bool] = LRUCache(max_entries)
        # (index session, record key) -> the record's version as this process last read or wrote it; bounded
        # by `_seen`, which deletes from the store what it drops
        self._entries: LRUCache[tuple[str, str], int] = LRUCache(sys.maxsize)
        self.evictions = 0
        self._loaded = False
        self._dirty: dict[tuple[str, str], int] = {}
        """What this process touched since its last journal batch, oldest first: a record read or written at a
        version, or deleted at one (the version negated). A killed process leaves these outside the bound."""
        self._writing: dict[tuple[str, str], int] = {}
        """The batch being written (`_flush`): not in the store yet either."""
        self._journal = 0
        """Journal batches in the store as far as this process knows (read at load, written since)."""
        self._process = uuid.uuid4().hex[:12]
        self._batches = 0
        self._flushing: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._failing = False
        self._closed = False

    async def _ledger(self) -> tuple[Record | None, list[Record], dict[tuple[str, str], int]]:
        """The ledger record, the journal's batches (in the order written) and what they say together: each
        record's version, least recently used first."""
        main: Record | None = None
        journal: list[Record] = []
        for record in await self.store.list_records(INDEX_NAMESPACE, LEDGER_SESSION):
            if record.key == LEDGER_KEY:
                main = record
            elif record.key.startswith(JOURNAL_PREFIX):
                journal.append(record)
        merged: dict[tuple[str, str], int] = {}
        if main is not None:
            for chunk in _chunks_of(main.doc):
                _apply(merged, chunk)
                await asyncio.sleep(0)  # a chunk at a time: calls in flight go on between them
        for record in journal:
            for chunk in _chunks_of(record.doc):
                _apply(merged, chunk)
        return main, journal, merged

    async def _load(self) -> None:
        """Take in the records earlier processes tracked (`save`, and the journal a process that was killed left),
        as older than any this process uses, so that the bound holds across restarts: a record no process reads
        again is still evicted in its turn."""
        self._loaded = True
        _, journal, merged = await self._ledger()
        self._journal = len(journal)
        if not merged:
            return
        mine = [(entry, self._entries[entry]) for entry in self._entries]
        self._entries.drop()
        for entry, version in merged.items():
            self._entries.put(entry, version)
        for entry, version in mine:
            self._entries.put(entry, version)

    async def save(self) -> None:
        """Leave the records this process tracks to the next one (at shutdown): merged into the store's ledger
        with the records other processes left there (the ledger record, then the journal), this process's as the
        most recent, within the bound."""
        self._closed = True
        if self._wake is not None:
            self._wake.set()
        if self._flushing is not None:
            with contextlib.suppress(Exception):
                await self._flushing  # a batch being written: let it land
        if not self._loaded:
            await self._load()
        if self._dirty:
            await self._flush()
        if not await self._fold():
            logger.warning("the recognition index's ledger kept changing under 8 attempts; not saved")

    def _touch(self, entry: tuple[str, str], version: int) -> None:
        """Note ``entry`` for the next journal batch (a negative version: deleted), and see that one is written."""
        dirty = self._dirty
        dirty.pop(entry, None)
        dirty[entry] = version
        if self._closed:
            return
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.get_running_loop().create_task(self._flusher())
        elif len(dirty) >= JOURNAL_BATCH and self._wake is not None:
            self._wake.set()

    async def _flusher(self) -> None:
        """Write what was touched to the journal, within `JOURNAL_SECONDS` of the first touch or at once past
        `JOURNAL_BATCH`, until nothing is left; fold the journal into the ledger record past `JOURNAL_FOLD`
        batches. A task of its own: no request waits for it."""
        while self._dirty and not self._closed:
            if len(self._dirty) < JOURNAL_BATCH:
                self._wake = wake = asyncio.Event()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), JOURNAL_SECONDS)
                self._wake = None
                if self._closed:
                    return
            try:
                await self._flush()
                if self._journal >= JOURNAL_FOLD and not await self._fold():
                    logger.warning("the recognition index's journal kept changing under 8 attempts; not folded")
            except Exception:
                if not self._failing:
                    logger.warning(
                        "could not write the recognition index's journal; %d records would be left outside the "
                        "bound if this process were killed now; trying again",
                        len(self._dirty),
                        exc_info=True,
                    )
                self._failing = True
                await asyncio.sleep(JOURNAL_SECONDS)
            else:
                self._failing = False

    async def _flush(self) -> None:
        """Write what was touched since the last batch as one journal record (its size: what was touched)."""
        batch, self._dirty = self._dirty, {}
        if not batch:
            return
        self._writing = batch
        self._batches += 1
        key = f"{JOURNAL_PREFIX}{self._process}.{self._batches:09d}"
        try:
            await self.store.add_record(
                INDEX_NAMESPACE, LEDGER_SESSION, key, {"keys": [[s, k, v] for (s, k), v in batch.items()]}
            )
        except BaseException:
            for entry, version in self._dirty.items():  # touched while this write failed: newer
                batch.pop(entry, None)
                batch[entry] = version
            self._dirty = batch
            raise
        finally:
            self._writing = {}
        self._journal += 1

    async def _fold(self) -> bool:
        """Fold the journal into the ledger record: the ledger, then the journal's batches in the order written,
        then this process's records as the most recent, past the bound evicted; the batches folded are deleted.
        Reads and writes the whole ledger (up to ``max_entries`` records): once per `JOURNAL_FOLD` batches, off
        the request path, and at shutdown. False when the ledger kept changing under 8 attempts."""
        for _ in range(8):
            main, journal, merged = await self._ledger()
            # this process's records, as they are now; one touched or evicted while the fold runs goes in the next
            # batch, which the next process applies after this ledger record
            tracked = self._entries
            order = list(tracked)
            for start in range(0, len(order), LEDGER_CHUNK):
                for entry in order[start : start + LEDGER_CHUNK]:
                    version = tracked.peek(entry)
                    if version is not None:
                        merged.pop(entry, None)
                        merged[entry] = version
                await asyncio.sleep(0)
            entries = list(merged.items())
            over, entries = entries[: -self.max_entries], entries[-self.max_entries :]
            for (session, key), version in over:  # past the bound: evicted now, not left to the next process
                self._entries.pop((session, key))
                await self._delete_if_unchanged(session, key, version)
            packed = []
            for start in range(0, len(entries), LEDGER_CHUNK):
                chunk = [[s, k, v] for (s, k), v in entries[start : start + LEDGER_CHUNK]]
                packed.append(orjson.dumps(chunk).decode())
                await asyncio.sleep(0)
            doc = {"packed": packed}
            try:
                if main is None:
                    await self.store.add_record(INDEX_NAMESPACE, LEDGER_SESSION, LEDGER_KEY, doc)
                else:
                    await self.store.update_record(
                        INDEX_NAMESPACE, LEDGER_SESSION, LEDGER_KEY, doc, expected_version=main.version
                    )
            except ConflictError:
                continue
            async with self.store.batch():
                for record in journal:
                    await self.store.delete_record(INDEX_NAMESPACE, LEDGER_SESSION, record.key)
            self._journal = max(0, self._journal - len(journal))
            return True
        return False

    def series(self) -> list[tuple[str, str, str, int]]:
        """The index's size and evictions, for ``GET /metrics`` (`Metrics.render`)."""
        return [
            (
                "windowkeeper_index_entries",
                "gauge",
                "Recognition index records this process tracks (bounded by max_index_entries).",
                len(self._entries),
            ),
            (
                "windowkeeper_index_evictions_total",
                "counter",
                "Recognition index records deleted as least recently used.",
                self.evictions,
            ),
            (
                "windowkeeper_index_unsaved",
                "gauge",
                "Recognition index records touched since the last journal batch landed (a kill now leaves them "
                "outside the bound).",
                sum(1 for version in self._dirty.values() if version > 0)
                + sum(1 for entry, version in self._writing.items() if version > 0 and entry not in self._dirty),
            ),
        ]

    async def _seen(self, index_session: str, key: str, version: int) -> None:
        """Record ``key`` as just used at ``version``, and evict past the bound."""
        if not self._loaded:
            await self._load()
        self._entries.put((index_session, key), version)
        self._touch((index_session, key), version)
        if len(self._entries) <= self.max_entries:
            return
        for (session, old), known in self._entries.evict_while(lambda *_: len(self._entries) > self.max_entries):
            await self._delete_if_unchanged(session, old, known)

    async def _delete_if_unchanged(self, session: str, key: str, version: int) -> None:
        """Delete an evicted record unless another process wrote it since (then it is that process's to evict)."""
        record = await self.store.get_record(INDEX_NAMESPACE, session, key)
        if record is not None and record.version == version:
            await self.store.delete_record(INDEX_NAMESPACE, session, key)
            self.evictions += 1
            self._touch((session, key), -version)
            if is_head_key(session, key):
                for name in record.doc.get("threads", {}):
                    await self._unlinked(session, key, name)

    async def _link(self, index_session: str, head: str, name: str, *, new_head: bool = False) -> None:
        """Record that ``head`` lists thread ``name``: once per process, and again when the head's record was just
        added (an earlier one was evicted, by another process too, which deleted its links)."""
        thread, key = internal_id(scope_of_session(index_session), name), link_key(index_session, head)
        if not new_head and self._linked.peek((thread, key)) is not None:
            return
        with contextlib.suppress(ConflictError):  # written earlier (by this process before a restart, or another)
            await self.store.add_record(LINK_NAMESPACE, thread, key, {})
        self._linked.put((thread, key), True)

    async def _unlinked(self, index_session: str, head: str, name: str) -> None:
        """``head`` no longer lists thread ``name`` (evicted, or the thread trimmed out of it): when no other head
        does, the thread is orphaned. A thread never linked (served before links were kept) is left to
        ``windowkeeper store prune``, which looks at the whole index."""
        thread, key = internal_id(scope_of_session(index_session), name), link_key(index_session, head)
        self._linked.pop((thread, key))
        if not await self.store.delete_record(LINK_NAMESPACE, thread, key):
            return
        if await self.linked(thread):
            return
        if self.orphaned is not None:
            await self.orphaned(thread, name)

    async def linked(self, thread: str) -> bool:
        """Whether any index head still lists ``thread`` (its store id)."""
        return bool(await self.store.list_records(LINK_NAMESPACE, thread))

    @staticmethod
    def head_of(system_key: str, first_key: str) -> str:
        return _short(f"{system_key}\x1e{first_key}")

    @staticmethod
    def index_session(scope: str, session: str | None) -> str:
        """Where the index entries of ``scope`` (and the client's ``session`` id, if any) live."""
        return f"{scope}.{_short(session) if session else '-'}"

    async def candidates(self, index_session: str, head: str) -> Match:
        record = await self.store.get_record(INDEX_NAMESPACE, index_session, head)
        threads = dict(record.doc.get("threads", {})) if record is not None else {}
        version = record.version if record is not None else 0
        if record is not None:
            await self._seen(index_session, head, version)
        return Match(name="", how="new", index_session=index_session, head=head, version=version, threads=threads)

    @staticmethod
    def choose(match: Match, items: ItemCache) -> Match:
        """``match`` with the thread the list continues (longest known prefix), or a new name."""
        best: tuple[int, float, str] | None = None
        count = len(items)
        for name, (length, digest, seen, *_) in (match.threads or {}).items():
            if length <= count and items.digest(length) == digest:
                rank = (length, seen, name)
                if best is None or rank > best:
                    best = rank
        if best is not None:
            match.name, match.how = best[2], "continued"
        else:
            match.name, match.how = Recognizer.new_name(), "new"
        return match

    async def moved(self, match: Match, items: ItemCache, lead: int, minimum: int) -> str | None:
        """The thread whose list this one continues after its system text, found in the store under another head
        with the same opener (the first item after the system text): the conversation's system text changed.

        For a process that does not know the thread's list (restarted, or another process served it), where
        `Gateway._opened` cannot look. A thread qualifies when its list holds at least ``minimum`` items after its
        system text and this list's items after its ``lead`` system items begin with exactly those (their digest,
        `ItemCache.tail_digest`, kept in the thread's entry); the longest such list wins.
        """
        if match.index_session is None or match.opener is None:
            return None
        key = OPENER_PREFIX + match.opener
        record = await self.store.get_record(INDEX_NAMESPACE, match.index_session, key)
        if record is None:
            return None
        await self._seen(match.index_session, key, record.version)
        heads = [h for h in record.doc.get("heads", {}) if h != match.head]
        # a thread served under several of these heads is judged by its latest list only: a list that continues
        # an older one (from before the thread went on) is a branch of it, not its next turn
        latest = {name: entry for name, entry in (match.threads or {}).items() if len(entry) >= 5 and entry[4]}
        for found in await self.store.get_records(INDEX_NAMESPACE, match.index_session, heads):
            for name, entry in found.doc.get("threads", {}).items():
                if len(entry) >= 5 and entry[4] is not None and (name not in latest or entry[2] > latest[name][2]):
                    latest[name] = entry  # entries written before tails were kept have 3 fields
        best: tuple[int, float, str] | None = None
        available = len(items) - lead
        for name, (length, _, seen, its_lead, tail, *_) in latest.items():
            size = length - its_lead
            if size < minimum or size > available or (best is not None and (size, seen, name) <= best):
                continue
            if items.tail_digest(lead, lead + size) == tail:
                best = (size, seen, name)
        return best[2] if best is not None else None

    @staticmethod
    def new_name() -> str:
        """A name no other thread has (random: names are sent to clients, so they must not be guessable either)."""
        return f"t{uuid.uuid4().hex[:20]}"

    async def remember(self, match: Match, items: ItemCache) -> None:
        """Record that thread ``match.name`` last received ``items`` (a compare-and-set, merged on conflict): its
        list's length and digest (`choose`), and the count and digest of its items after the system text (`moved`).
        A new head is also listed under its opener, for `moved`."""
        if match.index_session is None or match.head is None:
            return
        count = len(items)
        entry = [count, items.digest(count), time.time(), match.lead, items.tail_digest(match.lead, count)]
        threads, version = dict(match.threads or {}), match.version
        if version < 0:  # placed without reading the entry (`Gateway._hinted`): read it now
            record = await self.store.get_record(INDEX_NAMESPACE, match.index_session, match.head)
            threads = dict(record.doc.get("threads", {})) if record is not None else {}
            version = record.version if record is not None else 0
        for _ in range(8):
            threads[match.name] = entry
            trimmed = _trim(threads, lambda value: value[2])
            try:
                if version == 0:
                    record = await self.store.add_record(
                        INDEX_NAMESPACE, match.index_session, match.head, {"threads": threads}
                    )
                    await self._list_under_opener(match)
                else:
                    record = await self.store.update_record(
                        INDEX_NAMESPACE, match.index_session, match.head, {"threads": threads}, expected_version=version
                    )
                match.threads, match.version = threads, record.version
                await self._link(match.index_session, match.head, match.name, new_head=version == 0)
                for name in trimmed:
                    await self._unlinked(match.index_session, match.head, name)
                await self._seen(match.index_session, match.head, record.version)
                return
            except (ConflictError, RecordNotFoundError):
                # another writer changed the record, or it was evicted under this call: read it again
                record = await self.store.get_record(INDEX_NAMESPACE, match.index_session, match.head)
                threads = dict(record.doc.get("threads", {})) if record is not None else {}
                version = record.version if record is not None else 0
        logger.warning("thread %s: the recognition index kept changing under 8 attempts; not recorded", match.name)

    async def _list_under_opener(self, match: Match) -> None:
        """Add ``match.head`` to its opener's record (the heads a first item was seen under, for `moved`)."""
        if match.index_session is None or match.opener is None or match.head is None:
            return
        key = OPENER_PREFIX + match.opener
        for _ in range(8):
            record = await self.store.get_record(INDEX_NAMESPACE, match.index_session, key)
            heads = dict(record.doc.get("heads", {})) if record is not None else {}
            heads[match.head] = time.time()
            _trim(heads, lambda value: value)
            try:
                if record is None:
                    written = await self.store.add_record(INDEX_NAMESPACE, match.index_session, key, {"heads": heads})
                else:
                    written = await self.store.update_record(
                        INDEX_NAMESPACE, match.index_session, key, {"heads": heads}, expected_version=record.version
                    )
            except ConflictError:
                continue
            await self._seen(match.index_session, key, written.version)
            return
        logger.warning("thread %s: its opener's index record kept changing under 8 attempts", match.name)


def _chunks_of(doc: Mapping[str, Any]) -> Iterator[list[list[Any]]]:
    """A ledger or journal record's ``[session, key, version]`` lists, a chunk at a time. The ledger record keeps
    them as JSON texts of `LEDGER_CHUNK` entries (``packed``): a list of 100,000 small lists is a document whose
    nesting the store checks item by item (0.5 s each way, holding the event loop), where a few strings are
    checked at once; a journal batch, and a ledger written before, hold the list itself (``keys``)."""
    packed = doc.get("packed")
    if isinstance(packed, list):
        for text in packed:
            yield orjson.loads(text)
    else:
        yield list(doc.get("keys", []))


def _keys_of(doc: Mapping[str, Any]) -> list[list[Any]]:
    """A ledger or journal record's ``[session, key, version]`` lists, whole (`_chunks_of`)."""
    return [entry for chunk in _chunks_of(doc) for entry in chunk]


def _apply(merged: dict[tuple[str, str], int], keys: Iterable[list[Any]]) -> None:
    """Apply one ledger or journal batch's ``[session, key, version]`` list to ``merged`` (least recently used
    first): a record touched moves to the end at its version; one deleted (negative version) leaves, unless the
    record was written again since (its entry then has another version)."""
    for session, key, version in keys:
        entry = (session, key)
        if version < 0:
            if merged.get(entry) == -version:
                del merged[entry]
        else:
            merged.pop(entry, None)
            merged[entry] = version


def _trim(entries: dict[str, Any], seen: Callable[[Any], float]) -> list[str]:
    """Keep the `MAX_THREADS_PER_HEAD` most recently seen of one record's entries; return the names dropped."""
    dropped: list[str] = []
    if len(entries) > MAX_THREADS_PER_HEAD:
        for name, _ in sorted(entries.items(), key=lambda kv: seen(kv[1]))[: len(entries) - MAX_THREADS_PER_HEAD]:
            del entries[name]
            dropped.append(name)
    return dropped
