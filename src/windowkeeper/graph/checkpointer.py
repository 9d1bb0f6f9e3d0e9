"""Checkpointers: what a compiled graph persists per ``thread_id``.

A checkpoint is two things kept side by side in a `SessionStore`: the newest state snapshot (the trimmed view the
graph resumes from) and the thread's append-only message log (every message ever produced, once). Messages are
appended before the snapshot is written, so after a crash the log is never behind the snapshot; the snapshot
itself is a single atomic write, so a reader sees the previous checkpoint or the new one, never a mix.

Every checkpointer is `Checkpointer` over a store; the named classes only choose the store. Sync methods exist for
sync graphs and scripts, and refuse to run inside an event loop rather than block or nest it.

A step costs what it adds, not the history: the snapshot refers to the logged messages of the view by position
(see `checkpoint_format`), so a step writes its new messages once and a few bytes of references. Loading reads
only the log positions the view holds; and a process that wrote a checkpoint hands its own message objects back
when it reloads that same checkpoint, so a context manager recognises its view at once instead of re-reading it.
"""

from __future__ import annotations

import itertools
import logging
import os
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from .._bridge import in_running_loop, refusal, run_checked
from .._cache import LRUCache
from .._gc import bulk_allocation
from ..errors import ConfigurationError, StorageError
from ..messages import Message, edit_epoch, edited_since
from ..state import AgentState
from ..storage.base import SessionStore, check_id, message_key
from ..storage.memory import InMemoryStore
from ..storage.sqlite import SQLiteStore
from ..storage.url import open_store
from .checkpoint_format import (
    FORMAT_KEY,
    FORMAT_VERSION,
    LogIndex,
    copy_runs,
    encode_context,
    is_envelope,
    parse_run,
    run_matches,
)

logger = logging.getLogger(__name__)

S = TypeVar("S", bound=AgentState)
T = TypeVar("T")

_FINGERPRINT_CHARS = 32
_MAX_CACHED_THREADS = 256
"""Threads whose log index and newest view a checkpointer keeps in memory (least recently used out first)."""


