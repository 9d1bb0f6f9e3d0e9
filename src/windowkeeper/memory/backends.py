"""Ready-made memories, one per storage backend; all behaviour lives in `BaseMemory`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..storage import InMemoryStore
from .base import BaseMemory

if TYPE_CHECKING:
    from ..storage import PostgresStore, RedisStore, SQLiteStore  # noqa: F401  (string bases below)


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
        prefix: str = "wk",
        **options: Any,
    ) -> None:
        from ..storage import SQLiteStore

        super().__init__(config, store=SQLiteStore(path, prefix=prefix), **options)
        self._owns_store = True


class PostgresMemory(BaseMemory["PostgresStore"]):
    """Memory in PostgreSQL (``url`` defaults to ``WINDOWKEEPER_POSTGRES_URL`` or the local server)."""

    def __init__(
        self,
        url: str | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        prefix: str = "wk",
        **options: Any,
    ) -> None:
        from ..storage import PostgresStore

        super().__init__(config, store=PostgresStore(url, prefix=prefix), **options)
        self._owns_store = True


class RedisMemory(BaseMemory["RedisStore"]):
    """Memory in Redis (``url`` defaults to ``WINDOWKEEPER_REDIS_URL`` or the local server)."""

    def __init__(
        self,
        url: str | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        prefix: str = "wk",
        **options: Any,
    ) -> None:
        from ..storage import RedisStore

        super().__init__(config, store=RedisStore(url, prefix=prefix), **options)
        self._owns_store = True


__all__ = ["InMemoryMemory", "PostgresMemory", "RedisMemory", "SQLiteMemory"]
