"""Pick a backend from a URL or a path, and the environment defaults for the server backends.

A ``prefix=`` query parameter selects the table/key prefix, so one string (an env var, a CLI flag, the argument
handed to a child process) fully identifies where a store's data lives.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, urlencode

from ..errors import ConfigurationError
from .base import SessionStore

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
POSTGRES_ENV = "WINDOWKEEPER_POSTGRES_URL"
REDIS_ENV = "WINDOWKEEPER_REDIS_URL"


def postgres_url() -> str:
    """``$WINDOWKEEPER_POSTGRES_URL`` or the local default."""
    return os.environ.get(POSTGRES_ENV) or DEFAULT_POSTGRES_URL


def redis_url() -> str:
    """``$WINDOWKEEPER_REDIS_URL`` or the local default."""
    return os.environ.get(REDIS_ENV) or DEFAULT_REDIS_URL


def split_prefix(url: str) -> tuple[str, str | None]:
    """Remove our ``prefix`` query parameter (drivers reject unknown ones) and return it separately.

    The query is cut off by hand rather than with ``urlunsplit``, which would collapse ``sqlite:////abs/path``.
    """
    base, sep, query = url.partition("?")
    if not sep:
        return url, None
    prefix = None
    kept = []
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name == "prefix":
            prefix = value
        else:
            kept.append((name, value))
    return (f"{base}?{urlencode(kept)}" if kept else base), prefix


def with_prefix(url: str, prefix: str) -> str:
    """``url`` with ``prefix=`` set, for handing a store's location to another process."""
    base, _ = split_prefix(url)
    return f"{base}{'&' if '?' in base else '?'}{urlencode([('prefix', prefix)])}"


def open_store(url_or_path: str | os.PathLike[str], *, prefix: str | None = None) -> SessionStore:
    """A store for ``memory://``, ``sqlite:///path`` (or a plain file path), ``postgresql://`` or ``redis://``.

    ``prefix`` (or a ``prefix=`` query parameter) isolates tables/keys of several stores sharing one server.
    """
    if isinstance(url_or_path, os.PathLike):
        url_or_path = os.fspath(url_or_path)
    if not isinstance(url_or_path, str) or not url_or_path:
        raise ConfigurationError(f"open_store needs a URL or a file path, got {url_or_path!r}")
    raw = url_or_path
    scheme = raw.split("://", 1)[0].lower() if "://" in raw else ""
    if scheme == "memory":
        from .memory import InMemoryStore

        return InMemoryStore()
    if scheme in ("", "sqlite"):
        from .sqlite import SQLiteStore

        if scheme:
            # SQLAlchemy's convention: sqlite:///rel.db, sqlite:////abs/path.db, sqlite:///:memory:
            base, query_prefix = split_prefix(raw)
            path = base.split("://", 1)[1].split("?", 1)[0]
            path = path[1:] if path.startswith("/") else path
            if not path:
                raise ConfigurationError(f"open_store: {raw!r} names no database file; use sqlite:///path/to/file.db")
        else:
            path, query_prefix = raw, None
        return SQLiteStore(path, prefix=prefix or query_prefix or "wk")
    if scheme in ("postgresql", "postgres"):
        from .postgres import PostgresStore

        base, query_prefix = split_prefix(raw)
        return PostgresStore(base, prefix=prefix or query_prefix or "wk")
    if scheme in ("redis", "rediss", "unix"):
        from .redis import RedisStore

        base, query_prefix = split_prefix(raw)
        return RedisStore(base, prefix=prefix or query_prefix or "wk")
    raise ConfigurationError(
        f"open_store: unknown scheme {scheme!r} in {raw!r}; use memory://, sqlite:///path, a file path, "
        "postgresql://... or redis://...",
    )


__all__ = [
    "DEFAULT_POSTGRES_URL",
    "DEFAULT_REDIS_URL",
    "POSTGRES_ENV",
    "REDIS_ENV",
    "open_store",
    "postgres_url",
    "redis_url",
    "split_prefix",
    "with_prefix",
]
