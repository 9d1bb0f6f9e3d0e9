"""What a `Window` remembers per thread between calls, and how it is kept in a store across process restarts.

Per thread the window keeps the managed view it produced last, the running summary and scratchpad, a digest of the
caller's list it was computed from (so the next call can tell "the same list plus new messages" from "a different
conversation"), and the originals of the bodies the manager replaced with a pointer still in that view.

Originals are held in memory only while their pointer is in the view, so a long thread does not grow the window
without bound. With a store every original is also written as a record, so `Window.restore` of a pointer that has
left the view (or of one from before a restart) reads it back from there; without a store it asks the manager,
keeps the newest of them up to a size bound, as the manager's own cache does.

With a store, each call writes what is new and nothing else: the caller's new messages go to the thread's log (the
full history, never trimmed), the messages the view holds for the first time (the new ones, and the pointers and
summary the manager made) go into one view record, each newly offloaded original into a record of its own, and the
thread's state snapshot is replaced by a small head: the summary, the digest and, for each message of the view,
the view record, its version and the position the message is stored at. Messages that stay in the view are never
written again. A view record none of the head's messages points to any more is kept as a spare (listed in the
head) and overwritten by a later call that needs one, through the store's version check, so a thread holds about
as many view records as its view spans and no call spends a write on deleting one.

The head is written with a compare-and-set against the version this memory was loaded or last saved at: a
versioned record of its own (`HEAD_NAMESPACE`), or the store's state snapshot when the store's ``put_state`` is
already one (``SessionStore.commits_state``, the gateway's commit store). Two windows or processes serving one
thread therefore cannot both commit from the same head: the second save raises `StaleHeadError` and writes no
head, and its caller re-reads the thread and redoes the call on what the store holds now (`Window` does), so no
call's state is lost or built from a mix of two. A call whose head write fails leaves nothing the committed head
refers to. A reader checks each view record's version against the head's and reads the head again when a newer
write reused a record meanwhile. A new process that opens the same store continues the thread where the last one
stopped.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import itertools
import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._cache import shared_prefix
from ..context.pointers import DEFAULT_OFFLOAD_CACHE_BYTES, approx_bytes, is_offloaded
from ..errors import StorageError
from ..llm.formats._source import WriteMemo
from ..messages import Message
from ..storage import ConflictError, SessionStore
from ..storage.base import RecordNotFoundError
from ..tokens import RunningCount

logger = logging.getLogger(__name__)

STATE_VERSION = 3
"""The head written now: the view as runs of references into view records, ``[key, version, start, count]``
(version 2 had one ``[key, version, position]`` per message, version 1 the whole view; both are read)."""
READABLE_VERSIONS = (1, 2, 3)
OFFLOAD_NAMESPACE = "windowkeeper.window.offloaded"
VIEW_NAMESPACE = "windowkeeper.window.view"
HEAD_NAMESPACE = "windowkeeper.window.head"
"""The head as one versioned record per thread (key `HEAD_KEY`), written only at the version last read. Heads of
threads saved before it are state snapshots; they are read from there once and moved here by the next save."""
HEAD_KEY = "head"
"""Records of the messages calls put into the view for the first time (``{"json": [message JSON, ...]}``)."""
LOAD_ATTEMPTS = 4
"""Head reads a load makes when a newer write deleted a view record between reading the head and the record."""


class StaleHeadError(ConflictError):
    """A save lost the head's compare-and-set: another window or process committed the thread since this memory
    was loaded. Nothing of the call is referred to by the committed head; re-read the thread and redo the call."""


def chain_hasher(messages: Iterable[Message], hasher: Any = None) -> Any:
    """A running hash of the messages' ids and fingerprints in order (``hasher`` continued when given): a thread
    carries it from call to call and feeds it only the new messages."""
    h = hasher if hasher is not None else hashlib.blake2b(digest_size=16)
    for message in messages:
        h.update(f"{message.message_id}\x1f{message.fingerprint()}\x1e".encode())
    return h


def chain_digest(messages: Iterable[Message]) -> str:
    """A digest of the messages' ids and fingerprints in order: equal digests, equal lists (as far as a model sees)."""
    return str(chain_hasher(messages).hexdigest())


