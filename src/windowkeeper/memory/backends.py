"""Ready-made memories, one per storage backend; all behaviour lives in `BaseMemory`."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ..storage import InMemoryStore, SessionStore
from .base import BaseMemory

if TYPE_CHECKING:
    from ..storage import PostgresStore, RedisStore, SQLiteStore  # noqa: F401  (string bases below)

_S = TypeVar("_S", bound=SessionStore)


class InMemoryMemory(BaseMemory[InMemoryStore]):
    """Process-local memory: fast, nothing survives the process."""

    def __init__(self, config: Mapping[str, Any] | None = None, **options: Any) -> None:
        options.setdefault("store", InMemoryStore())
        super().__init__(config, **options)
        self._owns_store = True


class SQLiteMemory(BaseMemory["SQLiteStore"]):
    """Memory in one SQLite file; several processes may share the file."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        config: Mapping[str, Any] | None = None,
        *,
        prefix: str | None = None,
        **options: Any,
    ) -> None:
        from ..storage import SQLiteStore

        super().__init__(config, store=SQLiteStore(path, prefix=prefix), **options)
        self._owns_store = True


class _ServerMemory(BaseMemory[_S], ABC):
    """Memory on a server store that it opens from ``url`` and ``prefix`` itself, and so also closes."""

    def __init__(
        self,
        url: str | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        prefix: str | None = None,
        **options: Any,
    ) -> None:
        # prefix=None: the URL's ?prefix=, else "wk" (the store parses the URL with its driver's parser)
        super().__init__(config, store=self._open_store(url, prefix), **options)
        self._owns_store = True

    @staticmethod
    @abstractmethod
    def _open_store(url: str | None, prefix: str | None) -> _S:
        """The backend's store; imported here so its driver is only needed by those who use it."""


class PostgresMemory(_ServerMemory["PostgresStore"]):
    """Memory in PostgreSQL (``url`` defaults to ``WINDOWKEEPER_POSTGRES_URL`` or the local server)."""

    @staticmethod
    def _open_store(url: str | None, prefix: str | None) -> PostgresStore:
        from ..storage import PostgresStore

        return PostgresStore(url, prefix=prefix)


class RedisMemory(_ServerMemory["RedisStore"]):
    """Memory in Redis (``url`` defaults to ``WINDOWKEEPER_REDIS_URL`` or the local server)."""

    @staticmethod
    def _open_store(url: str | None, prefix: str | None) -> RedisStore:
        from ..storage import RedisStore

        return RedisStore(url, prefix=prefix)


class TDAIMemory(BaseMemory[SessionStore]):
    """The durable, server-backed memory: the counterpart of the reference's hosted ``TDAIMemory`` service.

    Where the reference sends events to a hosted memory service, this one keeps them on a server you run, so
    every process of an agent (and every restart) shares one session history. ``url`` picks the server by its
    scheme: ``postgresql://...`` (the default: ``WINDOWKEEPER_POSTGRES_URL`` or the local server) or
    ``redis://...`` / ``rediss://...``. Behaviour is exactly `BaseMemory`'s; only where it lives differs.
    """

    def __init__(
        self,
        url: str | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        prefix: str | None = None,
        **options: Any,
    ) -> None:
        from ..errors import ConfigurationError
        from ..storage.url import mask_url, open_store, postgres_url, store_kind

        target = url if url is not None else postgres_url()
        if store_kind(target) not in ("postgres", "redis"):
            raise ConfigurationError(
                f"TDAIMemory keeps sessions on a server: url={mask_url(target)!r} must be postgresql://... (or a "
                "libpq 'host=... dbname=...' string) or redis://...; for a local file use SQLiteMemory(path), "
                "for a process-local memory InMemoryMemory()",
            )
        super().__init__(config, store=open_store(target, prefix=prefix), **options)
        self._owns_store = True
