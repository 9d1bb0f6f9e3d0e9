"""Checkpointers: what a compiled graph persists per ``thread_id``.

A checkpoint is two things kept side by side in a `SessionStore`: the newest state snapshot (the trimmed view the
graph resumes from) and the thread's append-only message log (every message ever produced, once). Messages are
appended before the snapshot is written, so after a crash the log is never behind the snapshot; the snapshot
itself is a single atomic write, so a reader sees the previous checkpoint or the new one, never a mix.

Every checkpointer is `Checkpointer` over a store; the named classes only choose the store. Sync methods exist for
sync graphs and scripts, and refuse to run inside an event loop rather than block or nest it.
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar, overload

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from .._bridge import run_sync
from ..errors import ConfigurationError, StorageError
from ..messages import Message
from ..state import AgentState
from ..storage.base import SessionStore, check_id
from ..storage.memory import InMemoryStore
from ..storage.sqlite import SQLiteStore
from ..storage.url import open_store

logger = logging.getLogger(__name__)

S = TypeVar("S", bound=AgentState)
T = TypeVar("T")


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
        return run_sync(
            make,
            caller=f"{type(self).__name__}.{method.removeprefix('a')}()",
            instead=f"await checkpointer.{method}(...)",
        )

    def put(self, thread_id: str, state: AgentState, new_messages: Sequence[Message] = ()) -> None:
        self._sync("aput", lambda: self.aput(thread_id, state, new_messages))

    @overload
    def get_state(self, thread_id: str) -> AgentState | None: ...

    @overload
    def get_state(self, thread_id: str, state_cls: type[S]) -> S | None: ...

    def get_state(self, thread_id: str, state_cls: type[AgentState] = AgentState) -> AgentState | None:
        return self._sync("aget_state", lambda: self.aget_state(thread_id, state_cls))

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


class Checkpointer(BaseCheckpointer):
    """A checkpointer over any `SessionStore`; the store is closed with the checkpointer unless ``owns_store``
    is ``False`` (for a store shared with, say, the memory layer)."""

    def __init__(self, store: SessionStore, *, owns_store: bool = True) -> None:
        if not isinstance(store, SessionStore):
            raise ConfigurationError(f"Checkpointer needs a SessionStore, got {type(store).__name__}")
        self.store = store
        self._owns_store = owns_store

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
            snapshot = state.model_dump(mode="json")
        except PydanticSerializationError as exc:
            raise StorageError(
                f"thread {thread_id!r}: the {type(state).__name__} cannot be stored as JSON "
                f"(a custom field holds a non-JSON value): {exc}",
            ) from exc
        complete = [m for m in new_messages if not m.delta]
        if complete:
            added = await self.store.append_messages(thread_id, complete)
            logger.debug("thread %s: %d of %d messages new in the log", thread_id, added, len(complete))
        await self.store.put_state(thread_id, snapshot)

    async def aload_state(self, thread_id: str) -> dict[str, Any] | None:
        check_id(thread_id, "thread_id")
        return await self.store.get_state(thread_id)

    async def aget_messages(self, thread_id: str) -> list[Message]:
        check_id(thread_id, "thread_id")
        return await self.store.load_messages(thread_id)

    async def adelete(self, thread_id: str) -> None:
        check_id(thread_id, "thread_id")
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

    def __init__(self, path: str | os.PathLike[str], *, prefix: str = "wk") -> None:
        super().__init__(SQLiteStore(path, prefix=prefix))


class PostgresCheckpointer(Checkpointer):
    """Checkpoints in PostgreSQL; ``url`` defaults to ``$WINDOWKEEPER_POSTGRES_URL``."""

    def __init__(self, url: str | None = None, *, prefix: str = "wk") -> None:
        from ..storage.postgres import PostgresStore

        super().__init__(PostgresStore(url, prefix=prefix))


class RedisCheckpointer(Checkpointer):
    """Checkpoints in Redis; ``url`` defaults to ``$WINDOWKEEPER_REDIS_URL``."""

    def __init__(self, url: str | None = None, *, prefix: str = "wk") -> None:
        from ..storage.redis import RedisStore

        super().__init__(RedisStore(url, prefix=prefix))


__all__ = [
    "BaseCheckpointer",
    "Checkpointer",
    "InMemoryCheckpointer",
    "PostgresCheckpointer",
    "RedisCheckpointer",
    "SQLiteCheckpointer",
]