def restore_keys(message: Message) -> list[str]:
    """The keys an offloaded original is found under: each tool call id it answers, else its pointer text; and
    its message id (the id a reply's pointer shows)."""
    results = message.tool_result_blocks()
    if results:
        keys = [f"call:{r.call_id}" for r in results]
    else:
        digest = hashlib.blake2b(message.text().encode("utf-8"), digest_size=16).hexdigest()
        keys = [f"text:{message.role}:{digest}"]
    keys.append(f"id:{message.message_id}")
    return keys


def ref_keys(ref: str) -> list[str]:
    """The keys a pointer id (what a pointer shows: a tool call id or a message id) is looked up under."""
    return [f"call:{ref}", f"id:{ref}"]


def view_restore_keys(view: Iterable[Message]) -> set[str]:
    """The restore keys of every pointer in ``view``: the originals a window keeps in memory."""
    return {key for message in view if is_offloaded(message) for key in restore_keys(message)}


@dataclass
class ThreadMemory:
    """One thread's remembered state (see the module docstring)."""

    source_count: int = 0
    source_digest: str = ""
    hasher: Any = None
    """The running `chain_hasher` of the ``source_count`` messages (in memory only; rebuilt once after a load)."""
    developer: bool = False
    """Whether the caller's system text comes as a Chat Completions ``developer`` message (seen once, kept)."""
    view: list[Message] = field(default_factory=list)
    summary: str | None = None
    scratchpad: str | None = None
    sent: tuple[str, ...] = ()
    sent_system: str | None = None
    recall_served: str | None = None
    originals: dict[str, Message] = field(default_factory=dict)
    original_bytes: dict[str, int] = field(default_factory=dict)
    """Estimated size of each kept original (`approx_bytes`), computed once, for the bound without a store."""
    saved_keys: set[str] = field(default_factory=set)
    rewritten: dict[tuple[str, str], Message] = field(default_factory=dict)
    """Pointers as sent to a request without the recall tool (see `integrations._recall`), made once each."""
    read_cache: Any = None
    """The `ReadCache` of the caller's list as last read (in memory only: a new process reads the list once)."""
    last_prompt: Any = None
    """The `AssembledPrompt` of the thread's last call (kept to calibrate counters from the reply's usage)."""
    needs_reseed: bool = False
    """Loaded from the store and not yet handed to this process's manager."""
    placed: dict[int, tuple[Message, str, int]] = field(default_factory=dict)
    """Where each message of the view is stored: ``id(message) -> (message, view record key, position)``, the
    message held so the id stays its own. Messages are kept by identity (the manager hands back the same objects
    for what it did not change), so a message is written once, when it enters the view."""
    view_records: dict[str, int] = field(default_factory=dict)
    """The view records the committed head refers to, by key, with the version each was written at."""
    spare: dict[str, int] = field(default_factory=dict)
    """View records nothing refers to any more (key -> version), overwritten by the next call that needs one."""
    write_memo: WriteMemo = field(default_factory=WriteMemo)
    """What the last write of the view produced per message (in memory only), so the next writes only the new."""
    pointers: list[Message] = field(default_factory=list)
    """The pointers of ``view``, in order (set with the view after every call and on a load)."""
    exported: list[Message] = field(default_factory=list)
    """The pointers (objects, in view order) whose originals the manager's last export of this thread gave, all
    of them, in this process (empty when one was missing): while the view's pointers are these, the originals are
    kept already and a base export without recall gives nothing new."""
    view_head: list[Message] = field(default_factory=list)
    """The head (the ``system=`` prompt's message) ``view`` was filtered out of the context with (in memory only;
    empty after a load): a context that is this head, then ``view``, then more filters only the more."""
    rewrite_from: list[Message] = field(default_factory=list)
    rewrite_sent: list[Message] = field(default_factory=list)
    """The last call's context as the manager gave it and as sent with its pointers rewritten for a request
    without the recall tool (in memory only; empty when that call rewrote nothing): a context that starts with
    the same objects rewrites only what follows them, the part before being what was sent then."""
    notes_from: list[Message] = field(default_factory=list)
    notes_at: list[int] = field(default_factory=list)
    """The last prompt's messages and where its recall notes are (in memory only): a prompt that starts with the
    same messages looks for notes only among what follows them."""
    laid: bool = False
    """Whether the last call's context, as the manager gave it, was ``view_head`` then ``view`` (the same objects,
    nothing else; in memory only): a call given that head, that view and new messages, which the manager hands
    back as they are, has a context that is the last one and the new messages."""
    carry: Any = None
    """What the last call, finished, worked out over its whole prompt (`window.PromptCarry`: the prompt, its
    system lead and anchors, where its recall notes are; in memory only), for a call whose prompt only grew."""
    pointer_keys: dict[int, tuple[Message, list[str]]] = field(default_factory=dict)
    """`restore_keys` of each pointer of the view by identity (a pointer stays in the view for many calls)."""
    running: RunningCount = field(default_factory=RunningCount)
    """The running count of the prompt's recent zone (in memory only), so counting it costs what is new."""
    saved_view: list[Message] = field(default_factory=list)
    """The view as the last committed head listed it, with its ``saved_runs`` (in memory only): a view that
    starts with the same objects reuses their runs, and looks only at its new messages for what to store."""
    saved_runs: list[list[Any]] = field(default_factory=list)
    saved_ends: list[int] = field(default_factory=list)
    """Where each of ``saved_runs`` ends in the view (its counts summed), to cut them at a prefix."""
    head_version: int = 0
    """The version of the head record this memory was loaded from or last saved (0: none yet), which the next
    save's compare-and-set expects."""
    started_over: bool = False
    """Made empty in place of a stored head that could not be read whole (nothing to hand a manager)."""

    def keys_of(self, pointer: Message) -> list[str]:
        """`restore_keys` of ``pointer``, worked out once while it stays in the view."""
        entry = self.pointer_keys.get(id(pointer))
        if entry is None or entry[0] is not pointer:
            entry = self.pointer_keys[id(pointer)] = (pointer, restore_keys(pointer))
        return entry[1]

    def live_keys(self) -> set[str]:
        """The restore keys of the view's pointers (`view_restore_keys`); the memo keeps only these pointers."""
        live: set[str] = set()
        for message in self.pointers:
            live.update(self.keys_of(message))
        if len(self.pointer_keys) > len(self.pointers):
            current = {id(m) for m in self.pointers}
            self.pointer_keys = {k: v for k, v in self.pointer_keys.items() if k in current}
        return live

    def prune_originals(self, *, stored: bool) -> None:
        """Bound the originals kept in memory: those of pointers in the view always; with ``stored``, the others
        only until written (the store serves them from then on); without a store, the newest others up to
        `DEFAULT_OFFLOAD_CACHE_BYTES` (the window is then their only keeper, like the manager's own cache)."""
        live = self.live_keys()
        if stored:
            self.originals = {k: v for k, v in self.originals.items() if k in live or k not in self.saved_keys}
            self.saved_keys &= live
            self.original_bytes = {k: b for k, b in self.original_bytes.items() if k in self.originals}
            return
        room = DEFAULT_OFFLOAD_CACHE_BYTES
        sizes = self.original_bytes
        # the common case, in C: everything kept fits, so nothing is dropped and nothing is walked
        if len(sizes) == len(self.originals) and sum(sizes.values()) - sum(sizes.get(k, 0) for k in live) <= room:
            return
        kept: list[str] = []
        for key in reversed(self.originals):
            if key not in live:
                size = self.original_bytes.get(key) or approx_bytes(self.originals[key])
                if size > room:
                    continue
                room -= size
            kept.append(key)
        if len(kept) < len(self.originals):
            self.originals = {k: self.originals[k] for k in reversed(kept)}
            self.original_bytes = {k: b for k, b in self.original_bytes.items() if k in self.originals}

    def saved_prefix(self) -> int:
        """How many leading messages of the view are the objects the last committed head listed first (one
        C-level pass of identity tests): those are placed, and their refs are the head's."""
        return shared_prefix(self.view, self.saved_view)

    def unplaced(self, start: int = 0) -> list[Message]:
        """The messages of the view from ``start`` (the `saved_prefix`: all before it are placed) not stored yet,
        each once, in view order."""
        out: list[Message] = []
        seen: set[int] = set()
        for message in itertools.islice(self.view, start, None):
            key = id(message)
            where = self.placed.get(key)
            if (where is None or where[0] is not message) and key not in seen:
                seen.add(key)
                out.append(message)
        return out

    def place(self, record_key: str, messages: Sequence[Message]) -> None:
        for position, message in enumerate(messages):
            self.placed[id(message)] = (message, record_key, position)

    def view_runs(self, start: int = 0) -> list[list[Any]]:
        """The view (all placed) as `ref_runs`, ``[record key, record version, start, count]``; the runs of its
        first ``start`` messages (the `saved_prefix`) are cut from the last committed head's, since a live
        record keeps its version, so only the new messages are looked at."""
        runs, ends = self.saved_runs, self.saved_ends
        i = bisect.bisect_right(ends, start)  # the runs that end within the prefix
        out = [list(run) for run in runs[:i]]  # copies: `ref_runs` extends the last one
        covered = ends[i - 1] if i else 0
        if covered < start:  # the run that holds the prefix's end, cut there
            key, version, first, _ = runs[i]
            out.append([key, version, first, start - covered])
        placed, versions = self.placed, self.record_versions
        tail = ([(w := placed[id(m)])[1], versions[w[1]], w[2]] for m in itertools.islice(self.view, start, None))
        return ref_runs(tail, out)

    def saved(self, runs: list[list[Any]], start: int) -> None:
        """The head listing ``runs`` for the view is committed: keep them for the next save, and drop what
        ``placed`` holds of messages that left the view (none did when the last head's view is a prefix)."""
        if start < len(self.saved_view) or len(self.placed) > len(self.view):
            self.placed = {id(m): self.placed[id(m)] for m in self.view}
        self.saved_view = list(self.view)
        self.saved_runs = runs
        self.saved_ends = list(itertools.accumulate(run[3] for run in runs))

    record_versions: dict[str, int] = field(default_factory=dict)
    """The version of each view record this memory wrote or read."""

    def state_doc(self, fmt: str, runs: list[list[Any]], spare: dict[str, int]) -> dict[str, Any]:
        """The head: everything but the view's messages, which ``runs`` point to (``spare``: unused records)."""
        return {
            "version": STATE_VERSION,
            "format": fmt,
            "source_count": self.source_count,
            "source_digest": self.source_digest,
            "summary": self.summary,
            "scratchpad": self.scratchpad,
            "view": runs,
            "spare": [[key, version] for key, version in spare.items()],
            "sent": list(self.sent),
            # read only beside ``sent`` (Anthropic cache breakpoints): the system text is the summary plus the
            # caller's prompt, kilobytes a head would otherwise carry on every call of every other format
            "sent_system": self.sent_system if self.sent else None,
            "recall_served": self.recall_served,
        }

    @classmethod
    def from_doc(
        cls, thread_id: str, doc: dict[str, Any], records: dict[str, tuple[int, list[Message]]] | None = None
    ) -> ThreadMemory:
        """A head (with the view records it refers to, ``records``) or a version-1 snapshot as memory."""
        version = doc.get("version")
        if version not in READABLE_VERSIONS:
            raise StorageError(
                f"thread {thread_id!r}: the stored window state has version {version!r}, this "
                f"windowkeeper reads versions {', '.join(map(str, READABLE_VERSIONS))}; use another thread_id or "
                "delete the thread",
            )
        try:
            placed: dict[int, tuple[Message, str, int]] = {}
            versions: dict[str, int] = {}
            spare: dict[str, int] = {}
            if version == 1:
                view = [Message.model_validate(m) for m in doc["view"]]
            else:
                found = records or {}
                view = []
                for key, record_version, position in unrolled(doc["view"]):
                    key = str(key)
                    message = found[key][1][int(position)]
                    view.append(message)
                    placed[id(message)] = (message, key, int(position))
                    versions[key] = int(record_version)
                spare = {str(key): int(v) for key, v in doc.get("spare") or ()}
            return cls(
                source_count=int(doc["source_count"]),
                source_digest=str(doc["source_digest"]),
                view=view,
                pointers=[m for m in view if is_offloaded(m)],
                summary=doc.get("summary"),
                scratchpad=doc.get("scratchpad"),
                sent=tuple(doc.get("sent") or ()),
                sent_system=doc.get("sent_system"),
                recall_served=doc.get("recall_served"),
                placed=placed,
                view_records=dict(versions),
                record_versions=versions,
                spare=spare,
            )
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise StorageError(f"thread {thread_id!r}: the stored window state is not readable: {exc}") from exc


