"""Storage backends behind one `SessionStore` contract: in-memory, SQLite, PostgreSQL and Redis.

The server backends import their drivers lazily, so ``import windowkeeper.storage`` works without psycopg or
redis installed; asking for one of them then raises `MissingDependencyError` with the pip command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import ConflictError, Record, RecordNotFoundError, RecordUpdate, SessionStore
from .memory import InMemoryStore
from .sqlite import SQLiteStore
from .url import DEFAULT_POSTGRES_URL, DEFAULT_REDIS_URL, open_store, postgres_url, redis_url

if TYPE_CHECKING:
    from .postgres import PostgresStore
    from .redis import RedisStore


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":
        from .postgres import PostgresStore

        return PostgresStore
    if name == "RedisStore":
        from .redis import RedisStore

        return RedisStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_POSTGRES_URL",
    "DEFAULT_REDIS_URL",
    "ConflictError",
    "InMemoryStore",
    "PostgresStore",
    "Record",
    "RecordNotFoundError",
    "RecordUpdate",
    "RedisStore",
    "SQLiteStore",
    "SessionStore",
    "open_store",
    "postgres_url",
    "redis_url",
]
