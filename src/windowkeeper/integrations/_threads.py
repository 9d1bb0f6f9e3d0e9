"""What a `Window` remembers per thread between calls, and how it is kept in a store across process restarts.

Per thread the window keeps the managed view it produced last, the running summary and scratchpad, a digest of the
caller's list it was computed from (so the next call can tell "the same list plus new messages" from "a different
conversation"), and the originals of the bodies the manager replaced with a pointer still in that view.

Originals are held in memory only while their pointer is in the view, so a long thread does not grow the window
without bound. With a store every original is also written as a record, so `Window.restore` of a pointer that has
left the view (or of one from before a restart) reads it back from there; without a store it asks the manager,
keeps the newest of them up to a size bound, as the manager's own cache does.

With a store, each call appends the caller's new messages to the thread's log (the full history, never trimmed),
replaces the thread's state snapshot with the view, summary and digest, and adds one record per newly offloaded
original. A new process that opens the same store continues the thread where the last one stopped.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..context.pointers import DEFAULT_OFFLOAD_CACHE_BYTES, approx_bytes, is_offloaded
from ..errors import StorageError
from ..messages import Message
from ..storage import ConflictError, SessionStore
from ..storage.base import RecordNotFoundError

logger = logging.getLogger(__name__)

STATE_VERSION = 1
OFFLOAD_NAMESPACE = "windowkeeper.window.offloaded"


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

    def prune_originals(self, *, stored: bool) -> None:
        """Bound the originals kept in memory: those of pointers in the view always; with ``stored``, the others
        only until written (the store serves them from then on); without a store, the newest others up to
        `DEFAULT_OFFLOAD_CACHE_BYTES` (the window is then their only keeper, like the manager's own cache)."""
        live = view_restore_keys(self.view)
        if stored:
            self.originals = {k: v for k, v in self.originals.items() if k in live or k not in self.saved_keys}
            self.saved_keys &= live
            self.original_bytes = {k: b for k, b in self.original_bytes.items() if k in self.originals}
            return
        room = DEFAULT_OFFLOAD_CACHE_BYTES
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

    def state_doc(self, fmt: str) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "format": fmt,
            "source_count": self.source_count,
            "source_digest": self.source_digest,
            "summary": self.summary,
            "scratchpad": self.scratchpad,
            "view": [m.model_dump(mode="json") for m in self.view],
            "sent": list(self.sent),
            "sent_system": self.sent_system,
            "recall_served": self.recall_served,
        }

    @classmethod
    def from_doc(cls, thread_id: str, doc: dict[str, Any]) -> ThreadMemory:
        if doc.get("version") != STATE_VERSION:
            raise StorageError(
                f"thread {thread_id!r}: the stored window state has version {doc.get('version')!r}, this "
                f"windowkeeper reads version {STATE_VERSION}; use another thread_id or delete the thread",
            )
        try:
            return cls(
                source_count=int(doc["source_count"]),
                source_digest=str(doc["source_digest"]),
                view=[Message.model_validate(m) for m in doc["view"]],
                summary=doc.get("summary"),
                scratchpad=doc.get("scratchpad"),
                sent=tuple(doc.get("sent") or ()),
                sent_system=doc.get("sent_system"),
                recall_served=doc.get("recall_served"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise StorageError(f"thread {thread_id!r}: the stored window state is not readable: {exc}") from exc


class ThreadStore:
    """The store side of `ThreadMemory`: load once per thread, save after every call."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    async def load(self, thread_id: str) -> ThreadMemory | None:
        doc = await self.store.get_state(thread_id)
        if doc is None:
            return None
        memory = ThreadMemory.from_doc(thread_id, doc)
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

    async def original(self, thread_id: str, keys: Sequence[str]) -> Message | None:
        """The stored original under the first of ``keys`` that has one (a pointer that has left the view)."""
        for record in await self.store.get_records(OFFLOAD_NAMESPACE, thread_id, keys):
            return _original_of(thread_id, record.key, record.doc)
        return None

    async def history(self, thread_id: str) -> list[Message]:
        """Every message the caller ever sent on the thread, in order (the store's log)."""
        return await self.store.load_messages(thread_id)

    async def save(self, thread_id: str, fmt: str, memory: ThreadMemory, new_messages: Sequence[Message]) -> None:
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
        await self.store.put_state(thread_id, memory.state_doc(fmt))
        memory.prune_originals(stored=True)

    async def delete(self, thread_id: str) -> None:
        await self.store.delete_thread(thread_id)
        with contextlib.suppress(RecordNotFoundError):
            await self.store.delete_session(OFFLOAD_NAMESPACE, thread_id)


def _original_of(thread_id: str, key: str, doc: dict[str, Any]) -> Message:
    try:
        return Message.model_validate(doc["message"])
    except (KeyError, ValueError) as exc:
        raise StorageError(f"thread {thread_id!r}: offloaded original {key!r} is not readable: {exc}") from exc


__all__ = [
    "OFFLOAD_NAMESPACE",
    "ThreadMemory",
    "ThreadStore",
    "chain_digest",
    "chain_hasher",
    "ref_keys",
    "restore_keys",
]