def view_record_versions(doc: dict[str, Any]) -> dict[str, int]:
    """The view records a head refers to, with the version it read each at (none for a version-1 snapshot)."""
    refs = doc.get("view")
    if doc.get("version") == 1 or not isinstance(refs, list):
        return {}
    out: dict[str, int] = {}
    for ref in refs:
        if isinstance(ref, list) and len(ref) in (3, 4) and isinstance(ref[1], int):
            out[str(ref[0])] = ref[1]
    return out


def ref_runs(refs: Iterable[Sequence[Any]], runs: list[list[Any]] | None = None) -> list[list[Any]]:
    """``[key, version, position]`` refs as runs ``[key, version, start, count]`` of consecutive positions in one
    record, continuing ``runs``: a call stores its new view messages in one record, so a head lists about one run
    per call instead of one ref per message (a few times less text to encode, write and read back every call)."""
    runs = [] if runs is None else runs
    last: list[Any] | None = runs[-1] if runs else None
    for key, version, position in refs:
        if last is not None and last[0] == key and last[1] == version and last[2] + last[3] == position:
            last[3] += 1
        else:
            last = [key, version, position, 1]
            runs.append(last)
    return runs


def unrolled(refs: Iterable[Sequence[Any]]) -> Iterable[tuple[Any, Any, int]]:
    """``(key, version, position)`` of each message a head's view lists, from runs or (version 2) single refs."""
    for ref in refs:
        if len(ref) == 4:
            key, version, start, count = ref
            for position in range(int(start), int(start) + int(count)):
                yield key, version, position
        else:
            key, version, position = ref
            yield key, version, int(position)


