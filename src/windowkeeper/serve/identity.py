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

import contextlib
import hashlib
import logging
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._cache import LRUCache
from ..storage import ConflictError, RecordNotFoundError, SessionStore
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
    the process: at shutdown it is left in the store's ledger (`save`) and the next process starts from it.

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

    async def _load(self) -> None:
        """Take in the records earlier processes tracked (`save`), as older than any this process uses, so that
        the bound holds across restarts: a record no process reads again is still evicted in its turn."""
        self._loaded = True
        record = await self.store.get_record(INDEX_NAMESPACE, LEDGER_SESSION, LEDGER_KEY)
        if record is None:
            return
        mine = [(entry, self._entries[entry]) for entry in self._entries]
        self._entries.drop()
        for session, key, version in record.doc.get("keys", []):
            self._entries.put((session, key), version)
        for entry, version in mine:
            self._entries.put(entry, version)

    async def save(self) -> None:
        """Leave the records this process tracks to the next one (at shutdown): merged into the store's ledger
        with the records other processes left there, this process's as the most recent, within the bound."""
        if not self._loaded:
            await self._load()
        for _ in range(8):
            record = await self.store.get_record(INDEX_NAMESPACE, LEDGER_SESSION, LEDGER_KEY)
            merged: dict[tuple[str, str], int] = {}
            if record is not None:
                for session, key, version in record.doc.get("keys", []):
                    merged[(session, key)] = version
            for entry in self._entries:
                merged.pop(entry, None)
                merged[entry] = self._entries[entry]
            entries = list(merged.items())
            over, entries = entries[: -self.max_entries], entries[-self.max_entries :]
            for (session, key), version in over:  # past the bound: evicted now, not left to the next process
                await self._delete_if_unchanged(session, key, version)
            keys = [[session, key, version] for (session, key), version in entries]
            try:
                if record is None:
                    await self.store.add_record(INDEX_NAMESPACE, LEDGER_SESSION, LEDGER_KEY, {"keys": keys})
                else:
                    await self.store.update_record(
                        INDEX_NAMESPACE, LEDGER_SESSION, LEDGER_KEY, {"keys": keys}, expected_version=record.version
                    )
                return
            except ConflictError:
                continue
        logger.warning("the recognition index's ledger kept changing under 8 attempts; not saved")

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
        ]

    async def _seen(self, index_session: str, key: str, version: int) -> None:
        """Record ``key`` as just used at ``version``, and evict past the bound."""
        if not self._loaded:
            await self._load()
        self._entries.put((index_session, key), version)
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


def _trim(entries: dict[str, Any], seen: Callable[[Any], float]) -> list[str]:
    """Keep the `MAX_THREADS_PER_HEAD` most recently seen of one record's entries; return the names dropped."""
    dropped: list[str] = []
    if len(entries) > MAX_THREADS_PER_HEAD:
        for name, _ in sorted(entries.items(), key=lambda kv: seen(kv[1]))[: len(entries) - MAX_THREADS_PER_HEAD]:
            del entries[name]
            dropped.append(name)
    return dropped