class BaseCheckpointer(ABC):
    """The checkpointer contract the graph runtime codes against.

    Subclasses implement `aput`, `aload_state`, `aget_messages`, `adelete` (and `aclose` if they hold resources);
    validation into a state class and the sync twins come from here.
    """

    @abstractmethod
    async def aput(self, thread_id: str, state: AgentState, new_messages: Sequence[Message] = ()) -> None:
        """Append ``new_messages`` to the thread's log (each id once), then store ``state`` as its snapshot."""

    @abstractmethod
    async def aload_state(self, thread_id: str) -> dict[str, Any] | None:
        """The raw JSON snapshot, or ``None``."""

    @abstractmethod
    async def aget_messages(self, thread_id: str) -> list[Message]:
        """The thread's full message log in append order."""

    @abstractmethod
    async def adelete(self, thread_id: str) -> None:
        """Forget the thread: log and snapshot."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook: most checkpointers hold nothing to release
        """Release the backend's connections."""

    @property
    def steps_directly(self) -> bool:
        """Whether the async methods need no task of their own before they first wait, so the sync twins (and a
        graph's ``get_state``) step them without one (see `SessionStore.steps_directly`). False unless a
        checkpointer knows it: a subclass's own methods might read ``asyncio.current_task()``."""
        return False

    @property
    def steps_without_loop(self) -> bool:
        """Whether, beyond `steps_directly`, the reads never look for the running loop before they first wait (see
        `SessionStore.steps_without_loop`), so the sync twins step them without marking a loop as running."""
        return False

    @overload
    async def aget_state(self, thread_id: str) -> AgentState | None: ...

    @overload
    async def aget_state(self, thread_id: str, state_cls: type[S]) -> S | None: ...

    async def aget_state(self, thread_id: str, state_cls: type[AgentState] = AgentState) -> AgentState | None:
        """The stored snapshot validated into ``state_cls`` (custom `AgentState` subclasses included)."""
        if not (isinstance(state_cls, type) and issubclass(state_cls, AgentState)):
            raise ConfigurationError(f"state_cls must be AgentState or a subclass of it, got {state_cls!r}")
        data = await self.aload_state(thread_id)
        if data is None:
            return None
        try:
            return state_cls.model_validate(data)
        except ValidationError as exc:
            raise StorageError(
                f"thread {thread_id!r}: the stored state does not validate as {state_cls.__name__} "
                f"(was it written by a different state class?): {exc}",
            ) from exc

    # -- sync twins -----------------------------------------------------------------------------------------

    def _sync(self, method: str, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        if in_running_loop():
            raise self._refused(method)
        return run_checked(make(), direct=self.steps_directly)

    def _refused(self, method: str) -> RuntimeError:
        return refusal(f"{type(self).__name__}.{method.removeprefix('a')}()", f"await checkpointer.{method}(...)")

    def put(self, thread_id: str, state: AgentState, new_messages: Sequence[Message] = ()) -> None:
        self._sync("aput", lambda: self.aput(thread_id, state, new_messages))

    @overload
    def get_state(self, thread_id: str) -> AgentState | None: ...

    @overload
    def get_state(self, thread_id: str, state_cls: type[S]) -> S | None: ...

    def get_state(self, thread_id: str, state_cls: type[AgentState] = AgentState) -> AgentState | None:
        # `_sync` inlined: the read this is the twin of costs a few microseconds
        if in_running_loop():
            raise self._refused("aget_state")
        return run_checked(
            self.aget_state(thread_id, state_cls), direct=self.steps_directly, loopless=self.steps_without_loop
        )

    def get_messages(self, thread_id: str) -> list[Message]:
        return self._sync("aget_messages", lambda: self.aget_messages(thread_id))

    def delete(self, thread_id: str) -> None:
        self._sync("adelete", lambda: self.adelete(thread_id))

    def close(self) -> None:
        self._sync("aclose", self.aclose)

    async def __aenter__(self) -> BaseCheckpointer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@dataclass(frozen=True)
class _View:
    """The newest checkpoint of a thread as this process wrote or read it: its id, view objects and encoding.

    The view is the first ``length`` messages of ``messages``, a list this checkpointer owns and only ever
    extends: the next view that only grew appends its new messages to the same list (`_grown`), so a put costs
    what it adds rather than a copy of the whole view (copying a 100k-message list touches every message's
    reference count, ~10 ms on a shared machine). Messages past ``length`` belong to a newer view, or to none
    when the put that added them failed.
    """

    checkpoint: str
    messages: list[Message]
    length: int
    encoded: list[Any]
    epoch: int
    """`edit_epoch` when remembered: while unchanged, no message of the view was edited in place since."""

    @classmethod
    def of(cls, checkpoint: str, context: Sequence[Message], encoded: list[Any], epoch: int) -> _View:
        """A view holding its own copy of ``context``."""
        return cls(checkpoint, list(context), len(context), encoded, epoch)

    def context(self) -> list[Message]:
        """The view's messages, as a new list (the caller's to change)."""
        messages = self.messages
        return messages[: self.length] if len(messages) != self.length else list(messages)


def _edited(view: _View) -> bool:
    return view.epoch != edit_epoch() and any(
        edited_since(m, view.epoch) for m in itertools.islice(view.messages, view.length)
    )


def _unknown(index: LogIndex, messages: list[Message]) -> list[Message]:
    """The messages of ``messages`` whose keys ``index`` does not know as logged (each key once).

    Runs read back and not keyed yet (`LogIndex.defer_read`) are not looked at: when every one of these was then
    appended, none of them was in the log, so none is in those runs (unless another writer removed it from the
    log meanwhile, and then it sits where it was appended); when not, the caller settles the index and asks again.
    """
    fresh: list[Message] = []
    seen: set[str] = set()
    for message in messages:
        key = message_key(message.message_id)
        if key not in seen and not index.knows(key):
            seen.add(key)
            fresh.append(message)
    return fresh


def _grown(view: _View, context: list[Message]) -> list[Message] | None:
    """The messages of ``view`` followed by the new ones of ``context`` when ``context`` is ``view``'s messages,
    unedited, followed by new ones (its own list, extended in place when nothing else did), else None."""
    n = view.length
    if len(context) < n:
        return None
    mine = view.messages
    if len(mine) != n:  # a newer or failed put extended it: this view's prefix gets a list of its own
        mine = mine[:n]
    mine.extend(context[n:])
    # list equality compares by identity first, in C, without touching the messages: 0.2 ms for 100k. A different
    # object equal in every field (private state included) stands for the same stored body, so treating it as the
    # old one keeps the encoding right.
    if mine == context and not _edited(view):
        return mine
    del mine[n:]
    return None


class Checkpointer(BaseCheckpointer):
    """A checkpointer over any `SessionStore`; the store is closed with the checkpointer unless ``owns_store``
    is ``False`` (for a store shared with, say, the memory layer)."""

    def __init__(self, store: SessionStore, *, owns_store: bool = True) -> None:
        if not isinstance(store, SessionStore):
            raise ConfigurationError(f"Checkpointer needs a SessionStore, got {type(store).__name__}")
        self.store = store
        self._owns_store = owns_store
        self._logs: LRUCache[str, LogIndex] = LRUCache(_MAX_CACHED_THREADS)
        self._views: LRUCache[str, _View] = LRUCache(_MAX_CACHED_THREADS)
        # this module's classes over a store class that declares it itself (a subclass may override methods)
        self._direct = type(self) in _OWN_CLASSES and type(store).__dict__.get("steps_directly") is True
        self._loopless = self._direct and type(store).__dict__.get("steps_without_loop") is True

    @property
    def steps_directly(self) -> bool:
        return self._direct

    @property
    def steps_without_loop(self) -> bool:
        return self._loopless

    @classmethod
    def from_url(cls, url_or_path: str | os.PathLike[str], *, prefix: str | None = None) -> Checkpointer:
        """A checkpointer on `open_store` (``memory://``, ``sqlite:///...``/path, ``postgresql://``, ``redis://``)."""
        return cls(open_store(url_or_path, prefix=prefix))

    async def aput(self, thread_id: str, state: AgentState, new_messages: Sequence[Message] = ()) -> None:
        check_id(thread_id, "thread_id")
        if not isinstance(state, AgentState):
            raise ConfigurationError(
                f"thread {thread_id!r}: aput needs an AgentState (or subclass), got {type(state).__name__}",
            )
        if isinstance(new_messages, Message):
            new_messages = [new_messages]
        try:
            fields = state.model_dump(mode="json", exclude={"context"})
        except PydanticSerializationError as exc:
            raise StorageError(
                f"thread {thread_id!r}: the {type(state).__name__} cannot be stored as JSON "
                f"(a custom field holds a non-JSON value): {exc}",
            ) from exc
        index = await self._index(thread_id)
        complete = [m for m in new_messages if not m.delta]
        if complete:
            await self._append(thread_id, index, complete)
        context = state.context if type(state.context) is list else list(state.context)
        epoch = edit_epoch()
        previous = self._views.peek(thread_id)
        grown = None if previous is None else _grown(previous, context)
        try:
            if previous is not None and grown is not None:
                # the view is the previous one plus new messages: only those are looked at
                encoded = encode_context(context[previous.length :], index, copy_runs(previous.encoded))
                view = _View(uuid.uuid4().hex, grown, len(grown), encoded, epoch)
            else:
                encoded = encode_context(context, index)
                view = _View.of(uuid.uuid4().hex, context, encoded, epoch)
        except PydanticSerializationError as exc:
            if grown is not None and previous is not None:
                del grown[previous.length :]
            raise StorageError(f"thread {thread_id!r}: a message of the view cannot be stored as JSON: {exc}") from exc
        envelope = {FORMAT_KEY: FORMAT_VERSION, "id": view.checkpoint, "state": fields, "context": encoded}
        await self.store.put_state(thread_id, envelope)
        self._remember(thread_id, index, view)

    async def _index(self, thread_id: str) -> LogIndex:
        cached = self._logs.peek(thread_id)
        if cached is None:
            cached = LogIndex(await self.store.count_messages(thread_id))
        return cached

    async def _append(self, thread_id: str, index: LogIndex, messages: list[Message]) -> None:
        """Append to the log and record where the new messages landed, when that is certain."""
        fresh = _unknown(index, messages)
        epoch = edit_epoch()  # the objects are the logged copies unless edited after this
        added = await self.store.append_messages(thread_id, messages)
        logger.debug("thread %s: %d of %d messages new in the log", thread_id, added, len(messages))
        if not added:
            return
        length = await self.store.count_messages(thread_id)
        if index.deferred and (added != len(fresh) or length != index.length + added):
            # some of these may be in the runs read back and not keyed yet: judged with them, as before
            index.settle()
            fresh = _unknown(index, messages)
        if added == len(fresh) and length == index.length + added:
            # the log grew by exactly these messages, so they sit at the positions after the known length
            index.record_read(fresh, index.length, epoch)
        else:
            # some ids were logged before this process knew of them, or another writer appended in between:
            # positions are uncertain, so these messages are stored inline in the snapshot instead
            logger.debug("thread %s: log positions of %d new messages uncertain; storing them inline", thread_id, added)
        index.length = length

    def _remember(self, thread_id: str, index: LogIndex, view: _View) -> None:
        self._logs.put(thread_id, index)
        self._views.put(thread_id, view)

    async def _context(self, thread_id: str, raw: dict[str, Any]) -> list[Message]:
        """The view of a stored checkpoint: this process's own objects when it wrote it, else read from the log."""
        checkpoint = raw.get("id")
        view = self._views.peek(thread_id)
        # a message edited in place since it was stored is no longer the stored one: read the view back instead
        if view is not None and view.checkpoint == checkpoint and not _edited(view):
            return view.context()
        index = self._logs.peek(thread_id) or LogIndex(await self.store.count_messages(thread_id))
        epoch = edit_epoch()
        context: list[Message] = []
        with bulk_allocation():  # a view of thousands of messages is built here, all of it kept
            await self._read_entries(thread_id, raw["context"], index, epoch, context)
        if isinstance(checkpoint, str):
            self._remember(thread_id, index, _View.of(checkpoint, context, raw["context"], epoch))
        return context

    async def _read_entries(
        self, thread_id: str, entries: list[Any], index: LogIndex, epoch: int, context: list[Message]
    ) -> None:
        """Append the messages of a stored view's ``entries`` to ``context`` (runs read from the log)."""
        for entry in entries:
            if isinstance(entry, dict):
                context.append(self._inline(thread_id, entry))
                continue
            start, count, first, last = parse_run(thread_id, entry)
            run = await self.store.load_messages_range(thread_id, start, start + count)
            if not (run and run_matches(run, count, first, last)):
                run = await self._find_run(thread_id, count, first, last)
                start = -1
            if start >= 0:
                index.defer_read(run, start, epoch)
            context.extend(run)

    @staticmethod
    def _inline(thread_id: str, entry: dict[str, Any]) -> Message:
        try:
            message = Message.from_stored(entry.get("m"))  # cheap for what Message wrote, else validated
        except ValidationError as exc:
            raise StorageError(
                f"thread {thread_id!r}: a message stored in the checkpoint does not validate: {exc}",
            ) from exc
        fingerprint = entry.get("f")
        if isinstance(fingerprint, str) and len(fingerprint) == _FINGERPRINT_CHARS:
            # written with the message in the same atomic snapshot; an edit after loading clears it as usual
            private = message.__pydantic_private__
            if private is not None:
                private["_fingerprint"] = fingerprint
        return message

    async def _find_run(self, thread_id: str, count: int, first: str, last: str) -> list[Message]:
        """A run whose positions moved (another writer appended in between): found by its keys in the full log."""
        log = await self.store.load_messages(thread_id)
        for position, message in enumerate(log):
            if message_key(message.message_id) == first:
                run = log[position : position + count]
                if run_matches(run, count, first, last):
                    logger.info("thread %s: checkpoint run found at log position %d by its keys", thread_id, position)
                    return run
                break
        raise StorageError(
            f"thread {thread_id!r}: the checkpoint refers to {count} logged messages from {first} to {last} that "
            "the message log no longer holds in that order (was the log edited outside windowkeeper?)",
        )

    async def aload_state(self, thread_id: str) -> dict[str, Any] | None:
        check_id(thread_id, "thread_id")
        raw = await self.store.get_state(thread_id)
        if raw is None or not is_envelope(raw):
            return raw
        context = await self._context(thread_id, raw)
        return {**raw["state"], "context": [m.model_dump(mode="json") for m in context]}

    async def aget_state(self, thread_id: str, state_cls: type[AgentState] = AgentState) -> AgentState | None:  # type: ignore[override]
        """The stored snapshot validated into ``state_cls``; a checkpoint this process wrote keeps its objects."""
        if not (isinstance(state_cls, type) and issubclass(state_cls, AgentState)):
            raise ConfigurationError(f"state_cls must be AgentState or a subclass of it, got {state_cls!r}")
        check_id(thread_id, "thread_id")
        raw = await self.store.get_state(thread_id)
        if raw is None:
            return None
        if not is_envelope(raw):
            return await super().aget_state(thread_id, state_cls)
        context = await self._context(thread_id, raw)
        fields = raw.get("state")
        try:
            state = state_cls.model_validate({**(fields if isinstance(fields, dict) else {}), "context": []})
        except ValidationError as exc:
            raise StorageError(
                f"thread {thread_id!r}: the stored state does not validate as {state_cls.__name__} "
                f"(was it written by a different state class?): {exc}",
            ) from exc
        state.context = context
        return state

    async def aget_messages(self, thread_id: str) -> list[Message]:
        check_id(thread_id, "thread_id")
        return await self.store.load_messages(thread_id)

    async def adelete(self, thread_id: str) -> None:
        check_id(thread_id, "thread_id")
        self._logs.pop(thread_id)
        self._views.pop(thread_id)
        await self.store.delete_thread(thread_id)

    async def aclose(self) -> None:
        if self._owns_store:
            await self.store.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(store={type(self.store).__name__})"


class InMemoryCheckpointer(Checkpointer):
    """Process-local checkpoints (tests, demos); same JSON round trip as the durable ones."""

    def __init__(self) -> None:
        super().__init__(InMemoryStore())


class SQLiteCheckpointer(Checkpointer):
    """Checkpoints in one SQLite file: the embedded default for persistence."""

    def __init__(self, path: str | os.PathLike[str], *, prefix: str | None = None) -> None:
        """``path`` is a file path or a ``sqlite:///`` URL (``?prefix=``, ``?mode=ro`` honoured)."""
        super().__init__(SQLiteStore(path, prefix=prefix))


class PostgresCheckpointer(Checkpointer):
    """Checkpoints in PostgreSQL; ``url`` defaults to ``$WINDOWKEEPER_POSTGRES_URL``."""

    def __init__(self, url: str | None = None, *, prefix: str | None = None) -> None:
        """``url``: ``postgresql://`` (or ``postgresql+psycopg://``) with libpq options and ``?prefix=``."""
        from ..storage.postgres import PostgresStore

        super().__init__(PostgresStore(url, prefix=prefix))


class RedisCheckpointer(Checkpointer):
    """Checkpoints in Redis; ``url`` defaults to ``$WINDOWKEEPER_REDIS_URL``."""

    def __init__(self, url: str | None = None, *, prefix: str | None = None) -> None:
        """``url``: ``redis://`` with redis-py options (``socket_timeout=``...) and ``?prefix=``."""
        from ..storage.redis import RedisStore

        super().__init__(RedisStore(url, prefix=prefix))


_OWN_CLASSES = frozenset(
    {Checkpointer, InMemoryCheckpointer, SQLiteCheckpointer, PostgresCheckpointer, RedisCheckpointer}
)