class ThreadStore:
    """The store side of `ThreadMemory`: load once per thread, save what is new after every call."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.rebases = not store.commits_state
        """Whether a lost head write is this store's to resolve (`StaleHeadError`), not the store owner's."""

    async def load(self, thread_id: str) -> ThreadMemory | None:
        memory = await self._read(thread_id)
        if memory is None or memory.started_over:
            return memory
        memory.needs_reseed = True
        for record in await self.store.get_records(
            OFFLOAD_NAMESPACE, thread_id, sorted(view_restore_keys(memory.view))
        ):
            memory.originals[record.key] = _original_of(thread_id, record.key, record.doc)
            memory.saved_keys.add(record.key)
        logger.debug(
            "thread %r: loaded a view of %d messages and %d offloaded originals",
            thread_id,
            len(memory.view),
            len(memory.originals),
        )
        return memory

    async def _read(self, thread_id: str) -> ThreadMemory | None:
        """The head and the view records it refers to (read again when a newer write deleted one meanwhile)."""
        missing: list[str] = []
        head_version = 0
        for _ in range(LOAD_ATTEMPTS):
            doc, head_version = await self._head(thread_id)
            if doc is None:
                return None
            wanted = view_record_versions(doc)
            found = await self.store.get_records(VIEW_NAMESPACE, thread_id, list(wanted)) if wanted else []
            records = {
                record.key: (record.version, _view_messages(thread_id, record.key, record.doc))
                for record in found
                if record.version == wanted.get(record.key)
            }
            missing = [key for key in wanted if key not in records]
            if not missing:
                memory = ThreadMemory.from_doc(thread_id, doc, records)
                memory.head_version = head_version
                return memory
        # a head committed without a compare-and-set (a state snapshot an older windowkeeper wrote while another
        # window wrote the thread): what it refers to was overwritten, so the thread starts over
        logger.warning(
            "thread %r: the stored window state refers to view records another write replaced (%s); the thread is "
            "managed afresh from the caller's list (the summary is dropped). It was saved by a windowkeeper whose "
            "saves were not compare-and-set; the next save commits with one",
            thread_id,
            ", ".join(missing[:3]),
        )
        # empty, but at the head's version: its save replaces the unreadable head instead of losing to it
        return ThreadMemory(head_version=head_version, started_over=True)

    async def _head(self, thread_id: str) -> tuple[dict[str, Any] | None, int]:
        """The committed head and the version a save must expect (0 for a head still in the state snapshot)."""
        if self.rebases:
            record = await self.store.get_record(HEAD_NAMESPACE, thread_id, HEAD_KEY)
            if record is not None:
                return record.doc, record.version
        return await self.store.get_state(thread_id), 0

    async def _put_head(self, thread_id: str, memory: ThreadMemory, doc: dict[str, Any]) -> None:
        """Commit ``doc`` if the head is still at ``memory.head_version``; `StaleHeadError` otherwise."""
        if not self.rebases:
            await self.store.put_state(thread_id, doc)
            return
        expected = memory.head_version
        try:
            if expected == 0:
                record = await self.store.add_record(HEAD_NAMESPACE, thread_id, HEAD_KEY, doc)
            else:
                record = await self.store.update_record(
                    HEAD_NAMESPACE, thread_id, HEAD_KEY, doc, expected_version=expected
                )
        except (ConflictError, RecordNotFoundError) as exc:
            # another writer committed (or deleted the thread) since this memory was read
            raise StaleHeadError(
                f"thread {thread_id!r}: another window or process saved the thread after this one read it "
                f"(head version {expected} expected); re-read the thread and redo the call",
                key=HEAD_KEY,
                expected=expected,
                actual=getattr(exc, "actual", None),
            ) from exc
        memory.head_version = record.version

    async def original(self, thread_id: str, keys: Sequence[str]) -> Message | None:
        """The stored original under the first of ``keys`` that has one (a pointer that has left the view)."""
        for record in await self.store.get_records(OFFLOAD_NAMESPACE, thread_id, keys):
            return _original_of(thread_id, record.key, record.doc)
        return None

    async def history(self, thread_id: str) -> list[Message]:
        """Every message the caller ever sent on the thread, in order (the store's log)."""
        return await self.store.load_messages(thread_id)

    async def save(self, thread_id: str, fmt: str, memory: ThreadMemory, new_messages: Sequence[Message]) -> None:
        """Write one call's delta (see the module docstring): the new log messages, the new originals, the view's
        new messages as one view record, then the head (which lists the records it no longer refers to as spares).

        The writes go in one store batch (one transaction on SQLite): each keeps its own effect, as written one by
        one, and a crash in between keeps none of them instead of the first few."""
        async with self.store.batch():
            await self._save(thread_id, fmt, memory, new_messages)

    async def _save(self, thread_id: str, fmt: str, memory: ThreadMemory, new_messages: Sequence[Message]) -> None:
        if new_messages:
            await self.store.append_messages(thread_id, new_messages)
        for key, original in list(memory.originals.items()):
            if key in memory.saved_keys:
                continue
            # a ConflictError means an earlier process of this thread wrote it: the original is the same
            with contextlib.suppress(ConflictError):
                await self.store.add_record(
                    OFFLOAD_NAMESPACE, thread_id, key, {"message": original.model_dump(mode="json")}
                )
            memory.saved_keys.add(key)
        start = memory.saved_prefix()
        fresh = memory.unplaced(start)
        written: str | None = None
        added = False
        if fresh:
            written, added = await self._write_view_record(thread_id, memory, fresh)
        runs = memory.view_runs(start)
        live = {run[0]: run[1] for run in runs}
        versions = memory.record_versions
        spare = {**memory.spare, **{k: versions[k] for k in memory.view_records.keys() - live.keys()}}
        try:
            await self._put_head(thread_id, memory, memory.state_doc(fmt, runs, spare))
        except BaseException as exc:
            if written is not None:
                # the head was not written: nothing refers to this call's view record. A new one is removed, and so
                # is a reused spare when another writer committed meanwhile: the head it committed lists the spare
                # at the version before this write, which no writer can update any more, so it would be kept
                # forever. Otherwise a reused spare stays one (this memory's head lists it)
                memory.placed = {k: v for k, v in memory.placed.items() if v[1] != written}
                if added or isinstance(exc, StaleHeadError):
                    versions.pop(written, None)
                    with contextlib.suppress(Exception):
                        await self.store.delete_record(VIEW_NAMESPACE, thread_id, written)
                else:
                    memory.spare[written] = versions[written]
            raise
        memory.view_records, memory.spare = live, spare
        memory.record_versions = {**live, **spare}
        memory.saved(runs, start)
        memory.prune_originals(stored=True)

    async def _write_view_record(
        self, thread_id: str, memory: ThreadMemory, messages: Sequence[Message]
    ) -> tuple[str, bool]:
        """Store ``messages`` in a spare view record (at the version it was left at) or a new one: ``(key, new)``."""
        # each message as its JSON text: one C call per message, and the store encodes a list of strings
        doc = {"json": [m.model_dump_json() for m in messages]}
        record = None
        while memory.spare and record is None:
            key, version = memory.spare.popitem()
            try:
                record = await self.store.update_record(VIEW_NAMESPACE, thread_id, key, doc, expected_version=version)
            except (ConflictError, RecordNotFoundError):
                # another window of this thread reused or removed it (see `_read`): left to that one
                record = None
        added = record is None
        if record is None:
            record = await self.store.add_record(VIEW_NAMESPACE, thread_id, f"v{uuid.uuid4().hex}", doc)
        memory.record_versions[record.key] = record.version
        memory.place(record.key, messages)
        return record.key, added

    async def delete(self, thread_id: str) -> None:
        await self.store.delete_thread(thread_id)
        for namespace in (OFFLOAD_NAMESPACE, VIEW_NAMESPACE, HEAD_NAMESPACE):
            with contextlib.suppress(RecordNotFoundError):
                await self.store.delete_session(namespace, thread_id)


def _view_messages(thread_id: str, key: str, doc: dict[str, Any]) -> list[Message]:
    try:
        return [Message.model_validate_json(text) for text in doc["json"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise StorageError(f"thread {thread_id!r}: view record {key!r} is not readable: {exc}") from exc


def _original_of(thread_id: str, key: str, doc: dict[str, Any]) -> Message:
    try:
        return Message.model_validate(doc["message"])
    except (KeyError, ValueError) as exc:
        raise StorageError(f"thread {thread_id!r}: offloaded original {key!r} is not readable: {exc}") from exc


__all__ = [
    "HEAD_NAMESPACE",
    "OFFLOAD_NAMESPACE",
    "VIEW_NAMESPACE",
    "StaleHeadError",
    "ThreadMemory",
    "ThreadStore",
    "chain_digest",
    "chain_hasher",
    "ref_keys",
    "restore_keys",
]
